// The emulator's Runtime: a real event loop thread per emulated process (tasks, timers, one callback at a
// time, as the engine contract requires) and a worker thread that really performs work items: memcpy and
// reductions on real bytes, serialization as a pass over the bytes, GPU kernels and CPU work as sleeps of their
// duration (compute is emulated, data movement is real). Time is wall time since the runtime started.
// Tests: tests/emulator/emulation_test.cpp.
#pragma once

#include "core/runtime/runtime.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

namespace tp::emu {

class LoopRuntime final : public Runtime {
public:
  LoopRuntime(std::string name, MemorySpace& memory);
  ~LoopRuntime() override; ///< stops both threads (pending tasks are dropped)
  double now() const override;
  void post(Task task) override;
  TimerId after(double delay, Task task) override;
  bool cancel(TimerId id) override;
  void execute(const Work& work, WorkDone done) override;
  MemorySpace& memory() override { return memory_; }
  const std::string& name() const override { return name_; }
  /// Tasks and timers waiting (for tests and shutdown).
  size_t pending() const;
  /// Stop the threads now (idempotent).
  void stop();
  /// After stop(): drop the tasks, timers and work items still queued, now. Their callbacks may own what this
  /// process's task owns (tensors of its memory pools), so a job that failed half way drops them before it
  /// destroys the task, not when the runtime goes.
  void discard_pending();

private:
  void loop();
  void worker();
  Status perform(const Work& w);

  std::string name_;
  MemorySpace& memory_;
  const std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> tasks_;
  std::map<std::pair<double, TimerId>, Task> timers_;
  std::map<TimerId, double> timer_when_;
  TimerId next_timer_ = 1;
  bool stopping_ = false;
  std::mutex work_mu_;
  std::condition_variable work_cv_;
  std::deque<std::pair<Work, WorkDone>> work_;
  std::thread loop_thread_, worker_thread_;
};

} // namespace tp::emu
