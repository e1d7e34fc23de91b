// Round-robin pinning of the emulator's threads (see core_pinning.hpp).
#include "emulator/core_pinning.hpp"

#include <pthread.h>
#include <sched.h>

#include <mutex>

namespace tp::emu {

namespace {

std::mutex mu;
bool on = false;
int next = 0;
int declined = 0;
std::vector<int> cores;

/// The CPUs in `set`, in order.
std::vector<int> cpus_in(const cpu_set_t& set)
{
  std::vector<int> out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

} // namespace

std::vector<int> allowed_cores()
{
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return {};
  return cpus_in(set);
}

void set_thread_pinning(bool enable, int threads)
{
  std::lock_guard<std::mutex> lock(mu);
  next = 0;
  declined = 0;
  cores = allowed_cores();
  on = enable && !cores.empty() && int(cores.size()) >= threads;
  if (enable && !on) declined = threads;
}

bool thread_pinning()
{
  std::lock_guard<std::mutex> lock(mu);
  return on;
}

int reserve_core()
{
  std::lock_guard<std::mutex> lock(mu);
  if (!on || cores.empty()) return -1;
  const int core = cores[size_t(next) % cores.size()];
  ++next;
  return core;
}

int pin_this_thread()
{
  return pin_this_thread_to(reserve_core());
}

int pin_this_thread_to(int core)
{
  if (core < 0) return -1;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  // A failure (a core taken away since) leaves the thread where the scheduler puts it: a measurement, not an error.
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) return -1;
  return core;
}

ScopedPin::ScopedPin()
{
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0) return;
  before_ = cpus_in(set);
  pinned_ = pin_this_thread() >= 0;
}

ScopedPin::~ScopedPin()
{
  if (!pinned_ || before_.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : before_)
    CPU_SET(c, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

PinningReport pinning_report()
{
  std::lock_guard<std::mutex> lock(mu);
  PinningReport r;
  r.cores = int(cores.empty() ? allowed_cores().size() : cores.size());
  r.threads = on ? next : 0;
  r.declined = declined;
  return r;
}

std::string PinningReport::describe() const
{
  if (declined > 0)
    return "threads not pinned: " + std::to_string(cores) + " core" + (cores == 1 ? "" : "s") + " for " +
           std::to_string(declined) +
           " threads (pinned, threads that hand work to one another would share a core and wait for each other's "
           "time slices; the scheduler spreads them better)";
  if (threads == 0) return "threads not pinned";
  std::string s = std::to_string(threads) + " emulator threads pinned over " + std::to_string(cores) + " core" +
                  (cores == 1 ? "" : "s");
  if (shared())
    s += " (more threads than cores: they share cores, so the measurements include their contention; a machine "
         "with at least " +
         std::to_string(threads) + " free cores gives each its own)";
  return s;
}

} // namespace tp::emu
