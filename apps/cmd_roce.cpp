// `tensorpath roce`: RoCE congestion (PFC, ECN, DCQCN) on the small fabrics of issue 19 (incast, a victim flow
// behind a paused port, two flows converging, long-lived flows), on the network models that can run them side by
// side; with --fixed-point, the DCQCN fluid model's fixed point beside the longflows run; with --reference, the roce
// model against the packet-level ns-3 rows of validation/ns3/roce_reference (docs/network-models.md).
#include "apps/commands.hpp"
#include "apps/lib/json_rows.hpp"
#include "core/common/median.hpp"
#include "models/catalog.hpp"
#include "models/congestion/dcqcn_fluid.hpp"
#include "models/congestion/roce_fabric.hpp"
#include "models/json_reader.hpp"
#include "models/network_models.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace tp::cli {

namespace {

using nlohmann::json;

struct Row {
  std::string model;
  models::RoceConfig config;
  models::RoceResult result;
  double cpu_s = 0;
};

Result<Row> run_model(const std::string& name, const models::RoceConfig& c)
{
  Row r;
  r.model = name;
  r.config = c;
  const auto t0 = std::chrono::steady_clock::now();
  auto res = models::run_roce_model(name, c);
  r.cpu_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!res.ok()) return res.error();
  r.result = res.value();
  return r;
}

json row_json(const Row& row)
{
  const auto& c = row.config;
  const auto& r = row.result;
  json pauses = json::object();
  for (const auto& p : r.pauses)
    pauses[p.priority == 0 ? p.port : p.port + " priority " + std::to_string(p.priority)] = {{"frames", p.frames},
                                                                                             {"paused_s", p.paused}};
  json flows = json::array();
  for (const auto& f : r.flows)
    flows.push_back({{"src", f.src},
                     {"dst", f.dst},
                     {"bytes", f.bytes},
                     {"start_s", f.start},
                     {"completion_s", f.completion},
                     {"mean_gbps", f.mean_bps * 1e-9},
                     {"window_gbps", f.window_bps * 1e-9},
                     {"final_rate_gbps", f.final_rate * 1e-9}});
  return {{"model", row.model},
          {"scenario", models::roce_scenario_name(c.scenario)},
          {"senders", c.senders},
          {"local", c.local},
          {"victim_priority", c.victim_priority},
          {"size", c.size},
          {"rate_gbps", c.rate * 1e-9},
          {"delay_us", c.delay * 1e6},
          {"buffer", c.buffer},
          {"dcqcn", c.dcqcn.enabled},
          {"ecn", c.ecn.enabled},
          {"pfc", c.pfc.enabled},
          {"kmin", c.ecn.kmin},
          {"kmax", c.ecn.kmax},
          {"pmax", c.ecn.pmax},
          {"t_alpha_us", c.dcqcn.t_alpha * 1e6},
          {"t_dec_us", c.dcqcn.t_dec * 1e6},
          {"t_inc_us", c.dcqcn.t_inc * 1e6},
          {"g", c.dcqcn.g},
          {"fast_recovery", c.dcqcn.fast_recovery},
          {"ai_mbps", c.dcqcn.ai * 1e-6},
          {"hai_mbps", c.dcqcn.hai * 1e-6},
          {"min_rate_gbps", c.dcqcn.min_rate * 1e-9},
          {"cnp_interval_us", c.dcqcn.cnp_interval * 1e6},
          {"byte_counter", c.dcqcn.byte_counter},
          {"seed", c.seed},
          {"jitter_ns", c.start_jitter * 1e9},
          {"completion_s", r.completion},
          {"first_s", r.first},
          {"goodput_gbps", r.goodput_bps * 1e-9},
          {"hot_port", r.hot_port},
          {"peak_queue_bytes", r.peak_queue},
          {"mean_queue_bytes", r.mean_queue},
          {"marked", r.marked},
          {"cnps", r.cnps},
          {"drops", r.drops},
          {"pauses", pauses},
          {"victim_completion_s", r.victim_completion},
          {"victim_gbps", r.victim_bps * 1e-9},
          {"window_rate_gbps", r.window_bps * 1e-9},
          {"window_queue_bytes", c.scenario == models::RoceScenario::LONGFLOWS ? r.mean_queue : 0.0},
          {"algbw_gbps", r.algbw_bps * 1e-9},
          {"busbw_gbps", r.busbw_bps * 1e-9},
          {"leaves", c.leaves},
          {"oversubscription", c.oversubscription},
          {"placement", c.interleaved ? "interleaved" : "leaf-major"},
          {"flows", flows},
          {"steps", r.steps},
          {"cpu_s", row.cpu_s}};
}

void print_head(const models::RoceConfig& c)
{
  const std::string buffer = models::roce_buffer_text(c);
  std::printf("RoCE %s: every link %.4g Gb/s, %.4g us; %s; PFC %s, ECN %s (Kmin %llu, Kmax "
              "%llu, Pmax %.3g), DCQCN %s (timers %.4g/%.4g/%.4g us, F %d, AI %.4g Mb/s, HAI %.4g Mb/s, CNP "
              "interval %.4g us, byte counter %llu)\n",
              models::roce_scenario_name(c.scenario), c.rate * 1e-9, c.delay * 1e6, buffer.c_str(),
              c.pfc.enabled ? "on" : "off", c.ecn.enabled ? "on" : "off", (unsigned long long)c.ecn.kmin,
              (unsigned long long)c.ecn.kmax, c.ecn.pmax, c.dcqcn.enabled ? "on" : "off", c.dcqcn.t_alpha * 1e6,
              c.dcqcn.t_dec * 1e6, c.dcqcn.t_inc * 1e6, c.dcqcn.fast_recovery, c.dcqcn.ai * 1e-6, c.dcqcn.hai * 1e-6,
              c.dcqcn.cnp_interval * 1e6, (unsigned long long)c.dcqcn.byte_counter);
  std::printf(" %-6s %7s %11s %14s %13s %12s %12s %7s %11s %10s %11s %9s\n", "model", "senders", "bytes each",
              c.scenario == models::RoceScenario::LONGFLOWS ? "window[ms]" : "completion[ms]",
              c.scenario == models::RoceScenario::LONGFLOWS   ? "flow[Gb/s]"
              : c.scenario == models::RoceScenario::ALLREDUCE ? "busbw[Gb/s]"
                                                              : "goodput[Gb/s]",
              "peak q[KB]", "mean q[KB]", "pauses", "paused[us]", "CNPs",
              c.scenario == models::RoceScenario::VICTIM ? "victim[Gb/s]" : "", "cpu[ms]");
}

void print_row(const Row& row)
{
  const auto& c = row.config;
  const auto& r = row.result;
  const bool longflows = c.scenario == models::RoceScenario::LONGFLOWS;
  const bool flow_model = row.model == "flow";
  char victim[32] = "";
  if (c.scenario == models::RoceScenario::VICTIM) std::snprintf(victim, sizeof victim, "%.3f", r.victim_bps * 1e-9);
  std::printf(" %-6s %7d %11llu %14.4f %13.3f %12s %12s %7s %11s %10s %11s %9.2f\n", row.model.c_str(), c.senders,
              (unsigned long long)c.size, (longflows ? c.duration - c.warmup : r.completion) * 1e3,
              (longflows ? r.window_bps : r.goodput_bps) * 1e-9,
              flow_model ? "-" : std::to_string(int(std::lround(r.peak_queue / 1e3))).c_str(),
              flow_model ? "-" : std::to_string(int(std::lround(r.mean_queue / 1e3))).c_str(),
              flow_model ? "-" : std::to_string(int(r.pause_frames())).c_str(),
              flow_model ? "-" : std::to_string(int(std::lround(r.longest_pause() * 1e6))).c_str(),
              flow_model ? "-" : std::to_string(int(std::lround(r.cnps))).c_str(), victim, row.cpu_s * 1e3);
}

/// The DCQCN fluid model's input for a longflows configuration (the same timers, RED and increase step).
models::DcqcnFluidInput fluid_input(const models::RoceConfig& c)
{
  models::DcqcnFluidInput in;
  in.flows = c.senders;
  in.capacity = c.rate;
  in.frame_bytes = c.frame_bytes;
  // The fluid model's CNP window: the receiver's CNP interval where it has one, else the rate-decrease period
  // (the Mellanox variant decreases at most once per period, on any CNP of the period).
  in.tau = std::max(c.dcqcn.cnp_interval, c.dcqcn.t_dec);
  in.tau_alpha = c.dcqcn.t_alpha;
  in.timer = c.dcqcn.t_inc;
  in.byte_counter = double(c.dcqcn.byte_counter);
  in.fast_recovery = c.dcqcn.fast_recovery;
  in.ai = c.dcqcn.ai;
  in.kmin = double(c.ecn.kmin);
  in.kmax = double(c.ecn.kmax);
  in.pmax = c.ecn.pmax;
  return in;
}

/// One row of roce_reference's output: its configuration and ns-3's figures (a LoadError names the field).
struct ReferenceRow {
  models::RoceConfig config;
  double completion = -1, victim_completion = -1, window_bps = 0, mean_queue = 0, peak_queue = 0, pause_frames = 0,
         paused = 0, cnps = 0, wall = 0;
};

bool flag_of(json_input::Object& o, const std::string& key)
{
  const json& v = o.get(key);
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer() && (v.get<long>() == 0 || v.get<long>() == 1)) return v.get<long>() == 1;
  json_input::fail(o.file(), o.field(key), "true/false or 0/1", v.dump());
}

ReferenceRow reference_row(const json& j, const std::string& where)
{
  json_input::Object o(j, where, "");
  ReferenceRow row;
  auto scenario = models::parse_roce_scenario(o.str("scenario"));
  if (!scenario.ok()) json_input::fail(where, "scenario", scenario.error().expected, scenario.error().got);
  if (scenario.value() == models::RoceScenario::ALLREDUCE)
    json_input::fail(where, "scenario", "one of the reference's scenarios (incast, victim, converge, longflows)",
                     "\"allreduce\"");
  if (o.has("model") && o.str("model") != "ns3")
    json_input::fail(where, "model", "\"ns3\" (rows of validation/ns3/roce_reference)", "\"" + o.str("model") + "\"");
  const double rate = o.number("rate_gbps", 1e-3, 1e4) * 1e9;
  auto& c = row.config = models::roce_hpcc_defaults(rate);
  c.scenario = scenario.value();
  c.senders = int(o.integer("senders", 1, 1024));
  c.local = int(o.integer("local", 0, 1024, 0));
  c.size = uint64_t(o.integer("size", 1, long(1) << 40));
  c.delay = o.number("delay_us", 0, 1e4) * 1e-6;
  c.buffer = uint64_t(o.integer("buffer", 1, long(1) << 36));
  c.dcqcn.enabled = flag_of(o, "dcqcn");
  c.ecn.enabled = flag_of(o, "ecn");
  c.pfc.enabled = flag_of(o, "pfc");
  c.ecn.kmin = uint64_t(o.integer("kmin", 0, long(1) << 36));
  c.ecn.kmax = uint64_t(o.integer("kmax", 0, long(1) << 36));
  c.ecn.pmax = o.number("pmax", 0, 1);
  c.dcqcn.t_alpha = o.number("t_alpha_us", 1e-3, 1e6) * 1e-6;
  c.dcqcn.t_dec = o.number("t_dec_us", 1e-3, 1e6) * 1e-6;
  c.dcqcn.t_inc = o.number("t_inc_us", 1e-3, 1e6) * 1e-6;
  c.dcqcn.g = o.number("g", 1e-9, 1);
  c.dcqcn.fast_recovery = int(o.integer("fast_recovery", 0, 1000));
  c.dcqcn.ai = o.number("ai_mbps", 0, 1e7) * 1e6;
  c.dcqcn.hai = o.number("hai_mbps", 0, 1e7) * 1e6;
  c.dcqcn.min_rate = o.number("min_rate_gbps", 1e-6, 1e4) * 1e9;
  c.dcqcn.cnp_interval = o.number("cnp_interval_us", 0, 1e6, 0) * 1e-6;
  c.dcqcn.byte_counter = uint64_t(o.integer("byte_counter", 0, long(1) << 40, 0));
  c.dcqcn.rate_on_first_cnp = o.number("rate_on_first_cnp", 1e-9, 1, 1);
  // The switch MMU's settings the model takes as given: a row made with others is not this model's experiment.
  const double rate_bytes = rate / 8;
  const std::pair<const char*, double> fixed[] = {{"reserve", double(c.pfc.reserve)},
                                                  {"resume_offset", double(c.pfc.resume_offset)},
                                                  {"headroom", c.pfc.headroom_bdps * rate_bytes * c.delay}};
  for (const auto& [key, value] : fixed)
    if (o.has(key) && std::abs(o.number(key, 0, 1e18) - value) > 0.5)
      json_input::fail(where, key,
                       "the model's " + std::string(key) + " (" + std::to_string(std::llround(value)) + " bytes)",
                       std::to_string(o.number(key, 0, 1e18)));
  if (o.has("drops") && o.number("drops", 0, 1e18) > 0)
    json_input::fail(where, "drops", "0 (a lossless run: the model has no loss recovery to compare)",
                     std::to_string(o.number("drops", 0, 1e18)));
  c.seed = uint64_t(o.integer("seed", 0, long(1) << 40, 1));
  c.start_jitter = o.number("jitter_ns", 0, 1e9, 0) * 1e-9;
  if (c.scenario == models::RoceScenario::CONVERGE) c.start2 = o.number("start2", 0, 10);
  if (c.scenario == models::RoceScenario::LONGFLOWS) {
    c.duration = o.number("duration", 1e-9, 10);
    c.warmup = o.number("warmup", 0, 10);
  }
  if (auto st = models::check_roce(c); !st.ok())
    json_input::fail(where, st.error().field, st.error().expected, st.error().got);
  auto number_or = [&](const char* key, double def) {
    if (!o.has(key) || o.get(key).is_null()) return def;
    return o.number(key, 0, 1e18);
  };
  row.completion = number_or("completion_s", -1);
  row.victim_completion = number_or("victim_completion_s", -1);
  row.window_bps = number_or("window_rate_gbps", 0) * 1e9;
  row.mean_queue = c.scenario == models::RoceScenario::LONGFLOWS ? number_or("window_queue_bytes", 0)
                                                                 : number_or("mean_queue_bytes", 0);
  row.peak_queue = number_or("peak_queue_bytes", 0);
  row.cnps = number_or("cnps", 0);
  row.wall = number_or("wall_s", 0);
  if (o.has("pauses") && o.get("pauses").is_object())
    for (const auto& [port, p] : o.get("pauses").items()) {
      if (!p.is_object() || !p.contains("frames") || !p["frames"].is_number() || !p.contains("paused_s") ||
          !p["paused_s"].is_number())
        json_input::fail(where, "pauses." + port, "{\"frames\": n, \"paused_s\": s}", p.dump());
      row.pause_frames += p["frames"].get<double>();
      row.paused = std::max(row.paused, p["paused_s"].get<double>());
    }
  if (c.scenario != models::RoceScenario::LONGFLOWS && !(row.completion > 0))
    json_input::fail(where, "completion_s", "a positive time (every flow finished in ns-3)",
                     std::to_string(row.completion));
  if (c.scenario == models::RoceScenario::VICTIM && !(row.victim_completion > 0))
    json_input::fail(where, "victim_completion_s", "a positive time", std::to_string(row.victim_completion));
  if (c.scenario == models::RoceScenario::LONGFLOWS && !(row.window_bps > 0))
    json_input::fail(where, "window_rate_gbps", "a positive rate", std::to_string(row.window_bps));
  return row;
}

/// The figure a scenario is judged on: incast and converge the last completion, victim the victim flow's completion
/// (its rate behind the paused port), longflows the hot port's mean queue over the window (each flow's rate is C/N
/// in both by construction).
struct Judged {
  const char* name;
  double ns3, model;
};

Judged judged(const ReferenceRow& ref, const models::RoceResult& m)
{
  switch (ref.config.scenario) {
  case models::RoceScenario::VICTIM:
    return {"victim[ms]", ref.victim_completion * 1e3, m.victim_completion * 1e3};
  case models::RoceScenario::LONGFLOWS:
    return {"queue[KB]", ref.mean_queue / 1e3, m.mean_queue / 1e3};
  default:
    return {"completion[ms]", ref.completion * 1e3, m.completion * 1e3};
  }
}

/// Two rows of the same point: every setting but the seed equal.
bool same_point(const models::RoceConfig& a, const models::RoceConfig& b)
{
  const auto &d = a.dcqcn, &e = b.dcqcn;
  return a.scenario == b.scenario && a.senders == b.senders && a.local == b.local && a.size == b.size &&
         a.rate == b.rate && a.delay == b.delay && a.buffer == b.buffer && a.ecn.enabled == b.ecn.enabled &&
         a.ecn.kmin == b.ecn.kmin && a.ecn.kmax == b.ecn.kmax && a.ecn.pmax == b.ecn.pmax &&
         a.pfc.enabled == b.pfc.enabled && d.enabled == e.enabled && d.t_alpha == e.t_alpha && d.t_dec == e.t_dec &&
         d.t_inc == e.t_inc && d.g == e.g && d.fast_recovery == e.fast_recovery && d.ai == e.ai && d.hai == e.hai &&
         d.min_rate == e.min_rate && d.cnp_interval == e.cnp_interval && d.byte_counter == e.byte_counter &&
         d.rate_on_first_cnp == e.rate_on_first_cnp && a.start2 == b.start2 && a.duration == b.duration &&
         a.warmup == b.warmup && a.start_jitter == b.start_jitter;
}

/// One point of the reference file: ns-3's runs of it (one per seed) and where its first row is.
struct ReferencePoint {
  std::vector<ReferenceRow> runs;
  std::string where;
};

/// --reference FILE: the rows of roce_reference grouped by point (their seeds: ECN's marking draws), the roce model
/// run on the same seeds, and the medians compared on the scenario's judged figure, with queues, pauses and CNPs
/// side by side. `step` (s, 0: the model's default) overrides the model's time step.
int run_reference(const std::string& path, bool as_json, double tolerance, double step)
{
  std::vector<ReferencePoint> points;
  const Status read = for_each_json_row(
      path, "--reference", "roce_reference's output", [&](const json& j, const std::string& where) -> Status {
        ReferenceRow row;
        try {
          row = reference_row(j, where);
        } catch (const json_input::LoadError& e) {
          return e.error;
        }
        row.config.step = step;
        auto it = std::find_if(points.begin(), points.end(),
                               [&](const ReferencePoint& p) { return same_point(p.runs[0].config, row.config); });
        if (it == points.end()) {
          points.push_back({{}, where});
          it = points.end() - 1;
        }
        for (const auto& r : it->runs)
          if (r.config.seed == row.config.seed)
            return Error::at(where, "seed", "one row per seed of a point",
                             std::to_string(row.config.seed) + " again (first at " + it->where + ")");
        it->runs.push_back(row);
        return {};
      });
  if (!read.ok()) return report_error(read.error());
  if (!as_json)
    std::printf(" %-9s %4s %2s %9s %9s %5s %5s | %-14s %9s %9s %7s | %8s %8s | %8s %8s | %7s %7s | %8s %8s\n",
                "scenario", "N", "M", "bytes", "buffer", "dcqcn", "seeds", "judged on", "ns-3", "model", "error",
                "ns-3 q", "model q", "ns-3 PFC", "mdl PFC", "ns3 CNP", "mdl CNP", "ns-3 s", "model s");
  int within = 0;
  double wall = 0, cpu = 0;
  for (const auto& point : points) {
    std::vector<double> ns3_v, model_v, ns3_q, model_q, ns3_pfc, model_pfc, ns3_cnp, model_cnp, model_steps;
    double point_wall = 0, point_cpu = 0;
    const char* judged_name = "";
    for (const auto& ref : point.runs) {
      auto m = run_model("roce", ref.config);
      if (!m.ok()) {
        Error e = m.error();
        e.file = point.where;
        return report_error(e);
      }
      const Judged jd = judged(ref, m->result);
      judged_name = jd.name;
      ns3_v.push_back(jd.ns3);
      model_v.push_back(jd.model);
      ns3_q.push_back(ref.mean_queue);
      model_q.push_back(m->result.mean_queue);
      ns3_pfc.push_back(ref.pause_frames);
      model_pfc.push_back(m->result.pause_frames());
      ns3_cnp.push_back(ref.cnps);
      model_cnp.push_back(m->result.cnps);
      model_steps.push_back(double(m->result.steps));
      point_wall += ref.wall;
      point_cpu += m->cpu_s;
    }
    const double ns3 = tp::median(ns3_v), model = tp::median(model_v);
    const double err = ns3 > 0 ? model / ns3 - 1 : std::numeric_limits<double>::infinity();
    const bool ok = std::abs(err) <= tolerance;
    within += ok;
    wall += point_wall;
    cpu += point_cpu;
    const auto& c = point.runs[0].config;
    if (as_json) {
      json o = {{"scenario", models::roce_scenario_name(c.scenario)},
                {"senders", c.senders},
                {"local", c.local},
                {"victim_priority", c.victim_priority},
                {"size", c.size},
                {"buffer", c.buffer},
                {"rate_gbps", c.rate * 1e-9},
                {"dcqcn", c.dcqcn.enabled},
                {"seeds", point.runs.size()},
                {"judged_on", judged_name},
                {"ns3", ns3_v},
                {"model", model_v},
                {"ns3_median", ns3},
                {"model_median", model},
                {"error", err},
                {"within_tolerance", ok},
                {"ns3_mean_queue_bytes", tp::median(ns3_q)},
                {"model_mean_queue_bytes", tp::median(model_q)},
                {"ns3_pause_frames", tp::median(ns3_pfc)},
                {"model_pause_frames", tp::median(model_pfc)},
                {"ns3_cnps", tp::median(ns3_cnp)},
                {"model_cnps", tp::median(model_cnp)},
                {"model_steps", tp::median(model_steps)},
                {"ns3_wall_s", point_wall},
                {"model_cpu_s", point_cpu},
                {"where", point.where}};
      std::printf("%s\n", o.dump().c_str());
    } else {
      std::printf(" %-9s %4d %2d %9llu %9llu %5s %5zu | %-14s %9.4g %9.4g %+6.1f%% | %8.0f %8.0f | %8.0f %8.0f | %7.0f "
                  "%7.0f | %8.3f %8.4f%s\n",
                  models::roce_scenario_name(c.scenario), c.senders, c.local, (unsigned long long)c.size,
                  (unsigned long long)c.buffer, c.dcqcn.enabled ? "on" : "off", point.runs.size(), judged_name, ns3,
                  model, err * 100, tp::median(ns3_q) / 1e3, tp::median(model_q) / 1e3, tp::median(ns3_pfc),
                  tp::median(model_pfc), tp::median(ns3_cnp), tp::median(model_cnp), point_wall, point_cpu,
                  ok ? "" : "  MISS");
    }
  }
  if (!as_json)
    std::printf("%d of %zu medians within %.0f %% of ns-3's on the judged figure; ns-3 %.2f s of wall time, the model "
                "%.4f s (%.0fx)\n",
                within, points.size(), tolerance * 100, wall, cpu, cpu > 0 ? wall / cpu : 0.0);
  return within == int(points.size()) ? exit_code::OK : exit_code::FAILED;
}

/// An error of the model's configuration (fields in SI units, as check_roce names them) in the command's terms: the
/// option's name and the value in the option's unit.
Error as_option_error(Error e)
{
  const models::RoceSettingUnit* unit = models::roce_setting_unit(e.field);
  if (e.field == "shared_pool") { // set by --switch only
    e.field = "--switch (its lossless pool)";
    return e;
  }
  if (!unit) {
    if (e.field == "roce model" || e.field.rfind("--", 0) == 0) return e;
    std::replace(e.field.begin(), e.field.end(), '_', '-');
    e.field = "--" + e.field;
    return e;
  }
  e.field = unit->option;
  char* end = nullptr;
  const double v = std::strtod(e.got.c_str(), &end);
  if (end && *end == '\0' && !e.got.empty()) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", v * unit->scale);
    e.got = text;
  }
  return e;
}

Result<bool> on_off(const frontend::ParsedArgs& a, const std::string& name, bool def)
{
  if (!a.has(name)) return def;
  const std::string v = a.get(name, "");
  if (v == "on") return true;
  if (v == "off") return false;
  return Error::at("", "--" + name, "on or off", "\"" + v + "\"");
}

int run_roce(const frontend::ParsedArgs& a)
{
  auto tolerance = a.get_number("tolerance", 0.10, 0, 10);
  if (!tolerance.ok()) return report_error(tolerance.error());
  if (a.has("tolerance") && !a.has("reference"))
    return report_error(
        Error::at("", "--tolerance", "--reference FILE with it (it bounds the comparison)", "no --reference"));
  if (a.has("reference")) {
    auto ref_step = a.get_number("step", 0, 0, 1e6);
    if (!ref_step.ok()) return report_error(ref_step.error());
    return run_reference(a.get("reference", ""), a.has("json"), tolerance.value(), ref_step.value() * 1e-9);
  }

  auto scenario = models::parse_roce_scenario(a.get("scenario", "incast"));
  if (!scenario.ok()) {
    Error e = scenario.error();
    e.field = "--scenario";
    return report_error(e);
  }
  auto rate = a.get_number("rate", 100, 1e-3, 1e4);
  if (!rate.ok()) return report_error(rate.error());
  const std::string profile = a.get("profile", "hpcc");
  if (profile != "hpcc" && profile != "paper")
    return report_error(Error::at("", "--profile", "hpcc or paper", "\"" + profile + "\""));
  models::RoceConfig c = models::roce_hpcc_defaults(rate.value() * 1e9);
  if (profile == "paper") {
    c.dcqcn = models::dcqcn_paper_profile();
    c.ecn = models::ecn_paper_profile();
  }
  c.scenario = scenario.value();
  if (c.scenario == models::RoceScenario::CONVERGE) c.senders = 2;

  auto senders =
      frontend::parse_integer_list(a.get("senders", std::to_string(c.senders)), "--senders", 1, 1024, "sender counts");
  if (!senders.ok()) return report_error(senders.error());
  auto local = a.get_int("local", 0, 0, 1024);
  auto victim_priority = a.get_int("victim-priority", 0, 0, 7);
  auto leaves = a.get_int("leaves", c.leaves, 1, 1024);
  auto oversub = a.get_number("oversubscription", c.oversubscription, 1, 64);
  const std::string placement = a.get("placement", "interleaved");
  if (placement != "interleaved" && placement != "leaf-major")
    return report_error(Error::at("", "--placement", "interleaved or leaf-major", "\"" + placement + "\""));
  auto size = a.get_size("size", c.size);
  auto buffer = a.get_size("buffer", c.buffer);
  auto delay = a.get_number("delay", 1, 0, 1e4);
  auto kmin = a.get_size("kmin", c.ecn.kmin);
  auto kmax = a.get_size("kmax", c.ecn.kmax);
  auto pmax = a.get_number("pmax", c.ecn.pmax, 0, 1);
  auto t_alpha = a.get_number("t-alpha", c.dcqcn.t_alpha * 1e6, 1e-3, 1e6);
  auto t_dec = a.get_number("t-dec", c.dcqcn.t_dec * 1e6, 1e-3, 1e6);
  auto t_inc = a.get_number("t-inc", c.dcqcn.t_inc * 1e6, 1e-3, 1e6);
  auto g = a.get_number("g", c.dcqcn.g, 1e-9, 1);
  auto fr = a.get_int("fast-recovery", c.dcqcn.fast_recovery, 0, 1000);
  auto ai = a.get_number("ai", c.dcqcn.ai * 1e-6, 0, 1e7);
  auto hai = a.get_number("hai", c.dcqcn.hai * 1e-6, 0, 1e7);
  auto min_rate = a.get_number("min-rate", c.dcqcn.min_rate * 1e-9, 1e-6, 1e4);
  auto cnp = a.get_number("cnp-interval", c.dcqcn.cnp_interval * 1e6, 0, 1e6);
  auto headroom = a.get_number("headroom-bdps", c.pfc.headroom_bdps, 0, 1000);
  auto bc = a.get_size("byte-counter", c.dcqcn.byte_counter);
  auto start2 = a.get_number("start2", c.start2 * 1e6, 0, 1e7);
  auto duration = a.get_number("duration", c.duration * 1e3, 1e-6, 1e4);
  auto warmup = a.get_number("warmup", c.warmup * 1e3, 0, 1e4);
  auto jitter = a.get_number("jitter", 0, 0, 1e9);
  auto seed = a.get_int("seed", 1, 0, long(1) << 40);
  auto step = a.get_number("step", 0, 0, 1e6);
  auto stop = a.get_number("stop", c.stop, 1e-9, 100);
  auto dcqcn = on_off(a, "dcqcn", true);
  auto ecn = on_off(a, "ecn", true);
  auto pfc = on_off(a, "pfc", true);
  for (auto* r : {&local, &fr, &seed, &leaves, &victim_priority})
    if (!r->ok()) return report_error(r->error());
  for (auto* r : {&size, &buffer, &kmin, &kmax, &bc})
    if (!r->ok()) return report_error(r->error());
  for (auto* r : {&headroom, &oversub, &delay, &pmax, &t_alpha, &t_dec, &t_inc, &g, &ai, &hai, &min_rate, &cnp, &start2,
                  &duration, &warmup, &jitter, &step, &stop})
    if (!r->ok()) return report_error(r->error());
  for (auto* r : {&dcqcn, &ecn, &pfc})
    if (!r->ok()) return report_error(r->error());
  c.local = int(local.value());
  c.victim_priority = int(victim_priority.value());
  c.leaves = int(leaves.value());
  c.oversubscription = oversub.value();
  c.interleaved = placement == "interleaved";
  c.size = size.value();
  c.buffer = buffer.value();
  if (a.has("switch")) { // the switch profile's lossless pool and PFC threshold
    if (a.has("buffer"))
      return report_error(
          Error::at("", "--buffer", "--buffer or --switch, not both (the switch gives the pool)", "both"));
    auto sw = models::Catalog().network_switch(a.get("switch"));
    if (!sw.ok()) return report_error(sw.error());
    if (auto st = models::apply_switch_buffer(sw.value(), c); !st.ok()) return report_error(st.error());
    if (!c.pfc.rows.empty() && a.has("headroom-bdps"))
      return report_error(Error::at("", "--headroom-bdps",
                                    "no --headroom-bdps beside --switch " + sw->name +
                                        " (its profile's pfc rows give each port's headroom)",
                                    "both"));
  }
  c.delay = delay.value() * 1e-6;
  c.ecn.kmin = kmin.value();
  c.ecn.kmax = kmax.value();
  c.ecn.pmax = pmax.value();
  c.ecn.enabled = ecn.value();
  c.pfc.enabled = pfc.value();
  c.dcqcn.enabled = dcqcn.value();
  c.dcqcn.t_alpha = t_alpha.value() * 1e-6;
  c.dcqcn.t_dec = t_dec.value() * 1e-6;
  c.dcqcn.t_inc = t_inc.value() * 1e-6;
  c.dcqcn.g = g.value();
  c.dcqcn.fast_recovery = int(fr.value());
  c.dcqcn.ai = ai.value() * 1e6;
  c.dcqcn.hai = hai.value() * 1e6;
  c.dcqcn.min_rate = min_rate.value() * 1e9;
  c.dcqcn.cnp_interval = cnp.value() * 1e-6;
  c.pfc.headroom_bdps = headroom.value();
  c.dcqcn.byte_counter = bc.value();
  c.start2 = start2.value() * 1e-6;
  c.duration = duration.value() * 1e-3;
  c.warmup = warmup.value() * 1e-3;
  c.start_jitter = jitter.value() * 1e-9;
  c.seed = uint64_t(seed.value());
  c.step = step.value() * 1e-9;
  c.stop = stop.value();

  auto names = models::network_model_list(a.get("network-model", "flow,roce"), "roce", "--network-model");
  if (!names.ok()) return report_error(names.error());
  for (const char* field :
       {"leaves", "oversubscription", "placement", "start2", "duration", "warmup", "local", "victim-priority"}) {
    if (!a.has(field)) continue;
    std::string name = field; // the option's field name: dashes as underscores
    std::replace(name.begin(), name.end(), '-', '_');
    if (const std::string owner = models::roce_field_scenario(name, c.scenario); !owner.empty())
      return report_error(Error::at("", std::string("--") + field,
                                    "--scenario " + owner + " (only it reads the option)",
                                    std::string("--scenario ") + models::roce_scenario_name(c.scenario)));
  }
  const bool fixed_point = a.has("fixed-point");
  if (fixed_point && !c.dcqcn.enabled)
    return report_error(Error::at("", "--fixed-point", "DCQCN on (the fixed point is DCQCN's)", "--dcqcn off"));
  if (fixed_point && c.scenario != models::RoceScenario::LONGFLOWS)
    return report_error(Error::at("", "--fixed-point",
                                  "--scenario longflows (the fluid model's fixed point is for "
                                  "long-lived flows)",
                                  std::string("--scenario ") + models::roce_scenario_name(c.scenario)));
  for (const long n : senders.value()) { // refuse before printing anything
    c.senders = int(n);
    if (auto st = models::check_roce(c); !st.ok()) return report_error(as_option_error(st.error()));
    if (fixed_point)
      if (auto fp = models::dcqcn_fixed_point(fluid_input(c)); !fp.ok())
        return report_error(as_option_error(fp.error()));
  }
  const bool as_json = a.has("json");
  if (!as_json) print_head(c);
  for (const long n : senders.value()) {
    c.senders = int(n);
    for (const auto& name : names.value()) {
      auto r = run_model(name, c);
      if (!r.ok()) return report_error(as_option_error(r.error()));
      if (as_json)
        std::printf("%s\n", row_json(r.value()).dump().c_str());
      else
        print_row(r.value());
    }
    if (fixed_point) {
      auto fp = models::dcqcn_fixed_point(fluid_input(c));
      if (!fp.ok()) return report_error(fp.error());
      if (as_json)
        std::printf("%s\n", json{{"model", "dcqcn-fluid-fixed-point"},
                                 {"senders", n},
                                 {"p", fp->p},
                                 {"rate_gbps", fp->rate * 1e-9},
                                 {"payload_rate_gbps", fp->rate * c.payload_bytes / c.frame_bytes * 1e-9},
                                 {"target_gbps", fp->target * 1e-9},
                                 {"alpha", fp->alpha},
                                 {"queue_bytes", fp->queue},
                                 {"on_red_slope", fp->on_slope}}
                                .dump()
                                .c_str());
      else
        std::printf(" %-6s %7ld %11s %14s %13.3f %12s %12.0f   (p* %.3g, alpha* %.3g, R_T* %.3f Gb/s%s)\n", "fluid", n,
                    "-", "-", fp->rate * c.payload_bytes / c.frame_bytes * 1e-9, "-", fp->queue / 1e3, fp->p, fp->alpha,
                    fp->target * 1e-9, fp->on_slope ? "" : "; p* above Pmax: off RED's slope");
    }
  }
  if (std::fflush(stdout) != 0) return report_io_error(Error::msg("standard output: write failed"));
  return exit_code::OK;
}

} // namespace

Command roce_command()
{
  frontend::CommandSpec s;
  s.name = "roce";
  s.summary = "RoCE congestion: PFC, ECN and DCQCN on incast, victim, converging and long-lived flows";
  s.usage = "[--scenario incast|victim|converge|longflows|allreduce] [--senders N,...] [--size BYTES] [--rate GBPS] "
            "[--buffer BYTES | --switch NAME] [--profile hpcc|paper] [--dcqcn on|off] [--pfc on|off] [--ecn on|off] "
            "[DCQCN and "
            "ECN options] [--fixed-point] [--network-model flow,roce] [--json] | --reference FILE";
  s.options = {
      {"scenario", 0, true, "NAME",
       "incast (h0..h{N-1} -> s0 -> r), victim (a0..a{N-1} and v on s1, r and w on s2: every a -> r, v -> w), "
       "converge (two flows, the second starting --start2 later), longflows (N endless flows, averaged over a "
       "window), allreduce (a ring allreduce of --size bytes over --senders ranks on a leaf-spine fabric: every rank "
       "streams 2(n-1)/n of it to its successor); default incast"},
      {"senders", 'n', true, "N,...", "senders (default 8; converge: 2); a list runs each"},
      {"local", 0, true, "M", "victim: senders on s2 beside r, also sending to r (default 0)"},
      {"victim-priority", 0, true, "P",
       "victim: the PFC priority of the victim flow v -> w, 0..7 (default 0, the others' priority): another is a "
       "lossless class of its own, which the others' PAUSE frames do not stop"},
      {"leaves", 0, true, "L", "allreduce: leaf switches under one spine, senders / L ranks each (default 2)"},
      {"oversubscription", 0, true, "X",
       "allreduce: a leaf's host bandwidth over its uplink's (default 2: a 2:1 oversubscribed fabric)"},
      {"placement", 0, true, "NAME",
       "allreduce: interleaved (default: rank i on leaf i mod L, every ring hop crosses the spine) or leaf-major"},
      {"size", 's', true, "BYTES", "payload bytes per flow (default 1000000)"},
      {"rate", 0, true, "GBPS", "every link's rate in Gb/s (default 100)"},
      {"delay", 0, true, "US", "every link's propagation delay in microseconds (default 1)"},
      {"buffer", 'b', true, "BYTES", "each switch's shared buffer (default HPCC's 16 MB per 50 Gb/s: 32 MB at 100G)"},
      {"switch", 0, true, "NAME",
       "a switch profile: every switch's PFC pool and threshold are its lossless pool and alpha, and with its pfc "
       "rows each port's headroom and XON its speed's XOFF_TH and XON_TH (the reserve stays HPCC's); in place of "
       "--buffer"},
      {"profile", 0, true, "NAME",
       "hpcc (default: the HPCC repository's DCQCN and ECN settings at this rate) or paper (the DCQCN paper's)"},
      {"dcqcn", 0, true, "on|off", "DCQCN at the senders (default on); off: line rate, PFC alone"},
      {"ecn", 0, true, "on|off", "ECN marking at switch egress (default on)"},
      {"pfc", 0, true, "on|off", "PFC (default on); off: drops end the run with an error (no loss recovery)"},
      {"kmin", 0, true, "BYTES", "RED's Kmin (hpcc: 100 KB per 25 Gb/s; paper: 5 KB)"},
      {"kmax", 0, true, "BYTES", "RED's Kmax (hpcc: 400 KB per 25 Gb/s; paper: 200 KB)"},
      {"pmax", 0, true, "P", "marking probability at Kmax (hpcc 0.2; paper 0.01)"},
      {"t-alpha", 0, true, "US", "DCQCN's alpha update period (hpcc 1; paper 55)"},
      {"t-dec", 0, true, "US", "DCQCN's rate-decrease period (hpcc 4; paper 50)"},
      {"t-inc", 0, true, "US", "DCQCN's rate-increase timer (hpcc 300; paper 55)"},
      {"g", 0, true, "G", "alpha's gain (1/256)"},
      {"fast-recovery", 0, true, "F", "fast-recovery steps (hpcc 1; paper 5)"},
      {"ai", 0, true, "MBPS", "additive increase (hpcc 5 per 25 Gb/s; paper 40)"},
      {"hai", 0, true, "MBPS", "hyper increase (hpcc 50 per 25 Gb/s; paper 400)"},
      {"min-rate", 0, true, "GBPS", "DCQCN's minimum rate (1)"},
      {"cnp-interval", 0, true, "US", "at most one CNP per flow per interval (hpcc 0: one per marked frame; paper 50)"},
      {"headroom-bdps", 0, true, "X",
       "PFC headroom per ingress port in one-way bandwidth-delay products of its link (default 3, HPCC's third.cc)"},
      {"byte-counter", 0, true, "BYTES", "the DCQCN paper's byte counter (hpcc 0: off; paper 10 MB)"},
      {"start2", 0, true, "US", "converge: the second flow's start (default 500)"},
      {"duration", 0, true, "MS", "longflows: simulated time (default 50)"},
      {"warmup", 0, true, "MS", "longflows: the window starts here (default 20)"},
      {"jitter", 0, true, "NS", "each flow starts at an offset drawn from [0, NS) (default 0)"},
      {"seed", 0, true, "N", "the seed of the start offsets and of ECN's marking draws (default 1)"},
      {"step", 0, true, "NS",
       "the model's time step (default 0: half the fastest of 1 us, DCQCN's alpha and decrease periods and the link "
       "delay, at least one frame time; also applies with --reference)"},
      {"stop", 0, true, "S", "an unfinished run past this simulated time is an error (default 1)"},
      {"fixed-point", 0, false, "", "longflows: print the DCQCN fluid model's fixed point (queue, p) beside each run"},
      {"network-model", 'm', true, "NAME,...",
       "network models, side by side (default flow,roce; known: " + models::network_model_names() + ")"},
      {"reference", 0, true, "FILE",
       "compare the roce model with the ns-3 rows in FILE (validation/ns3/roce_reference's output), each on its "
       "judged figure (medians over the seeds of each point), with queues, pauses, CNPs and the speed ratio; "
       "exits 1 when a median is off by more than "
       "--tolerance (the other options do not apply)"},
      {"tolerance", 0, true, "FRACTION", "with --reference: the relative error a row may have (default 0.10)"},
      {"json", 0, false, "", "one JSON object per row"},
  };
  s.details = "The flow model shares links max-min: no queue, no pause, no CNP. The roce model steps a fluid model\n"
              "of the fabric at one frame time: switch buffers with the HPCC switch MMU's PFC accounting, RED/ECN at\n"
              "egress, DCQCN at every sender (docs/network-models.md). A rate above the line's payload rate, a flow\n"
              "that moved nothing, or a drop (the model has no loss recovery) is an error.";
  return {s, &run_roce};
}

} // namespace tp::cli
