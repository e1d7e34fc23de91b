// Training steps on emulated processes: the same step graph, partitioning, executors, transports and collectives
// as the simulator's training job (sim/training_job), each task an emulated process with a real event loop, real
// memory and the software verbs device; GPU kernels are sleeps of their duration, every tensor between tasks
// moves real bytes. For scaled-down scenarios: `scale` multiplies every variable's bytes and every layer's compute
// time (a 1/100 VGG16 is 5 MB of variables and ~1 ms of compute). Wall-clock step times.
// Tests: tests/emulator/emulated_training_test.cpp.
#pragma once

#include "core/collectives/engine.hpp"
#include "core/memory/tensor_memory.hpp"
#include "core/training/modes.hpp"
#include "core/training/training_model.hpp"
#include "core/transports/transport.hpp"

#include <string>
#include <vector>

namespace tp::emu {

struct EmuTrainingJob {
  std::string transport = "grpc";
  memory::StrategyKind strategy = memory::StrategyKind::POOL_VISITOR;
  transports::TransportOptions options;
  /// Parameter servers, or ring allreduce (Baidu/Horovod-style coordinator).
  training::SyncMode mode = training::SyncMode::PARAMETER_SERVER;
  int workers = 2;         ///< worker tasks, or allreduce ranks
  int gpus_per_worker = 1; ///< PS mode: towers per worker
  int ps_tasks = 1;
  bool fetch_per_worker = false;
  int steps = 3; ///< the first `warmup` are not counted
  int warmup = 1;
  double scale = 0.01; ///< multiplies variable bytes and layer compute
  double timeout = 60; ///< seconds per step before the job fails (a stalled protocol)
};

struct EmuTrainingResult {
  std::string transport;
  int tasks = 0;
  uint64_t model_bytes = 0;         ///< after scaling
  double compute_seconds = 0;       ///< one GPU's forward + backward per step, after scaling
  std::vector<double> step_seconds; ///< every step, wall clock
  double step_time = 0;             ///< mean of the measured steps
  uint64_t remote_bytes_per_step = 0;
};

/// Scale a model's bytes and compute (variables keep at least 4 bytes).
training::TrainingModel scale_model(const training::TrainingModel& m, double scale);

Result<EmuTrainingResult> run_emulated_training(const training::TrainingModel& model, const EmuTrainingJob& job);

} // namespace tp::emu
