// What `tensorpath replay --hw` reports, apart from the printing: the assumed host and fabric, one row per
// communication event (bytes, algorithm, recorded and replayed time, the bottleneck), the steps, and the warnings;
// the cache that simulates each distinct communication job once; and the --json and --chrome texts.
// Tests: tests/apps/replay_output_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "models/host_model.hpp"
#include "sim/fabric_modes.hpp"
#include "traces/replay.hpp"
#include "traces/trace.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tp::frontend {

/// Each distinct simulation once. `key` is the simulated job's whole input (kind, bytes, ranks, placement, the
/// profile, the switch, the transport); an event whose key was simulated before reuses that result (an error too).
class SimulationCache {
public:
  Result<std::string> get(const std::string& key, const std::function<Result<std::string>()>& simulate);
  size_t simulations() const { return done_.size(); }
  size_t reused() const { return reused_; }
  bool has(const std::string& key) const { return done_.count(key) > 0; }

private:
  std::map<std::string, Result<std::string>> done_;
  size_t reused_ = 0;
};

/// One ring allreduce on `cluster` (sim::run_allreduce) in a child process (one simulation per process).
struct CollectiveTime {
  double seconds = 0;
  double alpha = 0, beta = 0; ///< rank 0 -> 1 at one segment: fixed seconds per message, bytes/s of its slowest stage
  std::string beta_link;      ///< what sets beta (sim::AllreduceResult::beta_link)
};
Result<std::string> simulate_allreduce_isolated(const models::ClusterProfile& cluster, const sim::AllreduceJob& job);
/// The text simulate_allreduce_isolated returns, back in numbers.
CollectiveTime parse_collective_time(const std::string& text);

/// Which resource limited a ring allreduce of `bytes` over `ranks` that took `t`, from what the simulation reports:
/// its 2(ranks-1) messages of bytes/ranks each cost alpha (fixed) plus segment/beta (the slowest stage); what is left
/// is the reductions and copies between ring steps. The largest of the three names the bottleneck, with its share.
std::string allreduce_bottleneck(const CollectiveTime& t, double bytes, int ranks);
/// The resource a SimGrid link name stands for ("host0.nic0.port.tx" -> "NIC line rate", ".pcie." -> "PCIe", ...).
std::string resource_of_link(const std::string& link);

/// The assumed host and fabric, and where each number came from.
struct ReplayHost {
  std::string hw;            ///< the --hw argument
  std::string host_profile;  ///< the host profile every rank runs on
  std::string nic;           ///< its first NIC's profile
  double line_rate = 0;      ///< that NIC's data rate, bytes/s
  std::string switch_name;   ///< the switch profile (empty: back to back)
  std::string transport;     ///< transfers go through it
  int ranks = 0;             ///< 0: not known
  std::string ranks_from;    ///< "--ranks", "distributedInfo.world_size", ...
  int ranks_per_node = 0;    ///< as reported (the collectives are simulated one rank per host)
  std::string per_node_from; ///< "--ranks-per-node", the trace's field, or "assumed"
};

/// One communication event of the trace, recorded and replayed.
struct ReplayRow {
  std::string event; ///< "transfer", or the collective's kind ("allreduce", "broadcast", ...)
  std::string name;
  uint64_t bytes = 0;
  bool bytes_known = true;
  int ranks = 0;          ///< the group simulated (0: not simulated)
  std::string algorithm;  ///< "ring allreduce (analytical fabric)", "grpc transfer", "-" when kept
  double recorded = 0;    ///< seconds
  double replayed = -1;   ///< seconds; -1: kept at its recorded time (`kept` says why)
  std::string kept;       ///< why it was not simulated
  std::string bottleneck; ///< which resource limited it ("NIC line rate ...", "latency ...", ...)
  bool reused = false;    ///< the result of an identical event simulated before
  std::string step;       ///< the step's name
  int rank = -1;          ///< the rank whose file it came from (-1: one file)
};

struct ReplayReport {
  std::vector<std::string> files;
  std::string format;
  ReplayHost host;
  std::vector<ReplayRow> rows; ///< transfers first, then collectives, each in the trace's order
  std::vector<traces::StepReport> steps;
  std::string steps_from;
  traces::StepSummary summary;
  double recorded_span = 0, replayed_span = 0;  ///< whole trace, seconds
  double recorded_simulated = 0, simulated = 0; ///< over the events simulated: recorded and new time
  size_t simulations = 0, reused = 0;           ///< distinct jobs simulated; events that reused one
  std::vector<std::string> warnings;            ///< every warning, once, in the order found
};

/// The report as JSON (docs/formats.md, "Replay JSON").
std::string replay_json(const ReplayReport& r);
/// A Chrome/Perfetto trace: process 1 the recorded trace, process 2 the replay, a track per device (compute), per
/// rank for collectives and one for transfers, and a track of the steps in each, times in microseconds from the
/// trace's first event; written through traces/chrome_trace_writer.hpp.
std::string replay_chrome_trace(const traces::Trace& t, const traces::ReplayResult& rep, const std::string& hw);

} // namespace tp::frontend
