// Runtime of a simulated process: clock and executor map onto the shared Reactor; work items are timed
// by the hardware models (memcpy vs cache size, PCIe copies as SimGrid comms that contend with RDMA
// traffic, registration per page, GPU kernels) and, in materialized mode, really performed on the bytes.
// Tests: tests/sim/sim_runtime_test.cpp.
#pragma once

#include "core/runtime/runtime.hpp"

#include <memory>
#include <string>
#include <vector>

namespace tp::sim {

struct SimContext;
class SimMemory;

class SimRuntime final : public Runtime {
public:
  SimRuntime(SimContext& ctx, size_t machine, std::string name, SimMemory& memory);
  double now() const override;
  void post(Task task) override;
  TimerId after(double delay, Task task) override;
  bool cancel(TimerId id) override;
  void execute(const Work& work, WorkDone done) override;
  MemorySpace& memory() override;
  const std::string& name() const override { return name_; }
  MemorySpace* peer_memory(const std::string& process) override;
  void start_busy_poller(int numa_node) override;

  /// Model time of a work item when nothing else runs (no contention); used by tests and closed forms.
  Result<double> estimate(const Work& work) const;

  /// Fault injection: the process is dead, none of its tasks, timers or work completions runs any more.
  void kill();

  /// CPU seconds of the work it ran on its machine's CPU sockets (host copies, (de)serialization, host sums and
  /// updates, registrations, CPU work), as each item's uncontended time.
  double work_cpu_seconds() const { return work_cpu_seconds_; }
  /// Its busy-polling threads (each a core of its socket busy for as long as the process lives).
  int busy_pollers() const { return int(pollers_.size()); }

private:
  Task guard(Task task) const;
  void execute_memcpy(const Work& work, WorkDone done);
  void finish(const Work& work, WorkDone done);
  int socket_for(const Buffer& b) const;

  SimContext& ctx_;
  size_t machine_;
  std::string name_;
  SimMemory& memory_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  double work_cpu_seconds_ = 0;
  std::vector<uint64_t> pollers_; ///< Reactor spinner ids
};

} // namespace tp::sim
