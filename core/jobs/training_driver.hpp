// The training job, written once over the job backend interface (core/jobs/job_backend.hpp): every task of a
// partitioned step graph (workers, parameter servers, or allreduce ranks) a process of the backend with its own
// transport, memory strategy, rendezvous, collective engine and executor; the transports started, MaTEx's initial
// variable broadcast on request, then the steps one after the other (the sync barrier of synchronous SGD; the first
// `warmup` are not counted). sim/training_job.hpp (`tensorpath train`, `run`) and emulator/training_job.hpp
// (`tensorpath emulate --train`) are its two callers: they place the tasks and build the step graph, and keep what
// only their backend has behind TrainingHooks (the simulator's fault injection, link tracing and stall diagnosis).
// Tests: the driver's contract on both backends (tests/jobs/training_driver_cases.hpp, run by
// tests/sim/job_backend_test.cpp and tests/emulator/emu_job_backend_test.cpp), and the jobs built on it
// (tests/sim/training_test.cpp, tests/sim/faults_test.cpp, tests/emulator/emulated_training_test.cpp).
#pragma once

#include "core/jobs/job_backend.hpp"
#include "core/jobs/training_tasks.hpp"
#include "core/memory/tensor_memory.hpp"
#include "core/training/critical_path.hpp"
#include "core/training/executor.hpp"
#include "core/transports/transport.hpp"

#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tp::jobs {

/// What a training job asks of the driver, once its caller has placed the tasks.
struct TrainingDriverJob {
  std::string transport = "grpc";
  memory::StrategyKind strategy = memory::StrategyKind::POOL_VISITOR;
  transports::TransportOptions options;
  /// Every task of the step graph and the backend host it runs on; the processes are created in this (name) order.
  std::map<std::string, size_t> task_host;
  /// Where a task's tensors live, when the backend should know (JobBackend::create_task's `data`: on a GPU, the
  /// simulator gives the task the NIC nearest it); a task not named: the backend's default.
  std::map<std::string, Location> task_data;
  int steps = 3; ///< total steps, the first `warmup` not counted
  int warmup = 1;
  TrainingTaskOptions task_options; ///< executor threads, collective engine, an analytical ring runner
  bool initial_broadcast = false;   ///< allreduce mode: rank 0's variables to every rank before the first step
  /// Backend seconds for the transports to start, and for one step (infinity: no limit; the simulator then still
  /// stops when nothing is left to happen).
  double start_timeout = std::numeric_limits<double>::infinity();
  double step_timeout = std::numeric_limits<double>::infinity();
  /// A step that fails or does not finish ends the job with TrainingDriverResult::failure (the steps before it
  /// stand), as under fault injection; false: it is the job's Error.
  bool report_failure = false;
  /// Add each measured step's critical path to the breakdown. Needs every task's clock to be the backend's (the
  /// simulator's one clock; the emulator's processes each count from their own start).
  bool breakdown = false;
  bool collect_events = false; ///< keep the last step's op events and transfer records
};

/// Where one step's time went, averaged over the measured steps: the step's critical path (its parts add up
/// to the step time; core/training/critical_path.hpp), plus how busy the GPUs were.
struct StepBreakdown {
  double compute = 0, copy = 0, registration = 0, pcie = 0, network = 0, aggregate_apply = 0, waiting = 0;
  double cpu = 0;      ///< transfers waiting for a process's gRPC threads (critical_path.hpp)
  double retry = 0;    ///< transfers on the path waiting for retransmissions / RNR retries (fault injection)
  double gpu_busy = 0; ///< mean GPU kernel time per GPU per step
};

/// What one process's CPU ran per measured step, where a backend models it (the simulator: docs/model.md "The CPU of
/// a process"); the emulator's processes run on real cores and report nothing.
struct ProcessCpuUse {
  std::string process;
  std::string host;
  int rpc_threads = 0;           ///< its gRPC threads (server + client)
  double rpc_cpu_seconds = 0;    ///< CPU its gRPC threads ran
  double rpc_waited_seconds = 0; ///< time its messages waited for one of its gRPC threads, summed over them
  double rpc_messages = 0;       ///< messages its gRPC threads worked on
  double work_cpu_seconds = 0;   ///< its other CPU work: host copies, (de)serialization, sums and updates
  int busy_pollers = 0; ///< its busy-polling threads, each a core busy all the time (Runtime::start_busy_poller)
};

/// How a job ended when a step did not complete (TrainingDriverJob::report_failure): where, what tensorpath's
/// transport reported, and what the original implementation does at that point.
struct TrainingFailure {
  int step = 0;
  double at = 0;        ///< seconds after the start of that step
  bool stalled = false; ///< no error at all: the step did not finish (a hang, or too slow)
  bool slow = false;    ///< stalled at the step timeout with long work in progress: too slow, not hung
  std::string task;     ///< the task whose op failed first (stalled: the first task that never finished)
  std::optional<training::OpKind> op_kind; ///< RECV, ALLREDUCE, or none
  std::string op;                          ///< the op's name
  std::string transfer;                    ///< rendezvous key (recv) or collective name (allreduce)
  std::string error;                       ///< the error as tensorpath reports it
  std::string original;                    ///< what the original code does (the transport's on_failure)
  std::vector<std::string> unfinished;     ///< stalled: every task that never finished the step
};

struct TrainingDriverResult {
  std::vector<double> step_seconds;   ///< every step that completed, warm-up included
  int measured = 0;                   ///< steps past the warm-up among them
  double step_time = 0;               ///< mean of the measured steps
  StepBreakdown breakdown;            ///< with TrainingDriverJob::breakdown, averaged over the measured steps
  std::vector<ProcessCpuUse> cpu_use; ///< per process, averaged over the measured steps (TrainingHooks::cpu_use)
  double broadcast_seconds = 0;       ///< the initial variable broadcast (when asked)
  uint64_t negotiation_rounds = 0;    ///< coordinator rounds of the first task's engine, all steps
  uint64_t collectives_run = 0;       ///< ring allreduces of the first task's engine, all steps
  // With collect_events: the last step's, times relative to its start (which is last_step_start).
  std::vector<training::OpEvent> events;
  transports::TransferLog records;
  double last_step_start = 0;
  bool events_kept = false;
  std::optional<TrainingFailure> failure; ///< with report_failure: the step that did not complete
};

/// What only a backend knows around a step. The defaults suit a backend with nothing more to say (the emulator).
class TrainingHooks {
public:
  virtual ~TrainingHooks() = default;
  /// Step `step` (from 1) is about to begin at `now`; `last`: the job's last step. An error ends the job.
  virtual Status before_step(int64_t step, bool last);
  /// Every task has ended the step (finished or failed). Called from a task's callback.
  virtual void all_tasks_ended() {}
  /// A step ended with every task finished; `measured`: past the warm-up.
  virtual void after_step(int64_t step, bool last, bool measured);
  /// Retransmission windows between tasks overlapping [t0, t1] (the breakdown's retry part).
  virtual std::vector<training::RetryWindow> retry_windows(double t0, double t1);
  /// Why a step that began at `t0` did not finish, after "the step " (e.g. "did not finish within ... : a hang");
  /// `slow`: too slow rather than hung. The default names the step timeout.
  virtual std::string unfinished_why(double t0, bool& slow);
  /// Every process's CPU use so far (cumulative; the driver takes the measured steps' share); empty: not modelled.
  virtual std::vector<ProcessCpuUse> cpu_use() { return {}; }
  /// Fills the report of a step that began at `t0` and did not finish (no task failed): `f` already names the
  /// unfinished tasks and the time. The default: unfinished_why() and what TensorFlow does about a hang.
  virtual void explain_stall(TrainingFailure& f, double t0);

  /// Set by the driver before the first call: the step timeout the default explanations name.
  double step_timeout = std::numeric_limits<double>::infinity();
};

/// Runs `job` over `graph` (partitioned; its tasks those of job.task_host) on `backend`. Errors: a task that cannot
/// be created or started, a step that failed or did not finish (without report_failure), a hook's error.
Result<TrainingDriverResult> run_training(JobBackend& backend, const training::StepGraph& graph,
                                          const TrainingDriverJob& job, TrainingHooks& hooks);

} // namespace tp::jobs
