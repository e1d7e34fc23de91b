// A process's threads of one kind on the machine's cores (see cpu_pool.hpp).
#include "sim/cpu_pool.hpp"
#include "sim/sim_context.hpp"

#include <algorithm>

namespace tp::sim {

CpuPool::CpuPool(SimContext& ctx, simgrid::s4u::Host* cpu, std::string name, int threads)
    : ctx_(ctx), cpu_(cpu), name_(std::move(name)), busy_(size_t(std::max(1, threads)), false)
{
}

void CpuPool::run(double seconds, int thread, Task started, Task done)
{
  Item it;
  it.seconds = std::max(0.0, seconds);
  it.thread = thread < 0 ? -1 : thread % threads();
  it.started = std::move(started);
  it.done = std::move(done);
  it.queued_at = ctx_.reactor.now();
  queue_.push_back(std::move(it));
  dispatch();
}

void CpuPool::dispatch()
{
  // In arrival order, every item whose thread is free starts; an item pinned to a busy thread does not hold up the
  // items behind it that may run elsewhere (each thread has its own queue in the real runtime). The scan starts
  // again after each start: a `started` callback may queue more work.
  while (busy_count_ < threads()) {
    auto it = queue_.begin();
    int t = -1;
    for (; it != queue_.end(); ++it) {
      t = it->thread >= 0 ? it->thread : int(std::find(busy_.begin(), busy_.end(), false) - busy_.begin());
      if (!busy_[size_t(t)]) break;
    }
    if (it == queue_.end()) return;
    Item item = std::move(*it);
    queue_.erase(it);
    busy_[size_t(t)] = true;
    ++busy_count_;
    note_busy();
    const double now = ctx_.reactor.now();
    use_.cpu_seconds += item.seconds;
    use_.waited_seconds += now - item.queued_at;
    ++use_.items;
    ctx_.start_exec(cpu_, item.seconds, [this, t, done = std::move(item.done)] {
      busy_[size_t(t)] = false;
      --busy_count_;
      note_busy();
      if (done) done();
      dispatch();
    });
    if (item.started) item.started();
  }
}

void CpuPool::record(bool on)
{
  recording_ = on;
  changes_.clear();
  if (on) changes_.emplace_back(ctx_.reactor.now(), busy_count_);
}

void CpuPool::note_busy()
{
  if (!recording_) return;
  const double now = ctx_.reactor.now();
  if (!changes_.empty() && changes_.back().first == now)
    changes_.back().second = busy_count_;
  else if (changes_.empty() || changes_.back().second != busy_count_)
    changes_.emplace_back(now, busy_count_);
  // A change undone at the same instant leaves two equal samples in a row: keep the first.
  if (changes_.size() >= 2 && changes_[changes_.size() - 2].second == changes_.back().second) changes_.pop_back();
}

} // namespace tp::sim
