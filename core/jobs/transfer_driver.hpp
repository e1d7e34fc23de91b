// The transfer job, written once over the job backend interface (core/jobs/job_backend.hpp): a producer task Sends
// one tensor (or several) per step and a consumer task RecvAsyncs it, for a few steps per size (first use, then
// steady state). sim/transfer_job.hpp (`tensorpath transfer`) and emulator/transfer_job.hpp (`tensorpath emulate`)
// are its two callers; they keep what differs as options here: how a step's latency is measured, which step is the
// steady state, the byte check, the time limits. Tests: tests/sim/transport_suite_test.cpp,
// tests/emulator/emulation_test.cpp.
#pragma once

#include "core/jobs/job_backend.hpp"
#include "core/memory/tensor_memory.hpp"
#include "core/transports/transfer_record.hpp"
#include "core/transports/transport.hpp"

#include <limits>
#include <string>
#include <vector>

namespace tp::jobs {

/// What a transfer job asks for on either backend (sim::TransferJob and emu::EmuTransferJob add their own knobs).
struct TransferSpec {
  std::string transport = "grpc";
  memory::StrategyKind strategy = memory::StrategyKind::POOL_VISITOR;
  transports::TransportOptions options;
  std::vector<uint64_t> sizes{1 << 20};
  int steps = 3; ///< per size; the first is "first use"
  Location src = Location::host(0);
  Location dst = Location::host(0);
  int tensors_per_step = 1;        ///< concurrent tensors per step (all of the same size)
  std::vector<int> gpudirect_gpus; ///< empty: the backend's choice (JobBackend::create_task)
};

/// The spec and how the driver runs it on a backend.
struct TransferDriverJob : TransferSpec {
  std::string producer_task = "/job:worker/replica:0/task:0";
  std::string consumer_task = "/job:ps/replica:0/task:0";
  size_t producer_host = 0, consumer_host = 1;
  /// Backend seconds for the transports to start and for each step (infinity: none, the simulator's hang check).
  double start_timeout = std::numeric_limits<double>::infinity();
  double step_timeout = std::numeric_limits<double>::infinity();
  /// A step's latency: until nothing is left to happen (the simulator: the producer's last completion included), or
  /// from the first posted Recv or Send to the last received tensor (the emulator, which cannot see quiet).
  enum class Latency { UNTIL_QUIET, UNTIL_RECEIVED } latency = Latency::UNTIL_QUIET;
  /// The steady state: the last step, or the median of the steps after the first (wall-clock noise).
  enum class Steady { LAST_STEP, MEDIAN_AFTER_FIRST } steady = Steady::LAST_STEP;
  /// Fill each tensor with a pattern of its step and compare what arrives byte for byte (needs real bytes).
  bool check_bytes = false;
  /// The k-th tensor of a step is keyed "tensor<k>"; false: "tensor" (one tensor per step, the emulator's key).
  bool numbered_keys = true;
};

struct TransferPoint {
  uint64_t bytes = 0;
  double first_latency = 0;            ///< seconds, first step (cold caches, first registrations)
  double steady_latency = 0;           ///< seconds (TransferDriverJob::steady)
  double bandwidth = 0;                ///< bytes/s in steady state (tensors_per_step x bytes / latency)
  bool bytes_ok = true;                ///< every received tensor equal to what was sent (with check_bytes)
  transports::TransferRecord consumer; ///< of the last step (first tensor)
  transports::TransferRecord producer;
};

struct TransferDriverResult {
  std::vector<TransferPoint> points;
  uint64_t transfers = 0;
  double wall_seconds = 0; ///< the steps, on this machine's clock
  memory::MemoryStats consumer_memory, producer_memory;
  transports::TransferLog records; ///< every record of both sides, step by step (producer's, then consumer's)
};

/// A size's point from its step latencies (in step order, at least one): the first, the steady state by `rule`,
/// and the bandwidth, tensors_per_step x bytes / steady latency (0 when that is 0).
void finish_point(TransferPoint& pt, std::vector<double> latencies, TransferDriverJob::Steady rule,
                  int tensors_per_step);

/// Creates the producer and consumer processes and tasks on `backend`, starts the transports and runs the steps.
Result<TransferDriverResult> run_transfer(JobBackend& backend, const TransferDriverJob& job);

} // namespace tp::jobs
