// What `tensorpath replay --hw` reports (see replay_report.hpp).
#include "apps/lib/replay_report.hpp"

#include "core/common/isolated_run.hpp"
#include "traces/chrome_trace_writer.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

namespace tp::frontend {

using nlohmann::json;

Result<std::string> SimulationCache::get(const std::string& key, const std::function<Result<std::string>()>& simulate)
{
  auto it = done_.find(key);
  if (it != done_.end()) {
    ++reused_;
    return it->second;
  }
  return done_.emplace(key, simulate()).first->second;
}

Result<std::string> simulate_allreduce_isolated(const models::ClusterProfile& cluster, const sim::AllreduceJob& job)
{
  return run_isolated([&]() -> Result<std::string> {
    auto r = sim::run_allreduce(cluster, job);
    if (!r.ok()) return r.error();
    return fmt::format("{:.17g} {:.17g} {:.17g} {}", r->seconds, r->alpha, r->beta,
                       r->beta_link.empty() ? "-" : r->beta_link);
  });
}

CollectiveTime parse_collective_time(const std::string& text)
{
  CollectiveTime t;
  std::istringstream in(text);
  std::string alpha, beta;
  in >> t.seconds >> alpha >> beta;
  std::getline(in >> std::ws, t.beta_link); // the rest of the line: "cpu memcpy" is two words
  t.alpha = alpha.empty() ? 0 : std::stod(alpha);
  t.beta = beta.empty() ? 0 : std::stod(beta); // "inf" when no stage moved bytes
  if (t.beta_link == "-") t.beta_link.clear();
  return t;
}

std::string resource_of_link(const std::string& link)
{
  auto has = [&](const char* s) { return link.find(s) != std::string::npos; };
  if (link == "cpu memcpy") return "CPU copy";
  if (has(".port.")) return "NIC line rate";
  if (has(".pcie.")) return "PCIe";
  if (has(".qpi_p2p.")) return "GPU peer traffic across sockets";
  if (has(".qpi.")) return "socket link";
  if (has(".p2p_read")) return "GPU peer read";
  return link.empty() ? "unknown" : link;
}

std::string allreduce_bottleneck(const CollectiveTime& t, double bytes, int ranks)
{
  if (t.seconds <= 0 || ranks < 2) return "-";
  const double messages = 2.0 * (ranks - 1), seg = bytes / ranks;
  const double latency = messages * t.alpha;
  const double wire = std::isfinite(t.beta) && t.beta > 0 ? messages * seg / t.beta : 0.0;
  const double rest = std::max(0.0, t.seconds - latency - wire);
  auto pct = [&](double x) { return int(std::lround(100 * x / t.seconds)); };
  if (wire >= latency && wire >= rest)
    return fmt::format("{} ({}, {:.1f} GB/s) {}%", resource_of_link(t.beta_link), t.beta_link, t.beta / 1e9, pct(wire));
  if (latency >= rest)
    return fmt::format("per-message costs: latency and pipeline fill ({:.0f} messages x {:.1f} us) {}%", messages,
                       t.alpha * 1e6, pct(latency));
  return fmt::format("reductions and copies between ring steps {}%", pct(rest));
}

namespace {

json ms(double seconds)
{
  return std::round(seconds * 1e9) / 1e6; // milliseconds to the nanosecond: the same text on every run
}

json step_times(const traces::StepTimes& s)
{
  return {{"time_ms", ms(s.time)},
          {"compute_ms", ms(s.compute)},
          {"communication_ms", ms(s.communication)},
          {"exposed_ms", ms(s.exposed())},
          {"overlap_ms", ms(s.overlap)}};
}

json or_null(bool known, json v)
{
  return known ? v : json(nullptr);
}

} // namespace

std::string replay_json(const ReplayReport& r)
{
  const ReplayHost& h = r.host;
  json host = {{"hw", h.hw},
               {"hw_from", "--hw"},
               {"host_profile", h.host_profile},
               {"nic", h.nic},
               {"nic_line_rate_gbps", std::round(h.line_rate * 8 / 1e6) / 1e3},
               {"switch", h.switch_name.empty() ? json(nullptr) : json(h.switch_name)},
               {"transport", h.transport},
               {"ranks", or_null(h.ranks > 0, h.ranks)},
               {"ranks_from", h.ranks_from},
               {"ranks_per_node", or_null(h.ranks_per_node > 0, h.ranks_per_node)},
               {"ranks_per_node_from", h.per_node_from}};
  json events = json::array();
  for (const auto& e : r.rows)
    events.push_back({{"event", e.event},
                      {"name", e.name},
                      {"bytes", or_null(e.bytes_known, e.bytes)},
                      {"ranks", or_null(e.ranks > 0, e.ranks)},
                      {"algorithm", e.algorithm},
                      {"recorded_ms", ms(e.recorded)},
                      {"replayed_ms", or_null(e.replayed >= 0, ms(e.replayed))},
                      {"kept_recorded", e.replayed < 0 ? json(e.kept) : json(nullptr)},
                      {"bottleneck", e.bottleneck},
                      {"reused", e.reused},
                      {"step", e.step},
                      {"rank", or_null(e.rank >= 0, e.rank)}});
  json steps = json::array();
  for (const auto& s : r.steps)
    steps.push_back({{"name", s.name},
                     {"partial", s.partial},
                     {"why", s.why},
                     {"events", s.events},
                     {"recorded", step_times(s.recorded)},
                     {"replayed", step_times(s.replayed)}});
  json out = {
      {"tool", "tensorpath replay"},
      {"files", r.files},
      {"format", r.format},
      {"host", host},
      {"events", events},
      {"steps", steps},
      {"steps_from", r.steps_from},
      {"summary",
       {{"whole_steps", r.summary.steps},
        {"recorded_median_ms", ms(r.summary.recorded_median)},
        {"replayed_median_ms", ms(r.summary.replayed_median)},
        {"recorded_mean_ms", ms(r.summary.recorded_mean)},
        {"replayed_mean_ms", ms(r.summary.replayed_mean)}}},
      {"whole_trace", {{"recorded_ms", ms(r.recorded_span)}, {"replayed_ms", ms(r.replayed_span)}}},
      {"simulated_events", {{"recorded_ms", ms(r.recorded_simulated)}, {"simulated_ms", ms(r.simulated)}}},
      {"simulations", {{"distinct", r.simulations}, {"reused", r.reused}}},
      {"warnings", r.warnings},
  };
  return out.dump(2) + "\n";
}

std::string replay_chrome_trace(const traces::Trace& t, const traces::ReplayResult& rep, const std::string& hw)
{
  traces::ChromeTraceWriter out;
  const int REC = out.process("recorded: " + t.file), REP = out.process("replayed on " + hw);
  out.sort_process(REC, 0);
  out.sort_process(REP, 1);
  const int steps_tid = out.shared_track("steps"); // track numbers are the same in both processes
  double origin = std::numeric_limits<double>::infinity();
  for (const auto& o : t.ops)
    origin = std::min(origin, o.start);
  for (const auto& x : t.transfers)
    origin = std::min(origin, x.start);
  for (const auto& c : t.collectives)
    origin = std::min(origin, c.start);
  if (!std::isfinite(origin)) origin = 0;
  const bool replayed = rep.op_start.size() == t.ops.size() && rep.transfer_start.size() == t.transfers.size() &&
                        rep.collective_start.size() == t.collectives.size();
  // per step: [first start, last end] recorded and replayed
  std::vector<std::pair<double, double>> rec_steps(t.steps.size(), {INFINITY, -INFINITY}), rep_steps = rec_steps;
  auto span = [&](int pid, int track, const std::string& name, const std::string& cat, double start, double dur,
                  json args, int step) {
    out.span(pid, track, name, cat, start - origin, dur, std::move(args));
    if (step >= 0 && size_t(step) < t.steps.size()) {
      auto& s = (pid == REC ? rec_steps : rep_steps)[size_t(step)];
      s.first = std::min(s.first, start), s.second = std::max(s.second, start + dur);
    }
  };
  auto rank_prefix = [](int rank) { return rank >= 0 ? "rank " + std::to_string(rank) + ": " : std::string(); };
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const auto& o = t.ops[i];
    const int k = out.shared_track(o.device); // merged traces already name "rank R: device"
    span(REC, k, o.name, "compute", o.start, o.duration, json::object(), o.step);
    span(REP, k, o.name, "compute", replayed ? rep.op_start[i] : o.start, o.duration, json::object(), o.step);
  }
  for (size_t i = 0; i < t.transfers.size(); ++i) {
    const auto& x = t.transfers[i];
    const int k = out.shared_track(rank_prefix(x.rank) + "transfers");
    json args = {{"bytes", or_null(x.bytes_known, x.bytes)}, {"src", x.src_device}, {"dst", x.dst_device}};
    span(REC, k, x.tensor, "transfer", x.start, x.duration, args, x.step);
    span(REP, k, x.tensor, "transfer", replayed ? rep.transfer_start[i] : x.start,
         replayed ? rep.transfer_duration[i] : x.duration, args, x.step);
  }
  for (size_t i = 0; i < t.collectives.size(); ++i) {
    const auto& c = t.collectives[i];
    const int k = out.shared_track(rank_prefix(c.rank) + "collectives");
    json args = {{"kind", c.kind}, {"bytes", or_null(c.bytes_known, c.bytes)}};
    span(REC, k, c.name, c.kind, c.start, c.duration, args, c.step);
    span(REP, k, c.name, c.kind, replayed ? rep.collective_start[i] : c.start,
         replayed ? rep.collective_duration[i] : c.duration, args, c.step);
  }
  for (size_t s = 0; s < t.steps.size(); ++s)
    for (int p : {REC, REP}) {
      const auto& [a, b] = (p == REC ? rec_steps : rep_steps)[s];
      if (b < a) continue; // no events
      out.span(p, steps_tid, t.steps[s].name, "step", a - origin, b - a, {{"partial", t.steps[s].partial}});
    }
  return out.text() + "\n";
}

} // namespace tp::frontend
