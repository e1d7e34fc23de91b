// A simulated process's threads of one kind (gRPC's completion-queue threads: sim/sim_stream.cpp): a work item
// waits for the thread it is pinned to, or for any free thread, behind the items queued before it, then runs as CPU
// time on the machine's socket (a SimGrid exec on the socket's host, whose cores every thread of every process on
// the machine shares, with the processes' other CPU work). So a process with few threads, or a machine with few
// cores, serializes its messages. Counts the CPU it ran and the time items waited, for reports and traces.
// Include only from sim/*.cpp. Tests: tests/sim/cpu_model_test.cpp.
#pragma once

#include <simgrid/forward.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace tp::sim {

struct SimContext;

/// What a pool (or a process) ran: CPU seconds asked for, seconds items waited for a thread, items.
struct CpuUse {
  double cpu_seconds = 0;
  double waited_seconds = 0;
  uint64_t items = 0;
};

class CpuPool {
public:
  using Task = std::function<void()>;
  CpuPool(SimContext& ctx, simgrid::s4u::Host* cpu, std::string name, int threads);
  CpuPool(const CpuPool&) = delete;
  CpuPool& operator=(const CpuPool&) = delete;

  /// Run `seconds` of CPU on thread `thread` (taken modulo threads()), or on the first free one with -1; `started`
  /// (optional) runs when a thread takes the item, `done` when it has run.
  void run(double seconds, int thread, Task started, Task done);

  int threads() const { return int(busy_.size()); }
  const std::string& name() const { return name_; }
  const CpuUse& use() const { return use_; }
  /// Threads busy at each change, from when recording was turned on (for the Chrome trace's counter track).
  void record(bool on);
  const std::vector<std::pair<double, int>>& busy_changes() const { return changes_; }

private:
  struct Item {
    double seconds = 0;
    int thread = -1;
    Task started, done;
    double queued_at = 0;
  };
  void dispatch();
  void note_busy();

  SimContext& ctx_;
  simgrid::s4u::Host* cpu_;
  std::string name_;
  std::vector<bool> busy_;
  int busy_count_ = 0;
  std::deque<Item> queue_;
  CpuUse use_;
  bool recording_ = false;
  std::vector<std::pair<double, int>> changes_;
};

} // namespace tp::sim
