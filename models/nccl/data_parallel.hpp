// Data-parallel training on NCCL collectives, as PyTorch DDP and Horovod run it: one rank per GPU, every rank computes
// the forward and backward pass of its batch (the workload's per-layer times, measured single-GPU throughput), and the
// gradients are averaged by allreduces of buckets that start as soon as their gradients are ready, one after the other
// on NCCL's stream, while the backward pass goes on. Each allreduce is timed by the collective model
// (models/nccl/collective_model: the node, the NICs and the fabric). The step ends when both the backward pass and the
// last allreduce have ended; the optimizer's update and the data pipeline are not modelled. Docs: docs/model.md
// ("Data-parallel training on NCCL"). Tests: tests/models/data_parallel_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "models/nccl/collective_model.hpp"
#include "models/workload/workload.hpp"

#include <string>
#include <vector>

namespace tp::models::nccl {

/// How gradients are grouped into allreduces.
enum class Bucketing {
  DDP,    ///< PyTorch DistributedDataParallel: parameters in reverse order into buckets of bucket_cap bytes (the first
          ///< of first_bucket), each allreduced when its last gradient is ready
  HOROVOD ///< Horovod: every cycle, the gradients ready by then fused into buffers of up to fusion bytes
};
const char* to_string(Bucketing b);
/// "ddp" or "horovod"; an Error (field "library") otherwise.
Result<Bucketing> parse_bucketing(const std::string& word);

struct DataParallelOptions {
  Bucketing bucketing = Bucketing::DDP;
  /// DDP's bucket_cap_mb default, 25 MiB (torch/nn/parallel/distributed.py), and its first bucket,
  /// dist._DEFAULT_FIRST_BUCKET_BYTES = 1 MiB.
  double bucket_cap = 25.0 * 1024 * 1024;
  double first_bucket = 1024.0 * 1024;
  /// Horovod >= 0.21: HOROVOD_CYCLE_TIME 1 ms, HOROVOD_FUSION_THRESHOLD 128 MiB (core/collectives/library_defaults).
  double cycle = 1e-3;
  double fusion = 128.0 * 1024 * 1024;
};

/// One allreduce of the step.
struct BucketAllreduce {
  double bytes = 0;
  int gradients = 0;
  double ready = 0; ///< seconds from the start of the step: its gradients are all computed (Horovod: the cycle)
  double start = 0, end = 0;
  CollectivePrediction prediction;
};

struct DataParallelStep {
  double forward = 0, backward = 0; ///< one GPU's compute, seconds
  double seconds = 0;               ///< the step
  double communication = 0;         ///< the allreduces' time, summed
  double exposed = 0;               ///< seconds the step waits for communication after the backward pass
  std::vector<BucketAllreduce> allreduces;
  /// What sets the step: "compute" when the allreduces hide behind the backward pass, else the collective model's
  /// bottleneck of the largest allreduce.
  std::string bottleneck;
  int ranks = 0;
  double compute() const { return forward + backward; }
  /// The step over the single-GPU step (forward + backward, no communication).
  double scaling_efficiency() const { return seconds > 0 ? compute() / seconds : 0; }
};

/// One training step of `workload` on a checked all_reduce setup (complete_setup).
DataParallelStep data_parallel_step(const CollectiveSetup& setup, const Workload& workload,
                                    const DataParallelOptions& options);

} // namespace tp::models::nccl
