// Sweep files (see sweep.hpp): loading and checking a sweep spec, and expanding it into points. Parsing only:
// nothing here runs a simulation (sweep.cpp does), so the fuzz build compiles this file without the simulator
// (tests/fuzz/fuzz_sweep.cpp).
#include "apps/lib/spec_files.hpp"
#include "apps/lib/sweep.hpp"
#include "core/common/file_io.hpp"
#include "core/common/json_strict.hpp"
#include "core/common/number_rule.hpp"
#include "core/common/suggest.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace tp::frontend {

using json = nlohmann::json;

namespace {

constexpr double MAX_POINT_TIMEOUT = 7 * 24 * 3600.0; ///< wall seconds one point may run

Error spec_error(const std::string& file, const std::string& field, const std::string& expected, const std::string& got)
{
  return Error::at(file, field, expected, got);
}

} // namespace

Result<SweepSpec> load_sweep(const std::string& path)
{
  auto text = io::read_file_capped(path, "sweep file", io::input_cap(io::SPEC_INPUT_CAP));
  if (!text.ok()) return text.error();
  return load_sweep_text(text.value(), path);
}

Result<SweepSpec> load_sweep_text(const std::string& text, const std::string& path)
{
  nlohmann::ordered_json j; // axes keep their file order
  try {
    j = json_strict::parse<nlohmann::ordered_json>(text);
  } catch (const json_strict::StrictError& e) { // a key given twice (an axis named twice), a number beyond a double
    return spec_error(path, e.path.empty() ? "(top level)" : e.path, e.expected, e.got);
  } catch (const std::exception& e) {
    return spec_error(path, "", "JSON", e.what());
  }
  if (!j.is_object()) return spec_error(path, "", "an object", j.type_name());
  auto string_field = [&](const char* key, const std::string& def) -> Result<std::string> {
    if (!j.contains(key)) return def;
    if (!j[key].is_string()) return spec_error(path, key, "a string", j[key].type_name());
    return j[key].get<std::string>();
  };
  SweepSpec s;
  s.file = path;
  for (const auto& [k, v] : j.items())
    if (k != "kind" && k != "name" && k != "description" && k != "base" && k != "axes" && k != "combine" &&
        k != "point_timeout" && k != "metrics" && k != "notes")
      return spec_error(path, k, "one of kind, name, description, base, axes, combine, point_timeout, metrics, notes",
                        "an unknown field");
  auto name = string_field("name", std::filesystem::path(path).stem().string());
  if (!name.ok()) return name.error();
  s.name = name.value();
  if (j.contains("kind") && j["kind"] != "sweep") return spec_error(path, "kind", "\"sweep\"", j["kind"].dump());
  if (!j.contains("base") || !j["base"].is_object()) return spec_error(path, "base", "a job object", "none");
  s.base = j["base"].dump();
  if (!j.contains("axes") || !j["axes"].is_object() || j["axes"].empty())
    return spec_error(path, "axes", "an object of field -> [values]", "none");
  for (const auto& [k, v] : j["axes"].items()) {
    if (!v.is_array() || v.empty()) return spec_error(path, "axes." + k, "a non-empty array of values", v.type_name());
    SweepAxis a;
    a.field = k;
    for (const auto& x : v)
      a.values.push_back(x.dump());
    s.axes.push_back(a);
  }
  auto combine = string_field("combine", "product");
  if (!combine.ok()) return combine.error();
  if (*combine != "product" && *combine != "zip")
    return spec_error(path, "combine", "\"product\" or \"zip\"", "\"" + *combine + "\"");
  s.zip = *combine == "zip";
  if (s.zip)
    for (const auto& a : s.axes)
      if (a.values.size() != s.axes[0].values.size())
        return spec_error(path, "axes." + a.field, std::to_string(s.axes[0].values.size()) + " values (zip)",
                          std::to_string(a.values.size()));
  // The number of points, bounded before anything is expanded (a product of a few long axes explodes).
  uint64_t points = s.zip ? s.axes[0].values.size() : 1;
  if (!s.zip)
    for (const auto& a : s.axes) {
      points *= a.values.size();
      if (points > MAX_SWEEP_POINTS) break;
    }
  if (points > MAX_SWEEP_POINTS)
    return spec_error(path, "axes", "at most " + std::to_string(MAX_SWEEP_POINTS) + " points",
                      "more (split the sweep)");
  if (j.contains("point_timeout")) {
    // the number rule (core/common/number_rule.hpp): finite, positive, at most a week of wall time per point
    if (!j["point_timeout"].is_number() || !number_ok(j["point_timeout"].get<double>(), 0, MAX_POINT_TIMEOUT) ||
        j["point_timeout"].get<double>() == 0)
      return spec_error(path, "point_timeout", range_text(0, MAX_POINT_TIMEOUT, "seconds > 0"),
                        j["point_timeout"].dump());
    s.point_timeout = j["point_timeout"];
  }
  if (j.contains("metrics")) {
    if (!j["metrics"].is_array()) return spec_error(path, "metrics", "an array of metric names", "not an array");
    for (const auto& m : j["metrics"])
      s.keep.push_back(m.is_string() ? m.get<std::string>() : m.dump());
  }
  // What decides the rows: a resume must not mix rows of another spec (description, notes, point_timeout do not).
  nlohmann::ordered_json decides = {{"base", j["base"]}, {"axes", j["axes"]}, {"combine", *combine}};
  if (j.contains("metrics")) decides["metrics"] = j["metrics"];
  s.hash = text_hash(decides.dump());
  // Every point must be a valid job: check them all now, not after hours of sweeping.
  std::set<std::string> reported; // every metric some point can report
  for (const auto& p : sweep_points(s)) {
    auto job = parse_job_text(p.job, path, "point " + std::to_string(p.index));
    if (!job.ok()) return job.error();
    if (job->kind == JobSpec::Kind::TRAINING && !job->trace_file.empty())
      return spec_error(path, "base.trace", "no trace in a sweep", "\"" + job->trace_file + "\"");
    for (auto& m : metric_names(job.value()))
      reported.insert(std::move(m));
  }
  // A misspelt metric would keep nothing of what the user asked for, silently.
  const std::vector<std::string> known(reported.begin(), reported.end());
  for (size_t i = 0; i < s.keep.size(); ++i)
    if (!reported.count(s.keep[i]))
      return spec_error(path, "metrics[" + std::to_string(i) + "]",
                        "a metric the sweep's jobs report: " + one_of_names(s.keep[i], known, 40),
                        unknown_name(s.keep[i], known));
  return s;
}

std::vector<SweepPoint> sweep_points(const SweepSpec& spec)
{
  std::vector<SweepPoint> out;
  size_t n = spec.zip ? spec.axes[0].values.size() : 1;
  if (!spec.zip)
    for (const auto& a : spec.axes)
      n *= a.values.size();
  const json base = json::parse(spec.base);
  for (size_t i = 0; i < n; ++i) {
    SweepPoint p;
    p.index = i;
    json job = base;
    size_t rest = i;
    std::vector<size_t> pick(spec.axes.size());
    for (size_t k = spec.axes.size(); k-- > 0;) {
      const size_t m = spec.axes[k].values.size();
      pick[k] = spec.zip ? i : rest % m;
      if (!spec.zip) rest /= m;
    }
    for (size_t k = 0; k < spec.axes.size(); ++k) {
      const std::string& v = spec.axes[k].values[pick[k]];
      p.params.emplace_back(spec.axes[k].field, v);
      const json value = json::parse(v);
      if (value.is_object()) // an axis of objects sets several fields at once (workers and ps together)
        for (const auto& [f, x] : value.items())
          job[f] = x;
      else
        job[spec.axes[k].field] = value;
    }
    p.job = job.dump();
    out.push_back(std::move(p));
  }
  return out;
}

} // namespace tp::frontend
