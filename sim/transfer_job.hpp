// One tensor (or a size sweep) between two simulated hosts through a chosen transport and memory strategy:
// a producer task on the first host Sends, a consumer task on the second RecvAsyncs, for a few steps
// (first use, then steady state). Returns latency, bandwidth and the per-phase breakdown of both sides.
// The engine of `tensorpath transfer` and of the transport benchmark: the simulator's side of the transfer driver
// (core/jobs/transfer_driver.hpp), with the simulator's checks (tensor sizes, the time and memory budget).
#pragma once

#include "core/jobs/transfer_driver.hpp"
#include "core/transports/task_runtime.hpp"
#include "models/host_model.hpp"
#include "sim/simulation.hpp"

#include <string>
#include <vector>

namespace tp::sim {

struct TransferJob : jobs::TransferSpec {
  bool materialize = false;
};

/// Latency, bandwidth and the last step's records of one size (the driver's: core/jobs/transfer_driver.hpp).
using TransferPoint = jobs::TransferPoint;

struct TransferResult {
  std::string transport;
  std::string strategy;
  std::vector<TransferPoint> points;
  uint64_t transfers = 0;
  double wall_seconds = 0;
  memory::MemoryStats consumer_memory, producer_memory;
  transports::TransferLog records; ///< every record of both sides, all steps
};

Result<TransferResult> run_transfer_job(const models::ClusterProfile& cluster, const TransferJob& job);

} // namespace tp::sim
