// Pinning the emulator's threads to cores, for measurements that must not depend on where the scheduler puts them
// (`tensorpath emulate --compare`, its calibration): while pinning is on, every emulator thread that starts (an
// emulated process's event loop and worker, the software fabric's wire thread) and every thread that calls
// pin_this_thread() is bound to the next core of the process's allowed set, round-robin, in start order. On a machine
// with fewer cores than the threads the caller says it will start, pinning stays off: threads that hand work to one
// another would share a core and wait for each other's time slices, where the scheduler can spread them;
// pinning_report() says which happened. Cores are the logical CPUs the calling thread may run on
// (sched_getaffinity). A thread's core is chosen by the thread that starts it (reserve_core), so the placement
// follows the start order, not which new thread the scheduler runs first. Tests: tests/emulator/core_pinning_test.cpp.
#pragma once

#include <string>
#include <vector>

namespace tp::emu {

/// Turn pinning on or off for threads started from now on; turning it on starts the round-robin at the first core.
/// `threads`: how many the caller will start (0: any number); with fewer allowed cores, pinning stays off.
void set_thread_pinning(bool on, int threads = 0);
bool thread_pinning();
/// The next core of the round-robin for a thread about to be started (-1 while pinning is off).
int reserve_core();
/// Bind the calling thread to `core` (from reserve_core; -1: nothing). Returns the core, or -1 if it could not.
int pin_this_thread_to(int core);
/// reserve_core() then pin_this_thread_to() on the calling thread. Returns the core, or -1.
int pin_this_thread();
/// The cores this process may run on (sched_getaffinity), in order.
std::vector<int> allowed_cores();

struct PinningReport {
  int cores = 0;    ///< allowed cores
  int threads = 0;  ///< threads pinned since pinning was turned on
  int declined = 0; ///< pinning was asked for this many threads, on fewer cores: left off
  bool shared() const { return threads > cores; }
  /// "5 threads pinned over 2 cores (shared: ...)" or "pinning off".
  std::string describe() const;
};
PinningReport pinning_report();

/// Pins the calling thread (pin_this_thread) for its lifetime and gives the thread its former cores back after.
class ScopedPin {
public:
  ScopedPin();
  ~ScopedPin();
  ScopedPin(const ScopedPin&) = delete;
  ScopedPin& operator=(const ScopedPin&) = delete;

private:
  std::vector<int> before_;
  bool pinned_ = false;
};

} // namespace tp::emu
