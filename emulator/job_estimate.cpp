// Emulator job estimates (see job_estimate.hpp). Measured with GNU time (`/usr/bin/time -f "%e %M"`: wall seconds
// and peak RSS) on the development machine (2 cores shared with other builds, RelWithDebInfo build);
// bench/estimate_check.py reruns the commands (docs/resource-bounds.md). The largest per-unit value measured is
// taken: the estimates err high.
#include "emulator/job_estimate.hpp"

#include <algorithm>
#include <string>

namespace tp::emu {

namespace {

// `tensorpath emulate --size 4K --steps 1`: the process, the catalog, two emulated processes' threads.
constexpr double BASE_SECONDS = 0.2;
constexpr double BASE_BYTES = 35e6;
// `tensorpath emulate --transport T --size 4K --steps 1000`: 1.1 (grpc), 1.2 (verbs_v2), 1.4 (mpi) ms of wall time
// per transfer on the busy machine, 1.0 ms (verbs_v2) on a quieter one. The emulator's threads hand work to each
// other: these are wall seconds, not CPU seconds.
constexpr double SECONDS_PER_TRANSFER = 1.2e-3;
// `--size 64M --steps 5`: 8.1 (grpc), 3.8 (verbs_v2), 5.8 (mpi) ns per byte on the busy machine, grpc 5.3 on a
// quieter one (serialization, copies, checks).
constexpr double SECONDS_PER_BYTE = 6e-9;
// Peak RSS over the tensor's size at 64 MiB: 11.8 (grpc: serialized, chunked and parsed copies), 4.6 (verbs_v2;
// 4.2 at 256 MiB), 5.7 (mpi).
constexpr double COPIES_PER_TENSOR = 12;
// Emulated training: per tower the pulled variables, the gradients, and a transport copy of each (staging, bounce
// or per-key buffers); the PS copies and their updates.
constexpr double BYTES_PER_PROCESS = 0.5e6;

} // namespace

JobEstimate estimate_emulated_transfer(const EmuTransferJob& job)
{
  JobEstimate e;
  e.job = "emulated transfer (" + job.transport + ")";
  e.add("starting the emulated processes", "", BASE_BYTES, BASE_SECONDS);
  double transfers = 0, bytes = 0, largest = 0;
  for (uint64_t s : job.sizes) {
    transfers += std::max(job.steps, 1);
    bytes += double(std::max(job.steps, 1)) * double(s);
    largest = std::max(largest, double(s));
  }
  e.add(human_count(transfers) + " transfers x " + human_seconds(SECONDS_PER_TRANSFER) + " + " + human_bytes(bytes) +
            " moved x " + human_seconds(SECONDS_PER_BYTE * 1e6) + " per MB",
        "steps = " + std::to_string(job.steps) +
            (job.sizes.size() > 1 ? " x " + std::to_string(job.sizes.size()) + " sizes" : std::string()),
        0, SECONDS_PER_TRANSFER * transfers + SECONDS_PER_BYTE * bytes);
  e.add("a tensor of " + human_bytes(largest) + " x " + std::to_string(int(COPIES_PER_TENSOR)) +
            " copies (sender, receiver, transport buffers)",
        "size = " + human_bytes(largest), COPIES_PER_TENSOR * largest, 0);
  return e;
}

JobEstimate estimate_emulated_training(const training::TrainingModel& scaled, const EmuTrainingJob& job)
{
  JobEstimate e;
  const uint64_t towers = uint64_t(std::max(job.workers, 0)) *
                          uint64_t(job.mode == training::SyncMode::ALLREDUCE ? 1 : job.gpus_per_worker);
  const uint64_t tasks =
      uint64_t(std::max(job.workers, 0)) + uint64_t(job.mode == training::SyncMode::ALLREDUCE ? 0 : job.ps_tasks);
  e.job = "emulated training (" + job.transport + ", " + std::to_string(tasks) + " tasks)";
  e.add("starting the emulator", "", BASE_BYTES, BASE_SECONDS);
  const double model = double(scaled.bytes());
  const double copies = 4.0 * double(towers) + 2.0;
  const std::string param = "workers = " + std::to_string(job.workers) + " and scale = " + std::to_string(job.scale);
  e.add(human_bytes(model) + " of variables x " + std::to_string(int(copies)) + " copies (pulled variables, " +
            "gradients and transport buffers of " + std::to_string(towers) + " towers, the PS copy) + " +
            std::to_string(tasks) + " processes",
        param, copies * model + BYTES_PER_PROCESS * double(tasks), 0);
  // Per step: the GPUs' compute (sleeps, the towers of a worker side by side), every tower's pull and push.
  const double steps = std::max(job.steps, 1);
  const double moved = 2.0 * double(towers) * model;
  e.add(human_count(steps) + " steps x (" + human_seconds(scaled.compute_seconds()) + " of compute + " +
            human_bytes(moved) + " moved x " + human_seconds(SECONDS_PER_BYTE * 1e6) + " per MB)",
        param + " and steps = " + std::to_string(job.steps), 0,
        steps * (scaled.compute_seconds() + SECONDS_PER_BYTE * moved));
  return e;
}

} // namespace tp::emu
