// Where a step's time went: the critical path through the executed step graph, from the op that finished
// last back to the step's start, following at each op the input that arrived last (for a RECV: its SEND on
// the peer task) or, when an op waited for its device, the op that held the device. Each piece of the path
// is charged to what happened there: GPU kernels (compute), gradient sums and updates (aggregate_apply), a
// transfer's phases from its consumer-side record (copy, registration, PCIe, network, and cpu: its messages waiting
// for the gRPC threads of either end), or waiting. The parts
// add up to the step time. Tests: tests/core/critical_path_test.cpp.
#pragma once

#include "core/training/executor.hpp"
#include "core/transports/transfer_record.hpp"

#include <map>
#include <string>
#include <vector>

namespace tp::training {

struct StepGraph;
class RankNames;

struct CriticalPath {
  double compute = 0;
  double copy = 0;         ///< host memcpys and (de)serialization of transfers on the path
  double registration = 0; ///< memory registration on the path
  double pcie = 0;         ///< host<->GPU copies on the path (staging, local device copies)
  double network = 0;      ///< wire time and protocol round trips of transfers and collectives
  double aggregate_apply = 0;
  double cpu = 0;               ///< transfers on the path waiting for a process's threads (Phase::CPU)
  double waiting = 0;           ///< nothing on the path ran (start-up gaps, queueing not attributable to a device)
  double retry = 0;             ///< of a transfer's network time: waiting for a retransmission or an RNR retry
  std::vector<std::string> ops; ///< the path, last op first
  double total() const
  {
    return compute + copy + registration + pcie + network + aggregate_apply + cpu + waiting + retry;
  }
};

/// An interval during which a transfer between two tasks waited for a resend (fault injection): the part of a
/// transfer's network time on the path that overlaps one between its two tasks (for a collective: any two tasks)
/// is charged to `retry` instead.
struct RetryWindow {
  double start = 0, end = 0;
  std::string task, peer_task;
};

/// `timings`: every op of every task for one step (names unique across tasks). `records`: the consumer-side
/// transfer records of that step (matched to RECVs by rendezvous key). A rank template's graph: the timings and records
/// of the rank that finished last, and `names` its names (nullptr: the graph's) (a rank's ops, transfers and devices
/// are its own: the path stays in it).
CriticalPath critical_path(const StepGraph& graph, const std::vector<OpTiming>& timings,
                           const std::vector<transports::TransferRecord>& records, double step_start, double step_end,
                           const std::vector<RetryWindow>& retries = {}, const RankNames* names = nullptr);

} // namespace tp::training
