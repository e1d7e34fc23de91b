// Workload construction (see workload.hpp).
#include "models/workload/workload.hpp"

#include "models/json_reader.hpp"
#include "models/workload/layer_profile.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

namespace fs = std::filesystem;

namespace tp::models {

double Workload::forward_seconds() const
{
  double s = 0;
  for (const auto& l : layers)
    s += l.forward_seconds;
  return s;
}

double Workload::backward_seconds() const
{
  double s = 0;
  for (const auto& l : layers)
    s += l.backward_seconds;
  return s;
}

uint64_t Workload::parameter_bytes(bool trainable_only) const
{
  uint64_t b = 0;
  for (const auto& l : layers)
    for (const auto& v : l.variables)
      if (v.trainable || !trainable_only) b += v.bytes();
  return b;
}

size_t Workload::variable_count() const
{
  size_t n = 0;
  for (const auto& l : layers)
    n += l.variables.size();
  return n;
}

training::TrainingModel to_training_model(const Workload& w)
{
  training::TrainingModel m;
  m.name = w.model;
  m.batch = w.batch;
  for (const auto& l : w.layers) {
    training::ModelLayer ml;
    ml.name = l.name;
    ml.forward_seconds = l.forward_seconds;
    ml.backward_seconds = l.backward_seconds;
    for (const auto& v : l.variables)
      ml.variables.push_back({v.name, v.bytes(), v.trainable});
    m.layers.push_back(std::move(ml));
  }
  return m;
}

const char* const PRECISIONS = "fp32, tf32 or amp";

bool known_precision(const std::string& word)
{
  return word == "fp32" || word == "tf32" || word == "amp";
}

std::string default_workloads_dir()
{
  if (const char* env = std::getenv("TENSORPATH_WORKLOADS_DIR")) return env;
  return TENSORPATH_DEFAULT_WORKLOADS_DIR;
}

std::string workload_family(const std::string& model)
{
  const auto dash = model.find("-keras");
  return dash == std::string::npos ? model : model.substr(0, dash);
}

namespace {

/// PipeDream profile file of an architecture family, or "" when none was measured.
std::string profile_file(const std::string& family)
{
  static const std::map<std::string, std::string> files = {{"vgg16", "vgg16"},
                                                           {"alexnet", "alexnet"},
                                                           {"resnet50", "resnet50"},
                                                           {"resnet101", "resnet101"},
                                                           {"inception3", "inception_v3"}};
  auto it = files.find(family);
  return it == files.end() ? "" : it->second + ".graph.txt";
}

/// The measured family a family without throughput measurements is scaled from.
std::string reference_family(const std::string& family)
{
  if (family == "resnet101" || family == "resnet152" || family == "googlenet") return "resnet50";
  return "";
}

std::string short_module(const std::string& module)
{
  const auto paren = module.find('(');
  return paren == std::string::npos ? module : module.substr(0, paren);
}

} // namespace

WorkloadLibrary::WorkloadLibrary(std::string dir, Catalog catalog) : dir_(std::move(dir)), catalog_(std::move(catalog))
{
  using namespace json_input;
  const fs::path tdir = fs::path(dir_) / "throughput";
  std::error_code ec;
  if (!fs::is_directory(tdir, ec)) {
    load_status_ = Error::at(tdir.string(), "", "a directory of training_throughput files", "not found");
    return;
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(tdir, ec))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  try {
    for (const auto& f : files) {
      const json j = read_file(f.string());
      Object o(j, f.string(), "");
      const std::string kind = o.str("kind");
      if (kind != "training_throughput") fail(f.string(), "kind", "\"training_throughput\"", "\"" + kind + "\"");
      const std::string table = o.str("name", f.stem().string());
      const json& list = o.get("entries");
      if (!list.is_array()) fail(f.string(), "entries", "a list", std::string(list.type_name()));
      for (size_t i = 0; i < list.size(); ++i) {
        Object e(list[i], f.string(), "entries[" + std::to_string(i) + "]");
        ThroughputEntry t;
        t.gpu = e.str("gpu");
        if (auto g = catalog_.gpu(t.gpu); !g.ok())
          fail(f.string(), e.field("gpu"), "a GPU profile name", "\"" + t.gpu + "\"");
        t.model = e.str("model");
        if (!architecture(t.model).ok())
          fail(f.string(), e.field("model"), "an architecture name", "\"" + t.model + "\"");
        t.precision = e.str("precision", "fp32");
        if (!known_precision(t.precision))
          fail(f.string(), e.field("precision"), PRECISIONS, "\"" + t.precision + "\"");
        t.batch = int(e.integer("batch", 1, 1 << 20));
        t.images_per_second = quantity(e, "images_per_second", Dimension::IMAGE_RATE, std::nullopt, 1e-9);
        t.source = e.get("images_per_second").value("source", "");
        t.table = table;
        e.str("note", "");
        e.finish();
        entries_.push_back(t);
      }
      o.finish();
    }
  } catch (const LoadError& le) {
    load_status_ = le.error;
  }
}

Result<double> WorkloadLibrary::measured_seconds(const std::string& family, const std::string& gpu, int batch,
                                                 std::string* how, const std::string& precision) const
{
  // (1) this GPU: exact batch, else images/s interpolated between measured batches (constant outside them).
  std::map<int, std::vector<double>> by_batch;
  std::map<int, std::string> table_of;
  for (const auto& e : entries_)
    if (e.gpu == gpu && e.model == family && e.precision == precision) {
      by_batch[e.batch].push_back(e.images_per_second);
      table_of[e.batch] = e.table;
    }
  const std::string at = precision == "fp32" ? "" : " " + precision;
  if (!by_batch.empty()) {
    std::map<int, double> ips;
    for (const auto& [b, v] : by_batch) {
      double s = 0;
      for (double x : v)
        s += x;
      ips[b] = s / double(v.size());
    }
    double r = 0;
    if (ips.count(batch)) {
      r = ips[batch];
      *how = fmt::format("{} at batch {} on {}{}: {:.4g} img/s measured ({}, {} run(s))", family, batch, gpu, at, r,
                         table_of[batch], by_batch[batch].size());
    } else {
      auto hi = ips.lower_bound(batch);
      if (hi == ips.begin()) {
        r = hi->second;
        *how = fmt::format("{} on {}{}: {:.4g} img/s measured at batch {}, taken as constant down to batch {}", family,
                           gpu, at, r, hi->first, batch);
      } else if (hi == ips.end()) {
        auto lo = std::prev(hi);
        r = lo->second;
        *how = fmt::format("{} on {}{}: {:.4g} img/s measured at batch {}, taken as constant up to batch {}", family,
                           gpu, at, r, lo->first, batch);
      } else {
        auto lo = std::prev(hi);
        const double f = double(batch - lo->first) / double(hi->first - lo->first);
        r = lo->second + f * (hi->second - lo->second);
        *how = fmt::format("{} on {}{}: {:.4g} img/s interpolated between batch {} and {}", family, gpu, at, r,
                           lo->first, hi->first);
      }
    }
    return double(batch) / r;
  }
  // A precision other than FP32 is not scaled from another GPU: tensor-core rates are not its FP32 peak.
  if (precision != "fp32") {
    std::set<std::string> measured;
    for (const auto& e : entries_)
      if (e.model == family) measured.insert(e.gpu + " " + e.precision);
    std::string list;
    for (const auto& m : measured)
      list += (list.empty() ? "" : ", ") + m;
    return Error::at(
        "", "precision",
        fmt::format("a precision measured for {} on {} (measured: {})", family, gpu, list.empty() ? "none" : list),
        "\"" + precision + "\"");
  }
  // (2) another GPU that measured this family, the one with the closest FP32 peak, scaled by the peak ratio.
  auto target = catalog_.gpu(gpu);
  if (!target.ok()) return target.error();
  std::string best;
  double best_peak = 0, best_dist = 1e300;
  for (const auto& e : entries_) {
    if (e.model != family || e.gpu == gpu || e.precision != "fp32") continue;
    auto g = catalog_.gpu(e.gpu);
    if (!g.ok()) continue;
    const double dist = std::fabs(std::log(g->fp32_peak / target->fp32_peak));
    if (dist < best_dist) {
      best_dist = dist;
      best = e.gpu;
      best_peak = g->fp32_peak;
    }
  }
  if (best.empty())
    return Error::at("", "model", "an architecture with a measured single-GPU throughput", "\"" + family + "\"");
  std::string inner;
  auto t = measured_seconds(family, best, batch, &inner, precision);
  if (!t.ok()) return t.error();
  *how = fmt::format("{}; scaled to {} by FP32 peak {:.3g}/{:.3g} TFLOP/s (derived)", inner, gpu, best_peak * 1e-12,
                     target->fp32_peak * 1e-12);
  return t.value() * best_peak / target->fp32_peak;
}

Result<double> WorkloadLibrary::profile_or_flops_cost(const std::string& model, bool* from_profile) const
{
  const std::string file = profile_file(workload_family(model));
  if (!file.empty()) {
    auto p = parse_pipedream_profile((fs::path(dir_) / "pipedream" / file).string());
    if (!p.ok()) return p.error();
    *from_profile = true;
    return p->compute_seconds();
  }
  auto a = architecture(model);
  if (!a.ok()) return a.error();
  *from_profile = false;
  return a->forward_flops();
}

Result<double> WorkloadLibrary::step_compute_seconds(const std::string& model, const std::string& gpu, int batch,
                                                     std::string* provenance, const std::string& precision) const
{
  if (!load_status_.ok()) return load_status_.error();
  if (batch < 1) return Error::at("", "batch", "a batch size >= 1", std::to_string(batch));
  if (auto a = architecture(model); !a.ok()) return a.error();
  std::string how;
  const std::string family = workload_family(model);
  auto t = measured_seconds(family, gpu, batch, &how, precision);
  if (!t.ok()) {
    const std::string ref = reference_family(family);
    if (ref.empty()) return t.error();
    auto tr = measured_seconds(ref, gpu, batch, &how, precision);
    if (!tr.ok()) return tr.error();
    bool prof_m = false, prof_r = false;
    auto cm = profile_or_flops_cost(model, &prof_m);
    auto cr = profile_or_flops_cost(ref, &prof_r);
    if (!cm.ok()) return cm.error();
    if (!cr.ok()) return cr.error();
    double ratio = 0;
    std::string basis;
    if (prof_m && prof_r) {
      ratio = cm.value() / cr.value();
      basis = "measured per-layer profiles";
    } else {
      auto am = architecture(model), ar = architecture(ref);
      ratio = am->forward_flops() / ar->forward_flops();
      basis = "forward FLOPs";
    }
    how = fmt::format("{} not measured: {} x {:.3f} ({} / {} by {}) (derived)", family, how, ratio, family, ref, basis);
    t = tr.value() * ratio;
  }
  if (provenance) *provenance = how;
  return t;
}

Result<Workload> WorkloadLibrary::make(const std::string& model, const std::string& gpu, int batch,
                                       const std::string& precision) const
{
  auto arch = architecture(model);
  if (!arch.ok()) return arch.error();
  std::string how;
  auto total = step_compute_seconds(model, gpu, batch, &how, precision);
  if (!total.ok()) return total.error();
  Workload w;
  w.model = model;
  w.gpu = gpu;
  w.batch = batch;
  const std::string file = profile_file(workload_family(model));
  if (file.empty()) {
    // No measured profile: split by forward FLOPs, backward = 2 x forward.
    const double flops = arch->forward_flops();
    for (const auto& l : arch->layers) {
      WorkloadLayer wl;
      wl.name = l.name;
      wl.forward_seconds = total.value() / 3.0 * l.forward_flops / flops;
      wl.backward_seconds = 2.0 * wl.forward_seconds;
      wl.variables = l.variables;
      w.layers.push_back(std::move(wl));
    }
    w.provenance = how + "; per-layer split by forward FLOPs with backward = 2 x forward (no measured profile)";
    return w;
  }
  auto prof = parse_pipedream_profile((fs::path(dir_) / "pipedream" / file).string());
  if (!prof.ok()) return prof.error();
  const double scale = total.value() / prof->compute_seconds();
  const double prof_params = prof->parameter_bytes();
  if (prof_params <= 0) return Error::at(prof->file, "parameter_size", "at least one layer with parameters", "none");
  std::vector<double> layer_end; // normalized cumulative parameter bytes at the end of each profile layer
  double cum = 0;
  for (const auto& l : prof->layers) {
    cum += l.parameter_bytes;
    layer_end.push_back(cum / prof_params);
    WorkloadLayer wl;
    wl.name = l.id + " " + short_module(l.module);
    wl.forward_seconds = l.forward_seconds * scale;
    wl.backward_seconds = l.backward_seconds * scale;
    w.layers.push_back(std::move(wl));
  }
  // Each TF variable goes to the profile layer whose share of the parameters covers the variable's midpoint
  // (exact where the two definitions agree layer by layer, e.g. VGG16).
  const double arch_bytes = double(arch->bytes());
  double vcum = 0;
  size_t li = 0;
  for (const auto& al : arch->layers)
    for (const auto& v : al.variables) {
      const double mid = (vcum + double(v.bytes()) / 2) / arch_bytes;
      vcum += double(v.bytes());
      while (li + 1 < layer_end.size() && (layer_end[li] < mid || prof->layers[li].parameter_bytes <= 0))
        ++li;
      w.layers[li].variables.push_back(v);
    }
  w.provenance = how + fmt::format("; per-layer split from the measured profile {} (x{:.3f})", file, scale);
  return w;
}

} // namespace tp::models
