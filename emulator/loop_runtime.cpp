// Event loop and worker of an emulated process (see loop_runtime.hpp).
#include "emulator/loop_runtime.hpp"
#include "emulator/core_pinning.hpp"

#include <sys/prctl.h>

#include <cstring>

namespace tp::emu {

LoopRuntime::LoopRuntime(std::string name, MemorySpace& memory) : name_(std::move(name)), memory_(memory)
{
  // Cores chosen here, in start order (emulator/core_pinning.hpp): the loop's, then the worker's.
  const int loop_core = reserve_core(), worker_core = reserve_core();
  loop_thread_ = std::thread([this, loop_core] {
    pin_this_thread_to(loop_core);
    loop();
  });
  worker_thread_ = std::thread([this, worker_core] {
    pin_this_thread_to(worker_core);
    worker();
  });
}

LoopRuntime::~LoopRuntime()
{
  stop();
}

void LoopRuntime::stop()
{
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !loop_thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  {
    std::lock_guard<std::mutex> lock(work_mu_);
  }
  work_cv_.notify_all();
  if (loop_thread_.joinable() && loop_thread_.get_id() != std::this_thread::get_id()) loop_thread_.join();
  if (worker_thread_.joinable() && worker_thread_.get_id() != std::this_thread::get_id()) worker_thread_.join();
}

void LoopRuntime::discard_pending()
{
  stop();
  std::deque<Task> tasks;
  std::map<std::pair<double, TimerId>, Task> timers;
  std::deque<std::pair<Work, WorkDone>> work;
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks.swap(tasks_);
    timers.swap(timers_);
    timer_when_.clear();
  }
  {
    std::lock_guard<std::mutex> lock(work_mu_);
    work.swap(work_);
  }
  // destroyed here, outside the locks: a callback's destructor may release memory that takes other locks
}

double LoopRuntime::now() const
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

void LoopRuntime::post(Task task)
{
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

TimerId LoopRuntime::after(double delay, Task task)
{
  TimerId id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_timer_++;
    const double when = now() + std::max(0.0, delay);
    timers_[{when, id}] = std::move(task);
    timer_when_[id] = when;
  }
  cv_.notify_one();
  return id;
}

bool LoopRuntime::cancel(TimerId id)
{
  std::lock_guard<std::mutex> lock(mu_);
  auto it = timer_when_.find(id);
  if (it == timer_when_.end()) return false;
  timers_.erase({it->second, id});
  timer_when_.erase(it);
  return true;
}

size_t LoopRuntime::pending() const
{
  std::lock_guard<std::mutex> lock(mu_);
  return tasks_.size() + timers_.size();
}

void LoopRuntime::loop()
{
  // Timers fire when due, not up to Linux's default 50 us timer slack later: protocol timers are microseconds
  // (an MPI call's cost, an RNR back-off) and a 50 us slack on each would be the emulator's, not the protocol's.
  prctl(PR_SET_TIMERSLACK, 1UL);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (!tasks_.empty()) {
      Task t = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      t();
      lock.lock();
      continue;
    }
    if (!timers_.empty()) {
      auto first = timers_.begin();
      const double wait = first->first.first - now();
      if (wait <= 0) {
        Task t = std::move(first->second);
        timer_when_.erase(first->first.second);
        timers_.erase(first);
        lock.unlock();
        t();
        lock.lock();
        continue;
      }
      cv_.wait_for(lock, std::chrono::duration<double>(wait));
      continue;
    }
    cv_.wait(lock);
  }
}

void LoopRuntime::worker()
{
  std::unique_lock<std::mutex> lock(work_mu_);
  for (;;) {
    work_cv_.wait(lock, [this] {
      std::lock_guard<std::mutex> l(mu_);
      return stopping_ || !work_.empty();
    });
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopping_) return;
    }
    auto [w, done] = std::move(work_.front());
    work_.pop_front();
    lock.unlock();
    Status st = perform(w);
    post([done = std::move(done), st]() mutable { done(st); });
    lock.lock();
  }
}

void LoopRuntime::execute(const Work& work, WorkDone done)
{
  {
    std::lock_guard<std::mutex> lock(work_mu_);
    work_.emplace_back(work, std::move(done));
  }
  work_cv_.notify_one();
}

namespace {

template <class T> void add_into(uint8_t* d, const uint8_t* s, uint64_t bytes)
{
  const uint64_t n = bytes / sizeof(T);
  for (uint64_t i = 0; i < n; ++i) {
    T a, b;
    std::memcpy(&a, d + i * sizeof(T), sizeof(T));
    std::memcpy(&b, s + i * sizeof(T), sizeof(T));
    a += b;
    std::memcpy(d + i * sizeof(T), &a, sizeof(T));
  }
}

} // namespace

Status LoopRuntime::perform(const Work& w)
{
  auto bytes_of = [&](const Buffer& b, uint64_t n) -> uint8_t* {
    if (b.data && b.size >= n) return b.data;
    return memory_.resolve(b.addr, n);
  };
  switch (w.kind) {
  case WorkKind::MEMCPY: {
    if (w.bytes == 0) return ok_status();
    uint8_t* d = bytes_of(w.dst, w.bytes);
    uint8_t* s = bytes_of(w.src, w.bytes);
    if (!d || !s)
      return Error::at("", "memcpy", "source and destination in this process's memory", "an unknown address");
    std::memmove(d, s, w.bytes);
    return ok_status();
  }
  case WorkKind::REDUCE: {
    if (w.bytes == 0) return ok_status();
    uint8_t* d = bytes_of(w.dst, w.bytes);
    uint8_t* s = bytes_of(w.src, w.bytes);
    if (!d || !s)
      return Error::at("", "reduce", "source and destination in this process's memory", "an unknown address");
    switch (w.element) {
    case ElementType::F32:
      add_into<float>(d, s, w.bytes);
      break;
    case ElementType::F64:
      add_into<double>(d, s, w.bytes);
      break;
    case ElementType::I32:
      add_into<int32_t>(d, s, w.bytes);
      break;
    case ElementType::I64:
      add_into<int64_t>(d, s, w.bytes);
      break;
    case ElementType::F16:
      break;
    }
    return ok_status();
  }
  case WorkKind::SERIALIZE:
  case WorkKind::DESERIALIZE: {
    // A pass over the bytes (an encoder reads every byte once).
    const uint8_t* s = bytes_of(w.src, w.bytes);
    volatile uint64_t sum = 0;
    if (s)
      for (uint64_t i = 0; i < w.bytes; i += 64)
        sum = sum + s[i];
    return ok_status();
  }
  case WorkKind::REGISTER:
  case WorkKind::DEREGISTER:
    return ok_status(); // the device's reg_mr/dereg_mr did the real work
  case WorkKind::GPU_KERNEL:
  case WorkKind::CPU:
    std::this_thread::sleep_for(std::chrono::duration<double>(w.seconds));
    return ok_status();
  }
  return Error::msg("unknown work kind");
}

} // namespace tp::emu
