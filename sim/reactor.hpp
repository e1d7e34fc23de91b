// The simulation's event loop. One SimGrid actor runs every callback of every simulated process:
// a FIFO of ready tasks, a timer calendar (ordered by time, then by creation for determinism) and the
// set of SimGrid activities (comms, execs) in flight, each with its completion callback.
// Include only from sim/*.cpp: it exposes SimGrid types.
#pragma once

#include <simgrid/s4u/Activity.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <unordered_map>
#include <vector>

namespace tp::sim {

class Reactor {
public:
  using Task = std::function<void()>;

  double now() const;
  void post(Task t) { ready_.push_back(std::move(t)); }
  /// Run `t` at absolute time `when` (clamped to now). Returns an id for cancel_timer().
  uint64_t at(double when, Task t);
  uint64_t after(double delay, Task t) { return at(now() + (delay > 0 ? delay : 0), std::move(t)); }
  bool cancel_timer(uint64_t id);
  /// Watch a started activity; `done` runs when it finishes. Returns an id for cancel_activity().
  uint64_t watch(simgrid::s4u::ActivityPtr activity, Task done);
  /// Cancel a watched activity (its callback never runs). False if it already completed.
  bool cancel_activity(uint64_t id);
  /// Run until nothing is left to do, stop() is called or the deadline passes. Must be called from inside a
  /// SimGrid actor. On stop or deadline every pending timer, task and activity is dropped.
  void run();
  /// Make run() return after the task that calls this (fault reports: the job ends at its first error).
  void stop() { stop_requested_ = true; }
  /// Absolute simulated time after which run() gives up (a stalled job); infinity by default.
  void set_deadline(double t) { deadline_ = t; }
  bool deadline_hit() const { return deadline_hit_; }
  /// Number of activities and timers pending (for tests and statistics).
  size_t pending() const { return activities_.size() + timers_.size(); }
  uint64_t activities_completed() const { return completed_; }

private:
  void drop_everything();
  struct Watched {
    simgrid::s4u::ActivityPtr activity;
    Task done;
    uint64_t id;
  };
  std::deque<Task> ready_;
  std::map<std::pair<double, uint64_t>, Task> timers_;
  std::unordered_map<uint64_t, double> timer_when_;
  std::vector<Watched> activities_;
  std::unordered_map<uint64_t, size_t> activity_index_;
  uint64_t next_id_ = 1;
  uint64_t completed_ = 0;
  bool stop_requested_ = false;
  bool deadline_hit_ = false;
  double deadline_ = std::numeric_limits<double>::infinity();
};

} // namespace tp::sim
