// `tensorpath replay TRACE`: read a recorded trace (TF timeline, Horovod timeline, PyTorch profiler, Chakra JSON),
// summarize what it recorded (compute per device, transfers, collectives) and, with --hw, re-simulate each recorded
// communication event on that fabric (a transfer through --transport between two hosts, an allreduce as a ring over
// --ranks hosts in the analytical fabric mode), print recorded against simulated, and replay the step with the recorded
// compute and the new communication times (traces/replay: the recorded order stands for dependencies).
#include "apps/commands.hpp"
#include "apps/lib/hw_resolve.hpp"
#include "apps/lib/progress_line.hpp"
#include "core/common/isolated_run.hpp"
#include "core/common/suggest.hpp"
#include "sim/fabric_modes.hpp"
#include "sim/job_estimate.hpp"
#include "sim/transfer_job.hpp"
#include "traces/replay.hpp"
#include "traces/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

namespace tp::cli {

namespace {

Location placement(const std::string& device)
{
  return device.find("GPU") != std::string::npos || device.find("gpu") != std::string::npos ||
                 device.find("cuda") != std::string::npos
             ? Location::gpu(0)
             : Location::host(0);
}

/// The trace files the arguments name: files as given, a directory's trace files (.json, .json.gz, .gz, .et) by name.
Result<std::vector<std::string>> trace_files(const std::vector<std::string>& args)
{
  std::vector<std::string> files;
  for (const auto& p : args) {
    std::error_code ec;
    if (!std::filesystem::is_directory(p, ec)) {
      files.push_back(p);
      continue;
    }
    std::vector<std::string> in;
    for (const auto& e : std::filesystem::directory_iterator(p, ec)) {
      const std::string name = e.path().filename().string();
      auto ends = [&](const char* x) { return name.size() > std::strlen(x) && name.ends_with(x); };
      if (e.is_regular_file() && name[0] != '.' && (ends(".json") || ends(".gz") || ends(".et")))
        in.push_back(e.path().string());
    }
    if (ec) return Error::at(p, "", "a readable directory of trace files", ec.message());
    if (in.empty()) return Error::at(p, "", "trace files (.json, .json.gz, .et), one per rank", "none");
    std::sort(in.begin(), in.end());
    files.insert(files.end(), in.begin(), in.end());
  }
  return files;
}

void print_steps(const traces::Trace& t, const std::vector<traces::StepReport>& steps, bool replayed)
{
  std::printf("\n%zu step(s) with events (%s):\n", steps.size(), t.steps_from.c_str());
  if (replayed)
    std::printf("%-26s %6s %10s %10s %8s %10s %10s %10s %10s %10s %10s %10s\n", "step", "events", "rec[ms]",
                "replay[ms]", "error", "compute", "comm rec", "comm rep", "exposed rec", "exposed rep", "overlap rec",
                "overlap rep");
  else
    std::printf("%-26s %6s %10s %10s %10s %10s %10s %10s\n", "step", "events", "marked[ms]", "rec[ms]", "compute",
                "comm", "exposed", "overlap");
  for (const auto& s : steps) {
    const auto &r = s.recorded, &p = s.replayed;
    if (replayed)
      std::printf("%-26.26s %6zu %10.3f %10.3f %+7.1f%% %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f",
                  s.name.c_str(), s.events, r.time * 1e3, p.time * 1e3, r.time > 0 ? 100 * (p.time / r.time - 1) : 0.0,
                  p.compute * 1e3, r.communication * 1e3, p.communication * 1e3, r.exposed() * 1e3, p.exposed() * 1e3,
                  r.overlap * 1e3, p.overlap * 1e3);
    else
      std::printf("%-26.26s %6zu %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f", s.name.c_str(), s.events, s.marked * 1e3,
                  r.time * 1e3, r.compute * 1e3, r.communication * 1e3, r.exposed() * 1e3, r.overlap * 1e3);
    std::printf("%s\n", s.partial ? ("  partial: " + s.why).c_str() : "");
  }
  const auto m = traces::summarize_steps(steps);
  std::string left_out;
  for (const auto& s : steps)
    if (s.partial) left_out += (left_out.empty() ? "" : ", ") + s.name;
  if (m.steps == 0) {
    std::printf("no whole step to summarize%s\n",
                left_out.empty() ? "" : (" (partial, left out: " + left_out + ")").c_str());
    return;
  }
  std::printf("over %zu whole step(s): recorded median %.3f ms, mean %.3f ms", m.steps, m.recorded_median * 1e3,
              m.recorded_mean * 1e3);
  if (replayed)
    std::printf("; replayed median %.3f ms (%+.1f %%), mean %.3f ms (%+.1f %%)", m.replayed_median * 1e3,
                m.recorded_median > 0 ? 100 * (m.replayed_median / m.recorded_median - 1) : 0.0, m.replayed_mean * 1e3,
                m.recorded_mean > 0 ? 100 * (m.replayed_mean / m.recorded_mean - 1) : 0.0);
  std::printf("%s\n", left_out.empty() ? "" : ("\n  (partial steps left out: " + left_out + ")").c_str());
}

int run_replay(const frontend::ParsedArgs& a)
{
  if (a.positional().empty())
    return report_error(Error::at("", "tensorpath replay",
                                  "a trace file (or several ranks' files of one job, or their directory)", "none"));
  auto files = trace_files(a.positional());
  if (!files.ok()) return report_error(files.error());
  std::vector<traces::Trace> read;
  for (const auto& f : files.value()) {
    auto one = traces::read_trace(f);
    if (!one.ok()) return report_error(one.error());
    read.push_back(std::move(one.value()));
  }
  const size_t rank_files = read.size();
  auto t = traces::merge_rank_traces(std::move(read));
  if (!t.ok()) return report_error(t.error());
  auto ranks_arg = a.get_int("ranks", 0, 1, 100000);
  if (!ranks_arg.ok()) return report_error(ranks_arg.error());
  auto per_node_arg = a.get_int("ranks-per-node", 0, 1, 100000);
  if (!per_node_arg.ok()) return report_error(per_node_arg.error());
  const traces::JobShape shape = traces::infer_job(t.value());
  std::map<std::string, double> busy;
  for (const auto& o : t->ops)
    busy[o.device] += o.duration;
  std::printf("%s (%s): %zu compute op(s) on %zu device(s), %zu transfer(s), %zu collective(s), span %.3f ms\n",
              t->file.c_str(), t->format.c_str(), t->ops.size(), busy.size(), t->transfers.size(),
              t->collectives.size(), t->span() * 1e3);
  for (const auto& [dev, s] : busy)
    std::printf("  compute on %-50s %10.3f ms (kept as recorded)\n", dev.c_str(), s * 1e3);
  for (const auto& w : t->warnings) // what the reader accepted but could not read in full
    std::fprintf(stderr, "warning: %s: %s\n", t->file.c_str(), w.c_str());
  // The job: ranks and ranks per node, from the trace unless an option says.
  const int job_ranks = ranks_arg.value() > 0 ? int(ranks_arg.value()) : shape.ranks;
  const int per_node = per_node_arg.value() > 0 ? int(per_node_arg.value()) : shape.ranks_per_node;
  std::printf("job: %s; %s%s\n",
              ranks_arg.value() > 0 ? fmt::format("{} rank(s) (--ranks)", job_ranks).c_str()
              : shape.ranks > 0     ? fmt::format("{} rank(s) (from {})", job_ranks, shape.ranks_from).c_str()
                                    : "ranks not known (the trace does not say; --ranks N)",
              per_node_arg.value() > 0 ? fmt::format("{} per node (--ranks-per-node)", per_node).c_str()
              : per_node > 0           ? fmt::format("{} per node (from {})", per_node, shape.per_node_from).c_str()
                                       : "assumed one rank per node (the trace names no hosts; --ranks-per-node N)",
              rank_files > 1 ? fmt::format("; {} rank files", rank_files).c_str() : "");
  if (per_node > 1 && a.has("hw"))
    std::printf("  (the collectives are simulated with one rank per host: NVLink within a node is not simulated yet,\n"
                "  so %d ranks per node is reported, not used)\n",
                per_node);
  if (job_ranks == 0 && !t->collectives.empty())
    std::fprintf(stderr,
                 "warning: %s: the trace does not say how many ranks the job had: pass --ranks N to re-simulate its "
                 "collectives\n",
                 t->file.c_str());
  if (job_ranks > 0 && t->world_size > 0 && rank_files > 1 && int(rank_files) < t->world_size)
    std::printf("  (%zu of the job's %d ranks have a file here)\n", rank_files, t->world_size);
  if (!a.has("hw")) {
    for (const auto& x : t->transfers)
      std::printf("  transfer %-40.40s %12llu B %10.3f ms  %s -> %s\n", x.tensor.c_str(),
                  static_cast<unsigned long long>(x.bytes), x.duration * 1e3, x.src_device.c_str(),
                  x.dst_device.c_str());
    for (const auto& c : t->collectives)
      std::printf("  %-9s %-40.40s %14s %10.3f ms%s\n", c.kind.c_str(), c.name.c_str(),
                  c.bytes_known ? fmt::format("{} B", c.bytes).c_str() : "unknown size", c.duration * 1e3,
                  c.ranks ? fmt::format("  ({} ranks)", c.ranks).c_str() : "");
    print_steps(t.value(), traces::step_reports(t.value(), traces::ReplayResult{}), false);
    std::printf("\nWith --hw PROFILE [--transport T] [--ranks N] each communication event is re-simulated there.\n");
    return 0;
  }
  transports::register_builtin_transports();
  const std::string transport = a.get("transport", "grpc");
  if (!transports::find_transport(transport))
    return report_error(Error::at("", "--transport", one_of_names(transport, transports::transport_names()),
                                  unknown_name(transport, transports::transport_names())));
  models::Catalog cat;
  // Each re-simulated event is a process of its own (a transfer once per size and placement): estimate them all and
  // refuse the replay before the first starts when they exceed the budget.
  auto transfer_job = [&](const traces::TraceTransfer& x) {
    sim::TransferJob j;
    j.transport = transport;
    j.sizes = {std::max<uint64_t>(x.bytes, 4)};
    j.steps = 2;
    j.src = placement(x.src_device);
    j.dst = placement(x.dst_device);
    return j;
  };
  // A collective's ranks: its group's size as the trace gives it, else the job's; --ranks sets the job's, and a
  // collective of a smaller group than the trace's world keeps its group (at most --ranks).
  auto ranks_of = [&](const traces::TraceCollective& c) {
    if (ranks_arg.value() > 0)
      return c.ranks > 0 && shape.ranks > 0 && c.ranks < shape.ranks ? std::min(c.ranks, job_ranks) : job_ranks;
    return c.ranks > 0 ? c.ranks : job_ranks;
  };
  JobEstimate need;
  need.job = "tensorpath replay";
  std::vector<double> transfer_seconds(t->transfers.size(), 0), collective_seconds(t->collectives.size(), 0);
  {
    auto cl2 = frontend::cluster_for(cat, a.get("hw"), 2, a.get("switch"));
    if (!cl2.ok()) return report_error(cl2.error());
    std::set<std::tuple<uint64_t, int, int>> seen;
    for (size_t xi = 0; xi < t->transfers.size(); ++xi) {
      const auto& x = t->transfers[xi];
      if (!x.bytes_known) continue; // kept at its recorded time (a warning above says why)
      const sim::TransferJob j = transfer_job(x);
      if (!seen.insert({x.bytes, int(j.src.is_gpu()), int(j.dst.is_gpu())}).second) continue;
      auto e = sim::estimate_transfer(cl2.value(), j);
      for (auto& term : e.terms)
        if (!term.parameter.empty()) term.parameter = "transfer \"" + x.tensor + "\" of the trace";
      transfer_seconds[xi] = e.seconds;
      need.then(e);
    }
    for (size_t ci = 0; ci < t->collectives.size(); ++ci) {
      const auto& c = t->collectives[ci];
      const int ranks = ranks_of(c);
      if (c.kind != "allreduce" || ranks < 2 || !c.bytes_known) continue;
      auto cl = frontend::cluster_for(cat, a.get("hw"), ranks, a.get("switch"));
      if (!cl.ok()) return report_error(cl.error());
      sim::AllreduceJob j;
      j.mode = sim::FabricMode::ANALYTICAL;
      j.ranks = ranks;
      j.bytes = double(c.bytes);
      j.gpu = true;
      auto e = sim::estimate_allreduce(cl.value(), j);
      e.rename_parameter("ranks =",
                         ranks_arg.value() > 0 ? "--ranks"
                         : c.ranks > 0
                             ? "the group size of " + c.kind + " \"" + c.name + "\" in the trace (--ranks overrides):"
                             : "the job's ranks, from " + shape.ranks_from + " (--ranks overrides):");
      collective_seconds[ci] = e.seconds;
      need.then(e);
    }
  }
  if (auto st = check_budget(need, "re-simulate a smaller trace, or give smaller --ranks"); !st.ok())
    return report_error(st.error());
  frontend::ProgressLine line("replay", frontend::ProgressLine::stderr_is_terminal());
  line.set_estimate(need.seconds);
  double done_seconds = 0;
  const size_t events = t->transfers.size() + t->collectives.size();
  auto show = [&](size_t event, const std::string& what) {
    line.update(need.seconds > 0 ? done_seconds / need.seconds : 0,
                "event " + std::to_string(event + 1) + "/" + std::to_string(events) + " (" + what + ")");
  };
  std::printf("\nre-simulated on %s (transfers through %s; allreduces as rings, analytical fabric mode):\n\n",
              a.get("hw").c_str(), transport.c_str());
  std::printf("%-10s %-36s %12s %14s %14s %8s\n", "event", "name", "bytes", "recorded[ms]", "simulated[ms]", "ratio");
  double rec_total = 0, sim_total = 0;
  int status = 0;
  std::vector<double> transfer_new(t->transfers.size(), -1), collective_new(t->collectives.size(), -1);
  std::map<std::tuple<uint64_t, int, int>, double> cache; // (bytes, src gpu?, dst gpu?) -> seconds
  for (size_t xi = 0; xi < t->transfers.size(); ++xi) {
    const auto& x = t->transfers[xi];
    if (!x.bytes_known) { // a warning above said why; kept at its recorded time
      std::printf("%-10s %-36.36s %12s %14.3f %14s %8s\n", "transfer", x.tensor.c_str(), "unknown", x.duration * 1e3,
                  "(size?)", "-");
      continue;
    }
    const Location src = placement(x.src_device), dst = placement(x.dst_device);
    const auto key = std::make_tuple(x.bytes, int(src.is_gpu()), int(dst.is_gpu()));
    if (!cache.count(key)) {
      auto cluster = frontend::cluster_for(cat, a.get("hw"), 2, a.get("switch"));
      if (!cluster.ok()) return report_error(cluster.error());
      const sim::TransferJob j = transfer_job(x);
      const models::ClusterProfile cl = cluster.value();
      show(xi, "transfer " + x.tensor);
      auto child = run_isolated([&]() -> Result<std::string> {
        auto r = sim::run_transfer_job(cl, j);
        if (!r.ok()) return r.error();
        return fmt::format("{:.17g}", r->points.at(0).steady_latency);
      });
      done_seconds += transfer_seconds[xi];
      line.finish();
      if (!child.ok()) {
        std::printf("%-10s %-36.36s ERROR %s\n", "transfer", x.tensor.c_str(), child.error().message().c_str());
        status = 1;
        continue;
      }
      cache[key] = std::stod(child.value());
    }
    const double s = cache[key];
    transfer_new[xi] = s;
    rec_total += x.duration, sim_total += s;
    std::printf("%-10s %-36.36s %12llu %14.3f %14.3f %8.2f\n", "transfer", x.tensor.c_str(),
                static_cast<unsigned long long>(x.bytes), x.duration * 1e3, s * 1e3,
                x.duration > 0 ? s / x.duration : 0.0);
  }
  for (size_t ci = 0; ci < t->collectives.size(); ++ci) {
    const auto& c = t->collectives[ci];
    if (c.kind != "allreduce") {
      std::printf("%-10s %-36.36s %12llu %14.3f %14s %8s\n", c.kind.c_str(), c.name.c_str(),
                  static_cast<unsigned long long>(c.bytes), c.duration * 1e3, "(not yet)", "-");
      continue;
    }
    if (!c.bytes_known) { // a warning above said why; kept at its recorded time
      std::printf("%-10s %-36.36s %12s %14.3f %14s %8s\n", c.kind.c_str(), c.name.c_str(), "unknown", c.duration * 1e3,
                  "(size?)", "-");
      continue;
    }
    const int ranks = ranks_of(c);
    if (ranks < 2) {
      std::printf("%-10s %-36.36s %12llu %14.3f %14s %8s\n", c.kind.c_str(), c.name.c_str(),
                  static_cast<unsigned long long>(c.bytes), c.duration * 1e3, "(--ranks?)", "-");
      continue;
    }
    auto cluster = frontend::cluster_for(cat, a.get("hw"), ranks, a.get("switch"));
    if (!cluster.ok()) return report_error(cluster.error());
    sim::AllreduceJob j;
    j.mode = sim::FabricMode::ANALYTICAL;
    j.ranks = ranks;
    j.bytes = double(c.bytes);
    j.gpu = true;
    const models::ClusterProfile cl = cluster.value();
    show(t->transfers.size() + ci, c.kind + " " + c.name);
    auto child = run_isolated([&]() -> Result<std::string> {
      auto r = sim::run_allreduce(cl, j);
      if (!r.ok()) return r.error();
      return fmt::format("{:.17g}", r->seconds);
    });
    done_seconds += collective_seconds[ci];
    line.finish();
    if (!child.ok()) {
      std::printf("%-10s %-36.36s ERROR %s\n", c.kind.c_str(), c.name.c_str(), child.error().message().c_str());
      status = 1;
      continue;
    }
    const double s = std::stod(child.value());
    collective_new[ci] = s;
    rec_total += c.duration, sim_total += s;
    std::printf("%-10s %-36.36s %12llu %14.3f %14.3f %8.2f\n", c.kind.c_str(), c.name.c_str(),
                static_cast<unsigned long long>(c.bytes), c.duration * 1e3, s * 1e3,
                c.duration > 0 ? s / c.duration : 0.0);
  }
  const auto rep = traces::replay_step(t.value(), transfer_new, collective_new);
  std::printf("\ncommunication re-simulated: recorded %.3f ms, simulated %.3f ms (events not re-simulated keep their\n"
              "recorded time)\n",
              rec_total * 1e3, sim_total * 1e3);
  std::printf(
      "whole trace: recorded %.3f ms, replayed on %s %.3f ms (%+.1f %%). Replaying on the fabric the trace was\n"
      "recorded on, the difference is the simulator's error on this trace. The recorded order stands for\n"
      "dependencies: each event keeps its lanes (device; a transfer's two ends; a collective's every device of its\n"
      "rank) and its gaps.\n",
      rep.recorded_span * 1e3, a.get("hw").c_str(), rep.replayed_span * 1e3,
      rep.recorded_span > 0 ? 100 * (rep.replayed_span / rep.recorded_span - 1) : 0.0);
  print_steps(t.value(), traces::step_reports(t.value(), rep), true);
  return status;
}

} // namespace

Command replay_command()
{
  frontend::CommandSpec s;
  s.max_positionals = SIZE_MAX;
  s.name = "replay";
  s.summary = "read a recorded trace (TF/Horovod timeline, PyTorch profiler, Chakra) and re-simulate its communication";
  s.usage = "TRACE... | DIR [--ranks N] [--ranks-per-node N] [--hw PROFILE [--transport T] [--switch S]]";
  s.options = {
      {"hw", 0, true, "PROFILE", "re-simulate each communication event on this NIC, host or cluster profile"},
      {"transport", 0, true, "T", "transfers (RecvTensor, sends) through this transport (default grpc)"},
      {"ranks", 0, true, "N", "the job's ranks (overrides the trace's; needed when the trace does not say)"},
      {"ranks-per-node", 0, true, "N",
       "ranks that share a node (the traces name no hosts: else one per node is assumed)"},
      {"switch", 0, true, "S", "switch profile"},
  };
  s.details =
      "Formats are detected: TF timeline (Chrome trace with RecvTensor labels), Horovod timeline (may be\n"
      "unterminated), PyTorch profiler/Kineto (nccl: events), Chakra JSON (concatenated objects); gzip'd files\n"
      "(.json.gz) are read as they are. What a reader cannot read in full is a warning on stderr.\n"
      "Recorded compute is kept; each communication event is re-simulated on its own, then the step is replayed\n"
      "with the new times (recorded order as dependencies) and compared with the recorded step.\n"
      "Steps: Kineto ProfilerStep#N spans, Horovod CYCLE_START cycles, TF step ids; else the whole trace is one\n"
      "step. Each step is reported recorded and replayed (its time from its first event to its last; compute,\n"
      "communication, exposed communication, overlap), with a median and mean over the whole steps: steps cut\n"
      "by the trace's start or end are named and left out.\n"
      "Ranks: from the trace (Kineto distributedInfo, process groups, Horovod's ranks, the ranks or TF tasks its\n"
      "events name); --ranks overrides. Several files of one job (one per rank: rank0.json rank1.json, or their\n"
      "directory) replay together; each file's rank comes from its metadata (Kineto distributedInfo.rank), and\n"
      "the files must name distinct ranks of one world size.";
  return {s, &run_replay};
}

} // namespace tp::cli
