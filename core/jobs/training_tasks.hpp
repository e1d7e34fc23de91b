// The parts of a training job: the process name of a task, the step graph built and partitioned, the rank list of
// allreduce mode, one task's runtime + collective engine + executor set up, MaTEx's initial broadcast on one rank,
// the step times (every step, the mean after the warm-up), and which op a failed step is blamed on. The training
// driver (core/jobs/training_driver.hpp) runs them on either backend; the simulator's and the emulator's training
// jobs (sim/training_job.cpp, emulator/training_job.cpp) use the step graph and process names to place the tasks.
// Tests: tests/sim/training_test.cpp, tests/emulator/emulated_training_test.cpp.
#pragma once

#include "core/collectives/channel.hpp"
#include "core/collectives/engine.hpp"
#include "core/jobs/job_backend.hpp"
#include "core/training/executor.hpp"
#include "core/training/step_graph.hpp"
#include "core/training/training_model.hpp"
#include "core/transports/task_runtime.hpp"

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tp::jobs {

/// "/job:worker/replica:0/task:3" -> "worker3": the process (and stream endpoint) that runs a task.
std::string process_name(const std::string& task);

/// The step graph of `model` laid out as `layout`, partitioned over its tasks.
Result<training::StepGraph> partitioned_step_graph(const training::TrainingModel& model,
                                                   const training::StepLayout& layout);

/// Allreduce mode: every rank's task and the device its tensors live on (the host's CPU when reduced on the host,
/// else its first GPU), and the process of each rank (where its coordinator RPC listens). Empty in PS mode.
struct RankList {
  /// One copy of each list, shared by every rank's engine and channels (empty, never null, in PS mode).
  collectives::RankTable ranks = std::make_shared<const std::vector<collectives::RankInfo>>();
  std::shared_ptr<const std::vector<std::string>> processes = std::make_shared<const std::vector<std::string>>();
  /// The rank of `task` (it must be one).
  int rank_of(const std::string& task) const;
};
RankList rank_list(const training::StepLayout& layout);

/// One task of a training job: its runtime (transport, memory, rendezvous), its collective engine (allreduce mode)
/// and its executor. Destroyed in reverse: the executor before the engine before the runtime.
struct TrainingTask {
  std::unique_ptr<transports::TaskRuntime> runtime;
  std::unique_ptr<collectives::CollectiveEngine> engine;
  std::unique_ptr<training::TaskExecutor> executor;
  size_t allreduces = 0; ///< the task's ALLREDUCE ops per step (what its engine expects each step)
};

struct TrainingTaskOptions {
  training::ExecutorOptions executor;
  collectives::EngineOptions collectives;
  collectives::RingRunner* ring_runner = nullptr; ///< allreduce: rings run by this instead of the channel (not owned)
};

/// Sets up `task` around `runtime`: in allreduce mode (`ranks` not empty) a started collective engine (without a
/// coordinator, the collectives run in rank 0's graph order, MaTEx), then the executor over `graph`, prepared.
Status set_up_task(TrainingTask& task, std::unique_ptr<transports::TaskRuntime> runtime, StreamNetwork& streams,
                   const training::StepGraph& graph, const RankList& ranks, const TrainingTaskOptions& options);

/// MaTEx's initial broadcast, shared by every rank's part of it (callbacks on every process's thread): the first
/// error, and how many ranks have sent or received every variable.
struct BroadcastState {
  JobFailure failure;
  std::atomic<size_t> done{0};
  size_t ranks_done() const { return done.load(); }
};
/// The channel `task` (a rank of `ranks`) broadcasts on; it must live until the broadcast has finished.
std::unique_ptr<collectives::Channel> broadcast_channel(TrainingTask& task, const RankList& ranks);
/// Starts `task`'s part of MaTEx's initial broadcast on `channel`: every variable from rank 0 to all ranks (binomial
/// tree), one after the other. `state` counts the rank when its last variable is done. On the task's event loop.
void start_variable_broadcast(TrainingTask& task, collectives::Channel& channel, std::shared_ptr<BroadcastState> state);

/// Step times of a job: every step's, and the mean of those after the first `warmup`.
struct StepTimes {
  int warmup = 0;
  std::vector<double> seconds; ///< every step, warm-up included
  double total_measured = 0;
  int measured = 0;
  /// Adds step `index` (from 0); true when it is measured (past the warm-up).
  bool add(int index, double step_seconds);
  double mean() const { return measured > 0 ? total_measured / measured : 0; }
};

/// What a failed step's report needs of one task's executor, copied on the task's own event loop (the driver reads
/// it from its thread).
struct OpSnapshot {
  std::string task;
  training::FailedOp failed;               ///< TaskExecutor::failed_op()
  std::vector<training::FailedOp> waiting; ///< TaskExecutor::waiting_ops()
};
OpSnapshot op_snapshot(const TrainingTask& task);

/// After a failed step, the op the report names: the op that failed in `failed_task` or, for a fatal error (which
/// names a channel, not a transfer) or none, the transfer it was waiting for; when it waited for none (a producer:
/// a Send is passive), the earliest transfer another task was waiting for from it.
training::FailedOp blamed_op(const std::vector<OpSnapshot>& tasks, size_t failed_task, bool fatal);

} // namespace tp::jobs
