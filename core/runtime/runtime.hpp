// The runtime interface: a clock and a single-threaded executor per (simulated or real) process.
// now(), post(task), after(delay, task) and execute(work) are all protocol code needs; the simulator maps
// them onto SimGrid (sim/sim_runtime), the emulator onto an event loop with timers (emulator/).
// Every callback of a process (tasks, timers, work done, completions, stream events) runs on its executor,
// one at a time, so protocol code needs no locks. Tests: tests/sim/sim_runtime_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "core/memory/buffer.hpp"
#include "core/runtime/work.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace tp {

using Task = std::function<void()>;
using WorkDone = std::function<void(Status)>;
using TimerId = uint64_t;

class Runtime {
public:
  virtual ~Runtime() = default;
  /// Current time in seconds (simulated time, or wall time since the runtime started).
  virtual double now() const = 0;
  /// Run `task` soon, after the current callback returns (FIFO with other posted tasks).
  virtual void post(Task task) = 0;
  /// Run `task` after `delay` seconds (>= 0). Returns an id for cancel().
  virtual TimerId after(double delay, Task task) = 0;
  /// Cancel a timer that has not fired; returns false if it already fired or is unknown.
  virtual bool cancel(TimerId id) = 0;
  /// Perform or time a work item, then call `done` (with an Error if the work is invalid, e.g. a GPU
  /// location that does not exist on this host).
  virtual void execute(const Work& work, WorkDone done) = 0;
  /// The address space of this process (where Buffers come from).
  virtual MemorySpace& memory() = 0;
  /// Process name, for logs and traces ("node0", "worker:1").
  virtual const std::string& name() const = 0;
  /// The address space of another process on the same machine that this process may copy from directly
  /// (shared memory / CMA for host memory, CUDA IPC for GPU memory), or nullptr (another machine, unknown, or
  /// not supported by the backend). MPI libraries use such a path between ranks of one node.
  virtual MemorySpace* peer_memory(const std::string& process) { return nullptr; }
  /// A thread of this process that busy-polls for the rest of the process's life: a progress loop that never blocks
  /// (TF contrib MPI's MPI thread, GDR's server loop, AR-gRPC's RDMA poller), so it keeps one core of NUMA node
  /// `numa_node`'s socket busy. The simulator charges that core: it competes with every other CPU work on the
  /// machine. The emulator does nothing: its event loop blocks when idle, and a spinning thread would only take a
  /// core from the machine that runs it (docs/model.md, "The CPU of a process").
  virtual void start_busy_poller(int numa_node) {}
};

} // namespace tp
