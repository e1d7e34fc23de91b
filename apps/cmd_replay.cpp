// `tensorpath replay TRACE`: read a recorded trace (TF timeline, Horovod timeline, PyTorch profiler, Chakra JSON),
// summarize what it recorded (compute per device, transfers, collectives) and, with --hw, re-simulate each recorded
// communication event on that fabric (a transfer through --transport between two hosts, an allreduce as a ring over
// --ranks hosts in the analytical fabric mode), print recorded against simulated, and replay the step with the recorded
// compute and the new communication times (traces/replay: the recorded order stands for dependencies).
#include "apps/commands.hpp"
#include "apps/lib/hw_resolve.hpp"
#include "apps/lib/progress_line.hpp"
#include "apps/lib/replay_report.hpp"
#include "core/common/file_io.hpp"
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
#include <optional>
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

/// Warnings collected in one place: each message once, with how many events it concerns and the first's name.
class Warnings {
public:
  void add(const std::string& message, const std::string& example = {})
  {
    auto it = index_.find(message);
    if (it == index_.end()) {
      index_[message] = list_.size();
      list_.push_back({message, example, 1});
    } else
      ++list_[it->second].count;
  }
  std::vector<std::string> lines() const
  {
    std::vector<std::string> out;
    for (const auto& w : list_)
      out.push_back(w.count > 1         ? fmt::format("{} ({} events, the first \"{}\")", w.message, w.count, w.example)
                    : w.example.empty() ? w.message
                                        : fmt::format("{} (\"{}\")", w.message, w.example));
    return out;
  }

private:
  struct W {
    std::string message, example;
    size_t count;
  };
  std::vector<W> list_;
  std::map<std::string, size_t> index_;
};

/// The warnings the trace itself gives: the reader's (what it could not read in full, events it dropped), and
/// communication events of zero or unknown size.
void trace_warnings(const traces::Trace& t, Warnings& w)
{
  for (const auto& r : t.warnings)
    w.add("reader: " + t.file + ": " + r);
  for (const auto& x : t.transfers)
    if (!x.bytes_known)
      w.add("transfer of unknown size (the trace does not say): kept at its recorded time", x.tensor);
    else if (x.bytes == 0)
      w.add("transfer of 0 bytes in the trace: simulated as the smallest message (4 B); check the trace", x.tensor);
  for (const auto& c : t.collectives)
    if (!c.bytes_known)
      w.add(c.kind + " of unknown size (the trace does not say): kept at its recorded time", c.name);
    else if (c.bytes == 0)
      w.add(c.kind + " of 0 bytes in the trace: its time is only the fixed costs; check the trace", c.name);
}

void print_warnings(const std::vector<std::string>& lines)
{
  if (lines.empty()) return;
  std::printf("\n%zu warning(s):\n", lines.size());
  for (const auto& l : lines)
    std::printf("  warning: %s\n", l.c_str());
}

/// The job a replay reads: the merged trace, its files, its shape and the ranks the options and the trace give.
struct ReplayJob {
  std::vector<std::string> files;
  size_t rank_files = 0;
  traces::Trace trace;
  long ranks_option = 0;    ///< --ranks; 0 when not given
  long per_node_option = 0; ///< --ranks-per-node; 0 when not given
  traces::JobShape shape;
  int job_ranks = 0, per_node = 0;
  Warnings warnings;
  std::map<std::string, double> busy; ///< recorded compute seconds per device
  frontend::ReplayHost host;
  /// How the collectives are re-simulated: "ring" or "nccl" (--collectives, or chosen from the trace: `auto`), and why.
  std::string collectives = "ring";
  std::string collectives_why;
};

/// --collectives auto (the default): the NCCL model when the trace's collectives are NCCL's (a Kineto `nccl:*` call,
/// a Chakra or Kineto `ncclKernel_*`/`ncclDevKernel_*`, a Horovod operation with an `NCCL_*` phase), whose every
/// kind it times; else rings. Errors: a word other than auto, ring, nccl.
Status choose_collectives(const frontend::ParsedArgs& a, ReplayJob& job)
{
  const std::string m = a.get("collectives", "auto");
  if (m != "auto" && m != "ring" && m != "nccl")
    return Error::at("", "--collectives", "auto, ring or nccl", unknown_name(m, {"auto", "ring", "nccl"}));
  if (m != "auto") {
    job.collectives = m;
    job.collectives_why = "--collectives " + m;
    return ok_status();
  }
  for (const auto& c : job.trace.collectives)
    if (c.library == "nccl" || to_lower(c.name).find("nccl") != std::string::npos) {
      job.collectives = "nccl";
      job.collectives_why = "the trace's collectives are NCCL's (\"" + c.name.substr(0, 60) + "\"" +
                            (c.library == "nccl" ? " ran an NCCL phase" : "") + "); --collectives ring for rings";
      return ok_status();
    }
  job.collectives = "ring";
  job.collectives_why = job.trace.collectives.empty() ? "no collectives in the trace"
                                                      : "none of the trace's collectives is named as NCCL's; "
                                                        "--collectives nccl for the NCCL model";
  return ok_status();
}

/// Read the traces the arguments name, merge the ranks' files and work out the job, its warnings and the head's host.
Result<ReplayJob> read_replay_job(const frontend::ParsedArgs& a)
{
  auto files = trace_files(a.positional());
  if (!files.ok()) return files.error();
  std::vector<traces::Trace> read;
  for (const auto& f : files.value()) {
    auto one = traces::read_trace(f);
    if (!one.ok()) return one.error();
    read.push_back(std::move(one.value()));
  }
  const size_t rank_files = read.size();
  auto t = traces::merge_rank_traces(std::move(read));
  if (!t.ok()) return t.error();
  auto ranks_arg = a.get_int("ranks", 0, 1, 100000);
  if (!ranks_arg.ok()) return ranks_arg.error();
  auto per_node_arg = a.get_int("ranks-per-node", 0, 1, 100000);
  if (!per_node_arg.ok()) return per_node_arg.error();
  if (ranks_arg.value() > 0 && rank_files > 1) { // the files' own ranks must fit in the job --ranks names
    int highest = int(rank_files) - 1;
    for (const auto& c : t->collectives)
      highest = std::max(highest, c.rank);
    if (highest >= ranks_arg.value())
      return Error::at(
          "", "--ranks",
          fmt::format("at least {} (the {} rank files given name ranks up to {})", highest + 1, rank_files, highest),
          std::to_string(ranks_arg.value()));
  }
  ReplayJob job;
  job.files = std::move(files.value());
  job.rank_files = rank_files;
  job.trace = std::move(t.value());
  job.ranks_option = ranks_arg.value();
  job.per_node_option = per_node_arg.value();
  job.shape = traces::infer_job(job.trace);
  const traces::JobShape& shape = job.shape;
  // The job: ranks and ranks per node, from the trace unless an option says.
  job.job_ranks = job.ranks_option > 0 ? int(job.ranks_option) : shape.ranks;
  job.per_node = job.per_node_option > 0 ? int(job.per_node_option) : shape.ranks_per_node;
  trace_warnings(job.trace, job.warnings);
  if (job.job_ranks == 0 && !job.trace.collectives.empty())
    job.warnings.add(
        "the trace does not say how many ranks the job had: pass --ranks N to re-simulate its collectives");

  for (const auto& o : job.trace.ops)
    job.busy[o.device] += o.duration;
  frontend::ReplayHost& host = job.host;
  host.ranks = job.job_ranks;
  host.ranks_from = job.ranks_option > 0 ? "--ranks" : shape.ranks > 0 ? shape.ranks_from : "";
  host.ranks_per_node = job.per_node;
  host.per_node_from = job.per_node_option > 0 ? "--ranks-per-node"
                       : job.per_node > 0      ? shape.per_node_from
                                               : "assumed one per node (the trace names no hosts)";
  return job;
}

/// Print the head: what the trace holds, the host and fabric assumed, the job, and how many warnings follow at the end.
void print_head(const frontend::ParsedArgs& a, const ReplayJob& job, size_t warning_count)
{
  const traces::Trace& t = job.trace;
  const frontend::ReplayHost& host = job.host;
  const traces::JobShape& shape = job.shape;
  const int job_ranks = job.job_ranks, per_node = job.per_node;
  const size_t rank_files = job.rank_files;
  std::printf("%s (%s): %zu compute op(s) on %zu device(s), %zu transfer(s), %zu collective(s), span %.3f ms\n",
              t.file.c_str(), t.format.c_str(), t.ops.size(), job.busy.size(), t.transfers.size(), t.collectives.size(),
              t.span() * 1e3);
  for (const auto& [dev, s] : job.busy)
    std::printf("  compute on %-50s %10.3f ms (kept as recorded)\n", dev.c_str(), s * 1e3);
  if (!host.hw.empty())
    std::printf("assumed host and fabric (--hw %s): host \"%s\" for every rank,\n  NIC \"%s\" at %.1f "
                "Gb/s line rate (its data rate after encoding), %s; transfers through %s\n",
                host.hw.c_str(), host.host_profile.c_str(), host.nic.c_str(), host.line_rate * 8 / 1e9,
                host.switch_name.empty() ? "hosts back to back" : ("switch \"" + host.switch_name + "\"").c_str(),
                host.transport.c_str());
  std::printf("job: %s; %s%s\n",
              job.ranks_option > 0 ? fmt::format("{} rank(s) (--ranks)", job_ranks).c_str()
              : shape.ranks > 0    ? fmt::format("{} rank(s) (from {})", job_ranks, shape.ranks_from).c_str()
                                   : "ranks not known (the trace does not say; --ranks N)",
              job.per_node_option > 0 ? fmt::format("{} per node (--ranks-per-node)", per_node).c_str()
              : per_node > 0          ? fmt::format("{} per node (from {})", per_node, shape.per_node_from).c_str()
                                      : "assumed one rank per node (the trace names no hosts; --ranks-per-node N)",
              rank_files > 1 ? fmt::format("; {} rank files", rank_files).c_str() : "");
  if (per_node > 1 && a.has("hw") && job.collectives != "nccl")
    std::printf("  (the collectives are simulated as rings with one rank per host, so %d ranks per node is reported,\n"
                "  not used: --collectives nccl puts them on NVLink inside a node and the NICs between nodes)\n",
                per_node);
  if (a.has("hw") && job.collectives == "nccl")
    std::printf("collectives: NCCL's algorithms and tuning model on nodes of %s (models/nccl; its cluster's topology "
                "if it has one), %d rank(s) per node or the collective's ranks if fewer (algorithm column: nodes x "
                "ranks per node); %s\n",
                a.get("hw").c_str(), per_node > 0 ? per_node : 1, job.collectives_why.c_str());
  else if (a.has("hw") && !t.collectives.empty())
    std::printf("collectives: allreduces as rings on the simulated fabric, one rank per host; %s\n",
                job.collectives_why.c_str());
  if (job_ranks > 0 && t.world_size > 0 && rank_files > 1 && int(rank_files) < t.world_size)
    std::printf("  (%zu of the job's %d ranks have a file here)\n", rank_files, t.world_size);
  if (warning_count) std::printf("%zu warning(s), listed at the end\n", warning_count);
}

/// Without --hw: print what the trace recorded (its head, every communication event, the steps) and the warnings.
int print_recorded_trace(const frontend::ParsedArgs& a, const ReplayJob& job)
{
  const traces::Trace& t = job.trace;
  const auto lines = job.warnings.lines();
  print_head(a, job, lines.size());
  for (const auto& x : t.transfers)
    std::printf("  transfer %-40.40s %14s %10.3f ms  %s -> %s\n", x.tensor.c_str(),
                x.bytes_known ? fmt::format("{} B", x.bytes).c_str() : "unknown size", x.duration * 1e3,
                x.src_device.c_str(), x.dst_device.c_str());
  for (const auto& c : t.collectives)
    std::printf("  %-9s %-40.40s %14s %10.3f ms%s\n", c.kind.c_str(), c.name.c_str(),
                c.bytes_known ? fmt::format("{} B", c.bytes).c_str() : "unknown size", c.duration * 1e3,
                c.ranks ? fmt::format("  ({} ranks)", c.ranks).c_str() : "");
  print_steps(t, traces::step_reports(t, traces::ReplayResult{}), false);
  std::printf("\nWith --hw PROFILE [--transport T] [--ranks N] each communication event is re-simulated there.\n");
  print_warnings(lines);
  return 0;
}

/// The fabric of --hw the events are re-simulated on: its clusters (read from the profiles once per host count) and
/// the simulated job and cache key of each communication event.
class ReplayFabric {
public:
  /// `transport`: --transport; --hw and --switch are read from `a`.
  ReplayFabric(std::string transport_name, const frontend::ParsedArgs& a, const ReplayJob& job)
      : transport_(std::move(transport_name)), hw_(a.get("hw")), sw_(a.get("switch")), job_(job),
        nccl_(job.collectives == "nccl")
  {
  }

  /// --collectives nccl: every collective timed by the NCCL collective model on nodes of --hw's host.
  bool nccl() const { return nccl_; }

  /// A point-to-point kind: NCCL's send, recv, or a group of them (PyTorch's batched isend/irecv).
  static bool p2p(const std::string& kind) { return kind == "send" || kind == "recv" || kind == "sendrecv"; }

  /// The NCCL op of a recorded collective kind ("allreduce", "reducescatter", ...); none for the kinds it lacks. A
  /// point-to-point send between two ranks is timed as NCCL's point-to-point sends of a two-rank alltoall (NCCL runs
  /// alltoall as grouped ncclSend/ncclRecv; over two ranks each rank sends the other half the buffer).
  static std::optional<models::nccl::Op> nccl_op(const std::string& kind)
  {
    if (p2p(kind)) return models::nccl::Op::ALLTOALL;
    if (kind == "allreduce") return models::nccl::Op::ALL_REDUCE;
    if (kind == "allgather") return models::nccl::Op::ALL_GATHER;
    if (kind == "reducescatter" || kind == "reduce_scatter") return models::nccl::Op::REDUCE_SCATTER;
    if (kind == "broadcast") return models::nccl::Op::BROADCAST;
    if (kind == "alltoall") return models::nccl::Op::ALLTOALL;
    return std::nullopt;
  }

  /// The NCCL setup of a recorded collective: its ranks as nodes of --hw's host with the job's ranks per node (one when
  /// neither the trace nor --ranks-per-node says, the head's stated assumption; at most the collective's ranks), on
  /// --hw's topology when it is a cluster with one, or why it cannot run there.
  Result<models::nccl::CollectiveSetup> nccl_setup(const traces::TraceCollective& c)
  {
    auto cl = cluster_of(1);
    if (!cl.ok()) return cl.error();
    const models::HostProfile& host = (*cl)->host(0);
    // A send has one peer: two ranks, on one node when the trace names the peer and it shares the recording rank's
    // node, else on two (pipeline stages across nodes, as Megatron-LM places them; a warning says so).
    const int ranks = p2p(c.kind) ? 2 : ranks_of(c);
    const int gpus = int(host.gpus.size());
    const int per_node = p2p(c.kind) ? (p2p_same_node(c).value_or(false) ? 2 : 1)
                                     : std::min(ranks, job_.per_node > 0 ? job_.per_node : 1); // the head's assumption
    if (per_node > gpus || per_node < 1 || ranks % per_node != 0)
      return Error::at(
          "", "--ranks-per-node",
          fmt::format("ranks per node that divide the {} ranks and fit {}'s {} GPUs", ranks, host.name, gpus),
          std::to_string(per_node));
    models::nccl::CollectiveSetup s;
    s.op = *nccl_op(c.kind);
    s.nodes = ranks / per_node;
    s.gpus_per_node = per_node;
    s.topology = (*cl)->topology;
    return models::nccl::complete_setup(s, host);
  }

  /// Whether a send's or recv's peer runs on the recording rank's node, with the job's ranks per node placed in rank
  /// order (torchrun's local ranks); none, with why in `why`, when that cannot be said: the trace names no peer, or
  /// no recording rank, or a peer that is the rank itself or beyond the job's ranks.
  std::optional<bool> p2p_same_node(const traces::TraceCollective& c, std::string* why = nullptr) const
  {
    const int rank = c.rank >= 0 ? c.rank : job_.trace.rank; // one rank's file: the rank it recorded
    const char* unknown = c.peer < 0                                       ? "its peer is not in the trace"
                          : rank < 0                                       ? "the recording rank is not known"
                          : c.peer == rank                                 ? "its peer is the recording rank"
                          : job_.job_ranks > 0 && c.peer >= job_.job_ranks ? "its peer is beyond the job's ranks"
                                                                           : nullptr;
    if (unknown) {
      if (why) *why = unknown;
      return std::nullopt;
    }
    const int per_node = job_.per_node > 0 ? job_.per_node : 1;
    return rank / per_node == c.peer / per_node;
  }

  /// The bytes of a recorded collective as nccl-tests counts them: the trace gives each rank's input (Kineto's "In
  /// msg nelems", Horovod's tensor, Chakra's comm size), which for an all_gather is one rank's share of the output.
  static double nccl_bytes(const traces::TraceCollective& c, int ranks)
  {
    if (p2p(c.kind)) return 2.0 * double(c.bytes); // the two-rank alltoall whose half to the peer is the message
    return c.kind == "allgather" ? double(c.bytes) * ranks : double(c.bytes);
  }

  /// The cluster of --hw with at least `min_hosts` hosts, read from its profiles once per count (not once per event).
  Result<const models::ClusterProfile*> cluster_of(int min_hosts)
  {
    if (auto it = clusters_.find(min_hosts); it != clusters_.end()) return &it->second;
    auto cl = frontend::cluster_for(cat_, hw_, min_hosts, sw_);
    if (!cl.ok()) return cl.error();
    return &clusters_.emplace(min_hosts, std::move(cl.value())).first->second;
  }

  // Each distinct simulated job is simulated once, in a process of its own: a transfer per size and placement, a
  // collective per kind, size and group (the cache key is the job's whole input); identical events reuse it.

  /// The transfer job that re-simulates a recorded transfer.
  sim::TransferJob transfer_job(const traces::TraceTransfer& x) const
  {
    sim::TransferJob j;
    j.transport = transport_;
    j.sizes = {std::max<uint64_t>(x.bytes, 4)};
    j.steps = 2;
    j.src = placement(x.src_device);
    j.dst = placement(x.dst_device);
    return j;
  }
  /// The cache key of a transfer job: its whole input.
  std::string transfer_key(const sim::TransferJob& j) const
  {
    return fmt::format("transfer|{}|{}|{}|{}|{}|{}", transport_, j.sizes[0], j.src.is_gpu(), j.dst.is_gpu(), hw_, sw_);
  }
  /// A collective's ranks: its group's size as the trace gives it, else the job's; --ranks sets the job's, and a
  /// collective of a smaller group than the trace's world keeps its group (at most --ranks).
  int ranks_of(const traces::TraceCollective& c) const
  {
    if (job_.ranks_option > 0)
      return c.ranks > 0 && job_.shape.ranks > 0 && c.ranks < job_.shape.ranks ? std::min(c.ranks, job_.job_ranks)
                                                                               : job_.job_ranks;
    return c.ranks > 0 ? c.ranks : job_.job_ranks;
  }
  /// The allreduce job that re-simulates a recorded collective (analytical fabric mode).
  sim::AllreduceJob collective_job(const traces::TraceCollective& c) const
  {
    sim::AllreduceJob j;
    j.mode = sim::FabricMode::ANALYTICAL;
    j.ranks = ranks_of(c);
    j.bytes = double(c.bytes);
    j.gpu = true;
    return j;
  }
  /// The cache key of an allreduce job: its whole input.
  std::string collective_key(const sim::AllreduceJob& j) const
  {
    return fmt::format("allreduce|analytical|{}|{}|{}|{}|{}|{}", j.bytes, j.ranks, j.ranks_per_host, j.gpu, hw_, sw_);
  }
  /// Why a collective is kept at its recorded time; empty when it is simulated.
  std::string kept_why(const traces::TraceCollective& c) const
  {
    if (!c.bytes_known) return "size unknown";
    if (nccl_ && !nccl_op(c.kind))
      return c.kind + " is not one of NCCL's operations the model times (reduce, gather, scatter and barriers are "
                      "kept)";
    if (nccl_ && p2p(c.kind)) return ""; // a send has its two ranks whatever the group
    if (!nccl_ && c.kind != "allreduce")
      return c.kind + " is not simulated as a ring (--collectives nccl times every NCCL collective)";
    if (ranks_of(c) < 2) return ranks_of(c) == 0 ? "ranks not known (--ranks N)" : "a group of one rank";
    return "";
  }

  /// --transport, the transport of the transfers.
  const std::string& transport() const { return transport_; }
  /// --hw, the profile the events are re-simulated on.
  const std::string& hw() const { return hw_; }

private:
  const std::string transport_;
  models::Catalog cat_; // constructed between --transport and --hw, as the command always did
  const std::string hw_, sw_;
  const ReplayJob& job_;
  const bool nccl_;
  std::map<int, models::ClusterProfile> clusters_;
};

/// Fill in the head's host and fabric from the first host of the two-host cluster of --hw.
Status describe_host(ReplayFabric& fabric, frontend::ReplayHost& host)
{
  auto cl2 = fabric.cluster_of(2);
  if (!cl2.ok()) return cl2.error();
  const auto& h0 = (*cl2)->host(0);
  host.hw = fabric.hw();
  host.host_profile = h0.name;
  host.nic = h0.nics.empty() ? "none" : h0.nics[0].nic.name;
  host.line_rate = h0.nics.empty() ? 0 : h0.nics[0].nic.line_rate;
  host.switch_name = (*cl2)->network_switch.name;
  host.transport = fabric.transport();
  return ok_status();
}

/// The estimate of the whole replay and of each distinct simulated job.
struct ReplayEstimate {
  JobEstimate need;
  std::map<std::string, double> seconds; ///< key -> estimated seconds
};

/// Estimate every distinct job of the replay (each transfer and collective that is re-simulated), once per key.
Result<ReplayEstimate> estimate_replay(const ReplayJob& job, ReplayFabric& fabric)
{
  ReplayEstimate out;
  JobEstimate& need = out.need;
  need.job = "tensorpath replay";
  std::map<std::string, double>& estimate = out.seconds;
  auto cl2 = fabric.cluster_of(2);
  if (!cl2.ok()) return cl2.error();
  for (const auto& x : job.trace.transfers) {
    if (!x.bytes_known) continue;
    const sim::TransferJob j = fabric.transfer_job(x);
    const std::string key = fabric.transfer_key(j);
    if (estimate.count(key)) continue;
    auto e = sim::estimate_transfer(**cl2, j);
    for (auto& term : e.terms)
      if (!term.parameter.empty()) term.parameter = "transfer \"" + x.tensor + "\" of the trace";
    estimate[key] = e.seconds;
    need.then(e);
  }
  for (const auto& c : job.trace.collectives) {
    if (!fabric.kept_why(c).empty() || fabric.nccl()) continue; // the NCCL model is a closed form: nothing to budget
    const sim::AllreduceJob j = fabric.collective_job(c);
    const std::string key = fabric.collective_key(j);
    if (estimate.count(key)) continue;
    auto cl = fabric.cluster_of(j.ranks);
    if (!cl.ok()) return cl.error();
    auto e = sim::estimate_allreduce(**cl, j);
    e.rename_parameter("ranks =",
                       job.ranks_option > 0 ? "--ranks"
                       : c.ranks > 0
                           ? "the group size of " + c.kind + " \"" + c.name + "\" in the trace (--ranks overrides):"
                           : "the job's ranks, from " + job.shape.ranks_from + " (--ranks overrides):");
    estimate[key] = e.seconds;
    need.then(e);
  }
  return out;
}

/// Re-simulates the trace's communication events one by one (each distinct job once), with a progress line, and
/// fills in the report's rows and the events' new times.
class EventReplay {
public:
  EventReplay(ReplayJob& job, ReplayFabric& fabric, ReplayEstimate& estimate)
      : job_(job), fabric_(fabric), estimate_(estimate), line_("replay", frontend::ProgressLine::stderr_is_terminal())
  {
    line_.set_estimate(estimate_.need.seconds);
    events_ = job_.trace.transfers.size() + job_.trace.collectives.size();
    report_.host = job_.host;
    report_.format = job_.trace.format;
    report_.files = job_.files;
    transfer_new_.assign(job_.trace.transfers.size(), -1);
    collective_new_.assign(job_.trace.collectives.size(), -1);
  }

  /// Re-simulate each transfer of known size through the transport; an error when its cluster cannot be read.
  Status simulate_transfers()
  {
    const traces::Trace& t = job_.trace;
    for (size_t xi = 0; xi < t.transfers.size(); ++xi) {
      const auto& x = t.transfers[xi];
      frontend::ReplayRow row = row_of("transfer", x.tensor, x.bytes, x.bytes_known, x.duration, x.step, x.rank);
      if (!x.bytes_known) { // a warning says why
        row.kept = "size unknown";
        report_.rows.push_back(row);
        continue;
      }
      const sim::TransferJob j = fabric_.transfer_job(x);
      const std::string key = fabric_.transfer_key(j);
      row.algorithm = fabric_.transport() + " transfer";
      row.reused = cache_.has(key);
      if (!row.reused) show(xi, "transfer " + x.tensor);
      auto cluster = fabric_.cluster_of(2);
      if (!cluster.ok()) return cluster.error();
      const models::ClusterProfile& cl = **cluster;
      auto child = cache_.get(key, [&]() -> Result<std::string> {
        return run_isolated([&]() -> Result<std::string> {
          auto r = sim::run_transfer_job(cl, j);
          if (!r.ok()) return r.error();
          return fmt::format("{:.17g}", r->points.at(0).steady_latency);
        });
      });
      if (!row.reused) done_seconds_ += estimate_.seconds[key], line_.finish();
      if (!child.ok()) {
        row.kept = "simulation failed: " + child.error().message();
        job_.warnings.add("transfer " + row.kept + ": kept at its recorded time", x.tensor);
        status_ = 1;
        report_.rows.push_back(row);
        continue;
      }
      const double s = std::stod(child.value());
      row.replayed = transfer_new_[xi] = s;
      // At the NIC's line rate alone the bytes take bytes / rate: the rest is the transport's own costs.
      const double wire = job_.host.line_rate > 0 ? double(j.sizes[0]) / job_.host.line_rate : 0;
      row.bottleneck = s > 0 && wire >= s / 2 ? fmt::format("NIC line rate {}%", int(std::lround(100 * wire / s)))
                                              : fmt::format("transport costs (copies, messages): the wire is {}%",
                                                            s > 0 ? int(std::lround(100 * wire / s)) : 0);
      report_.recorded_simulated += x.duration, report_.simulated += s;
      report_.rows.push_back(row);
    }
    return ok_status();
  }

  /// Re-simulate each collective that can be re-simulated, as a ring allreduce; an error when its cluster cannot be
  /// read.
  Status simulate_collectives()
  {
    const traces::Trace& t = job_.trace;
    for (size_t ci = 0; ci < t.collectives.size(); ++ci) {
      const auto& c = t.collectives[ci];
      frontend::ReplayRow row = row_of(c.kind, c.name, c.bytes, c.bytes_known, c.duration, c.step, c.rank);
      row.kept = fabric_.kept_why(c);
      if (!row.kept.empty()) {
        if (c.bytes_known) job_.warnings.add(c.kind + " kept at its recorded time: " + row.kept, c.name);
        report_.rows.push_back(row);
        continue;
      }
      if (fabric_.nccl()) {
        auto setup = fabric_.nccl_setup(c);
        if (!setup.ok()) {
          row.kept = setup.error().message();
          job_.warnings.add(c.kind + " kept at its recorded time: " + row.kept, c.name);
          report_.rows.push_back(row);
          continue;
        }
        const int ranks = setup->nodes * setup->gpus_per_node;
        const double bytes =
            double(models::nccl::effective_bytes(setup->op, uint64_t(ReplayFabric::nccl_bytes(c, ranks)), ranks));
        const auto p = models::nccl::predict(setup.value(), bytes);
        row.ranks = ranks;
        row.algorithm = fmt::format("nccl {}/{} {}x{}", models::nccl::to_string(p.algo),
                                    models::nccl::to_string(p.proto), setup->nodes, setup->gpus_per_node);
        row.replayed = collective_new_[ci] = p.seconds;
        row.bottleneck = p.bottleneck.empty() && bytes == 0 ? "latency only (no bytes)" : p.bottleneck;
        std::string why;
        if (ReplayFabric::p2p(c.kind) && !fabric_.p2p_same_node(c, &why))
          job_.warnings.add(c.kind + ": " + why +
                                "; timed between two nodes (pipeline stages across nodes, as "
                                "Megatron-LM places them)",
                            c.name);
        report_.recorded_simulated += c.duration, report_.simulated += p.seconds;
        report_.rows.push_back(row);
        continue;
      }
      const sim::AllreduceJob j = fabric_.collective_job(c);
      const std::string key = fabric_.collective_key(j);
      row.ranks = j.ranks;
      row.algorithm = "ring (analytical fabric)";
      row.reused = cache_.has(key);
      if (!row.reused) show(t.transfers.size() + ci, c.kind + " " + c.name);
      auto cluster = fabric_.cluster_of(j.ranks);
      if (!cluster.ok()) return cluster.error();
      const models::ClusterProfile& cl = **cluster;
      auto child = cache_.get(key, [&] { return frontend::simulate_allreduce_isolated(cl, j); });
      if (!row.reused) done_seconds_ += estimate_.seconds[key], line_.finish();
      if (!child.ok()) {
        row.kept = "simulation failed: " + child.error().message();
        job_.warnings.add(c.kind + " " + row.kept + ": kept at its recorded time", c.name);
        status_ = 1;
        report_.rows.push_back(row);
        continue;
      }
      const frontend::CollectiveTime ct = frontend::parse_collective_time(child.value());
      row.replayed = collective_new_[ci] = ct.seconds;
      row.bottleneck = frontend::allreduce_bottleneck(ct, j.bytes, j.ranks);
      report_.recorded_simulated += c.duration, report_.simulated += ct.seconds;
      report_.rows.push_back(row);
    }
    return ok_status();
  }

  /// The report filled in so far: a row per event, the host, the format and the files.
  frontend::ReplayReport& report() { return report_; }
  /// The simulations run and reused.
  const frontend::SimulationCache& cache() const { return cache_; }
  /// 1 when a simulation failed (its event kept its recorded time), else 0.
  int status() const { return status_; }
  /// Each transfer's replayed seconds, in the trace's order; -1: kept at its recorded time.
  const std::vector<double>& transfer_seconds() const { return transfer_new_; }
  /// Each collective's replayed seconds, in the trace's order; -1: kept at its recorded time.
  const std::vector<double>& collective_seconds() const { return collective_new_; }

private:
  /// Redraw the progress line at event `event` (0-based) of all the events.
  void show(size_t event, const std::string& what)
  {
    line_.update(estimate_.need.seconds > 0 ? done_seconds_ / estimate_.need.seconds : 0,
                 "event " + std::to_string(event + 1) + "/" + std::to_string(events_) + " (" + what + ")");
  }
  /// The name of step `s` of the trace; empty when the event is in no step.
  std::string step_name(int s) const
  {
    return s >= 0 && size_t(s) < job_.trace.steps.size() ? job_.trace.steps[size_t(s)].name : "";
  }
  /// A table row with what the trace says of an event; the simulation fills in the rest.
  frontend::ReplayRow row_of(std::string event, std::string name, uint64_t bytes, bool bytes_known, double recorded,
                             int step, int rank) const
  {
    frontend::ReplayRow row;
    row.event = std::move(event);
    row.name = std::move(name);
    row.bytes = bytes;
    row.bytes_known = bytes_known;
    row.recorded = recorded;
    row.step = step_name(step);
    row.rank = rank;
    row.algorithm = "-";
    row.bottleneck = "-";
    return row;
  }

  ReplayJob& job_;
  ReplayFabric& fabric_;
  ReplayEstimate& estimate_;
  frontend::ProgressLine line_;
  double done_seconds_ = 0;
  size_t events_ = 0;
  frontend::SimulationCache cache_;
  frontend::ReplayReport report_;
  int status_ = 0;
  std::vector<double> transfer_new_, collective_new_;
};

/// The communication events re-simulated (not kept at their recorded time).
size_t resimulated_events(const frontend::ReplayReport& r)
{
  return size_t(
      std::count_if(r.rows.begin(), r.rows.end(), [](const frontend::ReplayRow& x) { return x.replayed >= 0; }));
}

/// Print the replay on --hw: the head, one row per communication event, the totals, the steps and the warnings.
void print_replay_report(const frontend::ParsedArgs& a, const ReplayJob& job, const ReplayFabric& fabric,
                         const frontend::ReplayReport& report, const traces::ReplayResult& rep)
{
  const std::string& hw = fabric.hw();
  print_head(a, job, report.warnings.size());
  std::printf(
      "\nre-simulated on %s (transfers through %s; %s);\n"
      "each distinct job simulated once: %zu simulation(s) for %zu event(s), identical events reuse its result\n\n",
      hw.c_str(), fabric.transport().c_str(),
      fabric.nccl() ? "collectives by the NCCL collective model, closed form"
                    : "allreduces as rings, analytical fabric mode",
      report.simulations, report.simulations + report.reused);
  std::printf("%-10s %-36s %12s %6s %-24s %12s %12s %7s  %s\n", "event", "name", "bytes", "ranks", "algorithm",
              "recorded[ms]", "replayed[ms]", "ratio", "bottleneck");
  for (const auto& r : report.rows) {
    std::printf("%-10s %-36.36s %12s %6s %-24.24s %12.3f %12s %7s  %s\n", r.event.c_str(), r.name.c_str(),
                r.bytes_known ? std::to_string(r.bytes).c_str() : "unknown",
                r.ranks > 0 ? std::to_string(r.ranks).c_str() : "-", r.algorithm.c_str(), r.recorded * 1e3,
                r.replayed >= 0 ? fmt::format("{:.3f}", r.replayed * 1e3).c_str() : "kept",
                r.replayed >= 0 && r.recorded > 0 ? fmt::format("{:.2f}", r.replayed / r.recorded).c_str() : "-",
                r.replayed >= 0 ? r.bottleneck.c_str() : ("kept at recorded: " + r.kept).c_str());
  }
  if (fabric.nccl())
    std::printf("\nbottleneck: what bounds the collective model's bandwidth term for the algorithm and protocol it "
                "picked\n(NVLink, the NICs, NCCL's per-channel ceilings, a fabric link). A transfer is NIC-bound when "
                "the bytes\nat line rate take half its time or more.\n");
  else
    std::printf(
        "\nbottleneck: a ring allreduce's 2(ranks-1) messages each pay the path's fixed costs and fill (alpha) and\n"
        "the segment at its slowest stage's rate (the link named); what is left is the reductions and copies\n"
        "between steps: the largest share is named. A transfer is NIC-bound when the bytes at line rate take\n"
        "half its time or more.\n");
  std::printf("\ncommunication re-simulated: recorded %.3f ms, simulated %.3f ms (events not re-simulated keep their\n"
              "recorded time)\n",
              report.recorded_simulated * 1e3, report.simulated * 1e3);
  if (resimulated_events(report) == 0)
    std::printf("whole trace: recorded %.3f ms; no event was re-simulated on %s, so the replay is the recording: no\n"
                "comparison (see the warnings).\n",
                rep.recorded_span * 1e3, hw.c_str());
  else
    std::printf(
        "whole trace: recorded %.3f ms, replayed on %s %.3f ms (%+.1f %%). Replaying on the fabric the trace was\n"
        "recorded on, the difference is the simulator's error on this trace. The recorded order stands for\n"
        "dependencies: each event keeps its lanes (device; a transfer's two ends; a collective's every device of its\n"
        "rank) and its gaps.\n",
        rep.recorded_span * 1e3, hw.c_str(), rep.replayed_span * 1e3,
        rep.recorded_span > 0 ? 100 * (rep.replayed_span / rep.recorded_span - 1) : 0.0);
  print_steps(job.trace, report.steps, true);
  print_warnings(report.warnings);
  std::fflush(stdout);
}

int run_replay(const frontend::ParsedArgs& a)
{
  if (a.positional().empty())
    return report_error(Error::at("", "tensorpath replay",
                                  "a trace file (or several ranks' files of one job, or their directory)", "none"));
  for (const char* o : {"json", "chrome", "collectives"})
    if (a.has(o) && !a.has("hw"))
      return report_error(Error::at("", std::string("--") + o, "--hw PROFILE to replay on", "none"));
  auto read = read_replay_job(a);
  if (!read.ok()) return report_error(read.error());
  ReplayJob& job = read.value();
  if (!a.has("hw")) return print_recorded_trace(a, job);
  transports::register_builtin_transports();
  const std::string transport = a.get("transport", "grpc");
  if (!transports::find_transport(transport))
    return report_error(Error::at("", "--transport", one_of_names(transport, transports::transport_names()),
                                  unknown_name(transport, transports::transport_names())));
  if (auto st = choose_collectives(a, job); !st.ok()) return report_error(st.error());
  ReplayFabric fabric(transport, a, job);
  if (auto st = describe_host(fabric, job.host); !st.ok()) return report_error(st.error());
  // Estimate every distinct job and refuse the replay before the first starts when they exceed the budget.
  auto estimate = estimate_replay(job, fabric);
  if (!estimate.ok()) return report_error(estimate.error());
  if (auto st = check_budget(estimate->need, "re-simulate a smaller trace, or give smaller --ranks"); !st.ok())
    return report_error(st.error());
  EventReplay replay(job, fabric, estimate.value());
  if (auto st = replay.simulate_transfers(); !st.ok()) return report_error(st.error());
  if (auto st = replay.simulate_collectives(); !st.ok()) return report_error(st.error());
  frontend::ReplayReport& report = replay.report();
  const traces::Trace& t = job.trace;
  const auto rep = traces::replay_step(t, replay.transfer_seconds(), replay.collective_seconds());
  report.steps = traces::step_reports(t, rep);
  report.steps_from = t.steps_from;
  report.summary = traces::summarize_steps(report.steps);
  report.recorded_span = rep.recorded_span;
  report.replayed_span = rep.replayed_span;
  report.simulations = replay.cache().simulations();
  report.reused = replay.cache().reused();
  report.warnings = job.warnings.lines();
  if (resimulated_events(report) == 0) // every event kept: the replay is the recording, its +0.0 % no comparison
    report.warnings.push_back("nothing was re-simulated: every communication event kept its recorded time (the "
                              "warnings above say why), so the replay equals the recording by construction and its "
                              "error (+0.0 %) says nothing about the model");

  print_replay_report(a, job, fabric, report, rep);
  if (a.has("json"))
    if (auto st = io::write_file_atomically(a.get("json"), frontend::replay_json(report)); !st.ok())
      return report_io_error(st.error());
  if (a.has("chrome"))
    if (auto st = io::write_file_atomically(a.get("chrome"), frontend::replay_chrome_trace(t, rep, fabric.hw()));
        !st.ok())
      return report_io_error(st.error());
  return replay.status();
}

} // namespace

Command replay_command()
{
  frontend::CommandSpec s;
  s.max_positionals = SIZE_MAX;
  s.name = "replay";
  s.summary = "read a recorded trace (TF/Horovod timeline, PyTorch profiler, Chakra) and re-simulate its communication";
  s.usage = "TRACE... | DIR [--ranks N] [--ranks-per-node N] [--hw PROFILE [--transport T] [--switch S] [--json FILE]\n"
            "        [--chrome FILE]]";
  s.options = {
      {"hw", 0, true, "PROFILE", "re-simulate each communication event on this NIC, host or cluster profile"},
      {"transport", 0, true, "T", "transfers (RecvTensor, sends) through this transport (default grpc)"},
      {"ranks", 0, true, "N", "the job's ranks (overrides the trace's; needed when the trace does not say)"},
      {"ranks-per-node", 0, true, "N",
       "ranks that share a node (the traces name no hosts: else one per node is assumed)"},
      {"switch", 0, true, "S", "switch profile"},
      {"collectives", 0, true, "M",
       "auto (default: nccl when the trace's collectives are NCCL's, else ring), ring (allreduces as rings on the "
       "simulated fabric, one rank per host; other kinds kept) or nccl (every NCCL collective by the collective "
       "model: the ranks as nodes of --hw's host, NVLink inside, NICs between)"},
      {"json", 0, true, "FILE", "with --hw: write the whole report as JSON (docs/formats.md, Replay JSON)"},
      {"chrome", 0, true, "FILE",
       "with --hw: a Chrome/Perfetto trace, the recorded and the replayed trace side by side"},
  };
  s.details =
      "Formats are detected: TF timeline (Chrome trace with RecvTensor labels), Horovod timeline (may be\n"
      "unterminated), PyTorch profiler/Kineto (nccl: events), Chakra JSON (concatenated objects); gzip'd files\n"
      "(.json.gz) are read as they are. What a reader cannot read in full is a warning.\n"
      "Recorded compute is kept; each communication event is re-simulated on its own, then the step is replayed\n"
      "with the new times (recorded order as dependencies) and compared with the recorded step.\n"
      "Steps: Kineto ProfilerStep#N spans, Horovod CYCLE_START cycles, TF step ids; else the whole trace is one\n"
      "step. Each step is reported recorded and replayed (its time from its first event to its last; compute,\n"
      "communication, exposed communication, overlap), with a median and mean over the whole steps: steps cut\n"
      "by the trace's start or end are named and left out.\n"
      "Ranks: from the trace (Kineto distributedInfo, process groups, Horovod's ranks, the ranks or TF tasks its\n"
      "events name); --ranks overrides. Several files of one job (one per rank: rank0.json rank1.json, or their\n"
      "directory) replay together; each file's rank comes from its metadata (Kineto distributedInfo.rank), and\n"
      "the files must name distinct ranks of one world size (and --ranks, if given, hold them all).\n"
      "Output: the host and fabric assumed (--hw: host profile, NIC, line rate; ranks and ranks per node and where\n"
      "each came from) at the top with the count of warnings; one row per communication event (bytes, ranks,\n"
      "algorithm, recorded and replayed time, the bottleneck); the steps; then every warning (zero-byte or\n"
      "unknown-size transfers, events the reader dropped or could not read in full, events kept at their\n"
      "recorded time). Each distinct transfer or collective is simulated once and reused by identical events.\n"
      "--json FILE writes all of it as JSON; --chrome FILE a trace for chrome://tracing or Perfetto with the\n"
      "recorded trace and the replay as two processes. A file that cannot be written exits 3.";
  return {s, &run_replay};
}

} // namespace tp::cli
