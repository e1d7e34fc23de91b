// Capacity questions over sweep rows (see plan.hpp).
#include "apps/lib/plan.hpp"
#include "core/common/file_io.hpp"
#include "core/common/suggest.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

namespace tp::frontend {

using json = nlohmann::json;

std::string PlanRow::param(const std::string& k) const
{
  for (const auto& [f, v] : params)
    if (f == k) return v;
  return "";
}

Result<std::vector<PlanRow>> read_plan_rows(const std::string& path)
{
  auto text = io::read_file_capped(path, "rows file (tensorpath sweep --out)", io::input_cap(io::ROWS_INPUT_CAP));
  if (!text.ok()) return text.error();
  std::istringstream f(text.value());
  std::vector<PlanRow> rows;
  std::string line;
  size_t n = 0;
  while (std::getline(f, line)) {
    ++n;
    if (line.empty()) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const std::exception& e) {
      return Error::at(path, "line " + std::to_string(n), "a JSON row", e.what());
    }
    if (!j.is_object() || !j.contains("point") || !j["point"].is_number_unsigned())
      return Error::at(path, "line " + std::to_string(n), "a row with \"point\"", line.substr(0, 60));
    PlanRow r;
    r.point = j["point"];
    if (j.contains("params") && j["params"].is_object())
      for (const auto& [k, v] : j["params"].items()) {
        if (v.is_object()) // an axis of objects: its fields are the params
          for (const auto& [k2, v2] : v.items())
            r.params.emplace_back(k2, v2.is_string() ? v2.get<std::string>() : v2.dump());
        else
          r.params.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
      }
    if (j.contains("metrics") && j["metrics"].is_object())
      for (const auto& [k, v] : j["metrics"].items())
        if (v.is_number()) r.metrics[k] = v.get<double>();
    r.error = j.value("error", "");
    if (j.contains("bottleneck") && j["bottleneck"].is_string()) r.bottleneck = j["bottleneck"].get<std::string>();
    rows.push_back(std::move(r));
  }
  return rows;
}

Status check_query(const std::vector<PlanRow>& rows, const PlanQuery& q, const std::string& rows_file)
{
  std::set<std::string> metrics, params;
  std::map<std::string, std::set<std::string>> values;
  for (const auto& r : rows) {
    for (const auto& [k, v] : r.metrics)
      metrics.insert(k);
    for (const auto& [k, v] : r.params) {
      params.insert(k);
      values[k].insert(v);
    }
  }
  auto list = [](const std::set<std::string>& s) { return std::vector<std::string>(s.begin(), s.end()); };
  if (metrics.empty())
    return Error::at(rows_file, "", "rows with metrics to plan over", "none (every point failed, or no rows)");
  if (!metrics.count(q.metric))
    return Error::at(rows_file, "--target", "a metric of the rows: " + one_of_names(q.metric, list(metrics), 40),
                     unknown_name(q.metric, list(metrics)));
  for (const auto& [field, value] : q.where) {
    if (!params.count(field))
      return Error::at(rows_file, "--where", "a param of the rows: " + one_of_names(field, list(params)),
                       unknown_name(field, list(params)));
    const auto& held = values[field];
    if (!held.count(value))
      return Error::at(rows_file, "--where " + field, "a value the rows hold: " + one_of_names(value, list(held)),
                       unknown_name(value, list(held)));
  }
  if (q.cost != "nic_line_rate" && !metrics.count(q.cost) && !params.count(q.cost)) {
    std::set<std::string> both = metrics;
    both.insert(params.begin(), params.end());
    return Error::at(rows_file, "--cost", "nic_line_rate, a param or a metric of the rows",
                     unknown_name(q.cost, list(both)));
  }
  return ok_status();
}

Status parse_target(const std::string& text, PlanQuery& q)
{
  for (const char* op : {">=", "<=", ">", "<"}) {
    const auto at = text.find(op);
    if (at == std::string::npos || at == 0) continue;
    const std::string value = text.substr(at + std::string(op).size());
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end || !std::isfinite(v)) break;
    q.metric = text.substr(0, at);
    q.op = op;
    q.value = v;
    return ok_status();
  }
  return Error::at("", "--target", "METRIC>=VALUE (or <=, >, <), e.g. scaling_efficiency>=0.9", "\"" + text + "\"");
}

namespace {

bool meets(double x, const PlanQuery& q)
{
  if (q.op == ">=") return x >= q.value;
  if (q.op == "<=") return x <= q.value;
  if (q.op == ">") return x > q.value;
  return x < q.value;
}

/// Higher is better for >= and >, lower for <= and <.
bool better(double a, double b, const PlanQuery& q)
{
  return (q.op[0] == '>') ? a > b : a < b;
}

std::string bottleneck_of(const PlanRow& r)
{
  static const std::pair<const char*, const char*> parts[] = {
      {"path_compute_ms", "compute"},           {"path_copy_ms", "host copies"},
      {"path_registration_ms", "registration"}, {"path_pcie_ms", "PCIe"},
      {"path_network_ms", "network"},           {"path_aggregate_apply_ms", "PS sums/updates"},
      {"path_cpu_ms", "gRPC threads (CPU)"},    {"path_waiting_ms", "waiting"}};
  std::string best;
  double most = -1, total = 0;
  for (const auto& [k, name] : parts) {
    auto it = r.metrics.find(k);
    if (it == r.metrics.end()) continue;
    total += it->second;
    if (it->second > most) most = it->second, best = name;
  }
  if (best.empty() || total <= 0) return "";
  return fmt::format("{} ({:.0f} %)", best, 100 * most / total);
}

} // namespace

std::vector<PlanOption> rank_options(const std::vector<PlanRow>& rows, const PlanQuery& q,
                                     const std::function<double(const PlanRow&)>& cost_of)
{
  std::vector<PlanOption> out;
  for (const auto& r : rows) {
    bool pass = r.error.empty() && r.metrics.count(q.metric);
    for (const auto& [k, v] : q.where)
      pass = pass && r.param(k) == v;
    if (!pass) continue;
    PlanOption o;
    o.row = r;
    o.cost = cost_of(r);
    o.meets = meets(r.metrics.at(q.metric), q);
    o.bottleneck = bottleneck_of(r);
    // the row's own account names the link or device behind its largest part (only where communication shows)
    if (!r.bottleneck.empty()) o.bottleneck += (o.bottleneck.empty() ? "" : "; ") + r.bottleneck;
    out.push_back(std::move(o));
  }
  std::stable_sort(out.begin(), out.end(), [&](const PlanOption& a, const PlanOption& b) {
    if (a.meets != b.meets) return a.meets;
    const double ma = a.row.metrics.at(q.metric), mb = b.row.metrics.at(q.metric);
    if (a.meets && a.cost != b.cost) return a.cost < b.cost;
    if (ma != mb) return better(ma, mb, q);
    return a.row.point < b.row.point;
  });
  return out;
}

std::string plan_table(const std::vector<PlanOption>& options, const PlanQuery& q, size_t top)
{
  std::string s;
  size_t meeting = 0;
  for (const auto& o : options)
    meeting += o.meets;
  s += fmt::format("{} option(s) considered, {} reach {} {} {:g}", options.size(), meeting, q.metric, q.op, q.value);
  s += meeting ? fmt::format(", cheapest first by {}:\n\n", q.cost) : std::string(": none; the closest:\n\n");
  if (options.empty()) return s;
  std::vector<std::string> keys;
  for (const auto& [k, v] : options[0].row.params)
    keys.push_back(k);
  std::vector<size_t> width;
  for (const auto& k : keys) {
    size_t w = k.size();
    for (const auto& o : options)
      w = std::max(w, o.row.param(k).size());
    width.push_back(std::min<size_t>(w, 28));
  }
  std::string head = fmt::format("{:>4}  ", "rank");
  for (size_t i = 0; i < keys.size(); ++i)
    head += fmt::format("{:<{}.{}} ", keys[i], width[i], width[i]);
  head += fmt::format("{:>14} {:>19} {:>10}  {}\n", q.cost.substr(0, 14), q.metric.substr(0, 19), "step ms",
                      "bottleneck (share of the step)");
  s += head;
  size_t shown = 0;
  for (const auto& o : options) {
    if (shown == top) break;
    if (meeting && !o.meets) break;
    std::string line = fmt::format("{:>4}  ", ++shown);
    for (size_t i = 0; i < keys.size(); ++i)
      line += fmt::format("{:<{}.{}} ", o.row.param(keys[i]), width[i], width[i]);
    const auto st = o.row.metrics.find("step_ms");
    line += fmt::format("{:>14.4g} {:>19.4g} {:>10.1f}  {}\n", o.cost, o.row.metrics.at(q.metric),
                        st == o.row.metrics.end() ? NAN : st->second, o.bottleneck);
    s += line;
  }
  return s;
}

} // namespace tp::frontend
