// Runs one task's share of a partitioned step graph on the engine interfaces: compute ops as GPU kernels (one
// compute stream per GPU) or CPU work (an inter-op pool), SEND/RECV through the task's rendezvous and
// transport, gradient sums as they arrive, variable updates, and ALLREDUCE ops through a collectives hook.
// Backend independent: the simulator drives it, the emulator can too. Tests: tests/sim/training_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "core/tensor/tensor.hpp"
#include "core/training/modes.hpp"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tp::transports {
class TaskRuntime;
}

namespace tp::training {

struct StepGraph;

/// Collectives as the executor sees them: every rank's ALLREDUCE op with the same name is one collective.
class CollectiveHook {
public:
  virtual ~CollectiveHook() = default;
  /// Sum `tensor` across ranks (result in place or in a new tensor), then call `done`.
  virtual void allreduce(int64_t step, const std::string& name, Tensor tensor,
                         std::function<void(Result<Tensor>)> done) = 0;
};

/// One executed op (or, for AGGREGATE, one partial sum), for traces and step breakdowns.
struct OpEvent {
  std::string name;
  OpKind kind = OpKind::FORWARD; ///< FORWARD, BACKWARD, AGGREGATE, APPLY, RECV or ALLREDUCE
  std::string device;            ///< full device name
  double start = 0, end = 0;
  uint64_t bytes = 0;
};

/// When one op of a step became ready (all inputs in), started (got its device) and ended; every op has one.
struct OpTiming {
  std::string name;
  double ready = 0, start = 0, end = 0;
};

/// The op whose error failed a step: a RECV (key = rendezvous key) or an ALLREDUCE (key = collective name).
struct FailedOp {
  std::optional<OpKind> kind; ///< RECV or ALLREDUCE; none when the error came from elsewhere
  std::string op, key;
  double started = 0; ///< when the op was issued
};

struct ExecutorOptions {
  int cpu_threads = 4; ///< concurrent CPU ops (TF inter-op pool)
};

class TaskExecutor {
public:
  /// `graph` must be partitioned and outlive the executor; `collectives` is needed for ALLREDUCE ops.
  TaskExecutor(transports::TaskRuntime& task, const StepGraph& graph, ExecutorOptions options = {},
               CollectiveHook* collectives = nullptr);
  ~TaskExecutor();
  TaskExecutor(const TaskExecutor&) = delete;
  TaskExecutor& operator=(const TaskExecutor&) = delete;

  /// Allocate the task's variables (persistent across steps) and check devices. Call once.
  Status prepare();
  /// Run every op of this task for `step`; `done` once all finished or at the first error.
  void run_step(int64_t step, std::function<void(Status)> done);
  size_t op_count() const;
  /// This task's variables (name of the VARIABLE op's output tensor -> tensor), after prepare().
  const std::map<std::string, Tensor>& variables() const;
  /// What ran since clear_events(), in the order it finished.
  std::vector<OpEvent> events() const;
  void clear_events();
  /// Timings of every op of this task in the last step (after it finished), named as in the graph (a rank template's:
  /// rank 0's names; critical_path takes the rank's RankNames).
  std::vector<OpTiming> timings() const;
  /// Adds the GPU kernel time (FORWARD and BACKWARD ops) since clear_events() to `busy`, op by op.
  void add_compute_seconds(double& busy) const;
  /// When the last op of the last step ended (-1 before any).
  double last_end() const;
  /// After a failed step: which transfer or collective failed it (no kind if none did).
  FailedOp failed_op() const;
  /// The transfers and collectives issued in this step and not finished yet, earliest first (what the task was
  /// waiting for when a transport aborted it: a fatal error completion names a channel, not a transfer).
  std::vector<FailedOp> waiting_ops() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace tp::training
