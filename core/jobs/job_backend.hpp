// The backend interface the job drivers of core/jobs/ run on, so that a job (transfer, microbenchmark, training)
// is written once for the simulator (sim/sim_job_backend.hpp, over sim::Simulation) and the emulator
// (emulator/emu_job_backend.hpp, over emu::Emulation's threads). A driver creates processes and their
// TaskRuntimes, posts work to a process (it runs on that process's event loop), runs until its work is done or a
// deadline passes, reads the backend's clock and collects the records; a backend keeps only what differs (simulated
// or wall time, one thread or one per process, how a host's NICs, sockets and GPUs are found).
//
// Threads: on the emulator, posted work and every callback it starts run on the processes' own threads while the
// driver waits in run_until() on its thread; state shared with callbacks must be thread-safe (JobFailure, atomics)
// and outlive a failed run (a shared_ptr: callbacks may still come after the driver returned). On the simulator all
// of it runs on the driver's thread. Tests: tests/sim/job_backend_test.cpp, tests/emulator/emu_job_backend_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "core/device/device.hpp"
#include "core/memory/location.hpp"
#include "core/runtime/runtime.hpp"
#include "core/stream/stream.hpp"
#include "core/transports/task_runtime.hpp"

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace tp::jobs {

/// One process of a job: the engine interfaces its protocol code runs on. Owned by the backend.
struct JobProcess {
  std::string name;
  size_t host = 0; ///< index of its host (machine) in the backend
  Runtime* runtime = nullptr;
  StreamNetwork* streams = nullptr;
  std::vector<verbs::Device*> devices; ///< one per NIC; empty: the host has none
  verbs::Device* device(int nic = 0) const
  {
    return nic >= 0 && size_t(nic) < devices.size() ? devices[size_t(nic)] : nullptr;
  }
};

/// Why run_until() returned.
enum class RunOutcome {
  DONE,     ///< `done` held
  IDLE,     ///< nothing is left to happen and `done` does not hold (the simulator's hang)
  DEADLINE, ///< the time limit passed first
  STOPPED,  ///< stop() was called (a failure that ends the job)
};
const char* to_string(RunOutcome o);

class JobBackend {
public:
  virtual ~JobBackend() = default;
  /// "simulator" or "emulator".
  virtual const char* kind() const = 0;
  /// A new process on host `host` (an index of the backend's cluster; the emulator's processes all live on this
  /// machine and ignore it). Errors: no such host, a device that cannot be opened.
  virtual Result<JobProcess*> add_process(size_t host, const std::string& name) = 0;
  /// A TaskRuntime for `spec` on `p`, created on p's event loop. The backend completes what depends on p's host:
  /// the NIC's socket, the GPUDirect-capable GPUs when spec.memory.gpudirect_gpus is empty, and the task's CPU
  /// NUMA node; `data`: where the task's tensors live, checked against the host and taken as its NUMA node when
  /// on a host socket, or, on a GPU, choosing the NIC nearest that GPU (the simulator).
  virtual Result<std::unique_ptr<transports::TaskRuntime>> create_task(JobProcess& p, transports::TaskSpec spec,
                                                                       const transports::ClusterSpec& cluster,
                                                                       std::optional<Location> data) = 0;
  /// Where a buffer next to NIC `nic` of p's host lies (or on the other socket with `cross_socket`; in GPU memory
  /// with `gpu`). Errors: the host has no such NIC, socket or GPU.
  virtual Result<Location> nic_buffer_location(const JobProcess& p, int nic, bool cross_socket, bool gpu) const = 0;
  /// Run `fn` on p's event loop, without waiting. The simulator runs it at once, at the current simulated time (its
  /// processes all run on the driver's thread between two run_until() calls).
  virtual void post(JobProcess& p, std::function<void()> fn) = 0;
  /// Run `fn` on p's event loop and wait for it to return (the simulator: at once). Not from a callback.
  virtual void on(JobProcess& p, std::function<void()> fn) = 0;
  /// Let the processes run until `done` holds, `timeout` seconds of the backend's clock pass (infinity: no limit),
  /// or stop() is called. The simulator runs until nothing is left to happen (the deadline or stop() first) and
  /// tests `done` then: a step ends when it is quiet. The emulator polls `done` (from this thread) and returns as
  /// soon as it holds.
  virtual RunOutcome run_until(const std::function<bool()>& done, double timeout) = 0;
  /// The backend's clock in seconds: simulated time, or wall time since the backend was made. Any thread.
  virtual double now() const = 0;
  /// End the job (a failure its original treats as fatal): the running run_until() returns STOPPED (the simulator
  /// drops every pending event), and so does every later one. Any thread, also from a callback.
  virtual void stop() = 0;
  /// Stop every process's event loop for good and drop what was queued there (nothing of it runs afterwards), so
  /// that what ran on them may be destroyed from the driver's thread after a job that failed half way. The simulator
  /// runs everything on the driver's thread: nothing to do. Not from a callback.
  virtual void stop_processes() {}
};

/// The first error of a job, set from any process's thread.
class JobFailure {
public:
  /// Keeps the first error; later ones are dropped.
  void set(const Error& e)
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!first_) first_ = e;
  }
  bool has() const
  {
    std::lock_guard<std::mutex> lock(mu_);
    return first_.has_value();
  }
  std::optional<Error> get() const
  {
    std::lock_guard<std::mutex> lock(mu_);
    return first_;
  }

private:
  mutable std::mutex mu_;
  std::optional<Error> first_;
};

/// A task's runtime on its process.
struct ProcessTask {
  JobProcess* proc = nullptr;
  transports::TaskRuntime* runtime = nullptr;
};
/// Starts every task's transport (on its process's loop, in order) and runs until all have reported. Errors: the
/// first failure; a transport that did not start within `timeout` (backend seconds) or before nothing was left to
/// happen. JobTasks::start and the training driver both start their tasks this way.
Status start_transports(JobBackend& backend, const std::vector<ProcessTask>& tasks, double timeout);

/// The TaskRuntimes of a job, one per process, with what every driver does to them. A failure the original treats
/// as fatal (TF verbs' CHECK on an error completion, MPI_ERRORS_ARE_FATAL) is kept in failure() and stops the
/// backend: the process aborts and the job with it. Tasks are destroyed on their processes' loops.
class JobTasks {
public:
  explicit JobTasks(JobBackend& backend) : backend_(backend), failure_(std::make_shared<JobFailure>()) {}
  ~JobTasks();
  JobTasks(const JobTasks&) = delete;
  JobTasks& operator=(const JobTasks&) = delete;

  /// Create p's task (JobBackend::create_task) and install the fatal handler; returns its index.
  Result<size_t> add(JobProcess& p, const transports::TaskSpec& spec, const transports::ClusterSpec& cluster,
                     std::optional<Location> data = std::nullopt);
  /// Start every task's transport and run until all have reported. Errors: the first failure; a transport that did
  /// not start within `timeout` (backend seconds) or before nothing was left to happen.
  Status start(double timeout);
  /// Each task's records, appended to `into` task by task; `clear`: empty the logs afterwards.
  void collect_records(transports::TransferLog& into, bool clear);
  /// Shut every transport down (on the processes' loops).
  void shutdown();

  size_t size() const { return tasks_.size(); }
  transports::TaskRuntime& task(size_t k) { return *tasks_[k].rt; }
  JobProcess& process(size_t k) { return *tasks_[k].proc; }
  /// Shared with callbacks that may outlive this object.
  const std::shared_ptr<JobFailure>& failure() const { return failure_; }
  JobBackend& backend() { return backend_; }

private:
  struct Entry {
    JobProcess* proc = nullptr;
    std::unique_ptr<transports::TaskRuntime> rt;
  };
  JobBackend& backend_;
  std::shared_ptr<JobFailure> failure_;
  std::vector<Entry> tasks_;
};

} // namespace tp::jobs
