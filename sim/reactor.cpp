// Reactor loop: ready tasks first, then due timers, then block in wait_any_for() until the next
// activity completes or the next timer is due.
#include "sim/reactor.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>

#include <algorithm>
#include <cmath>

namespace tp::sim {

double Reactor::now() const
{
  return simgrid::s4u::Engine::get_clock();
}

uint64_t Reactor::at(double when, Task t)
{
  const uint64_t id = next_id_++;
  when = std::max(when, now());
  timers_.emplace(std::make_pair(when, id), std::move(t));
  timer_when_[id] = when;
  return id;
}

uint64_t Reactor::at_background(double when, Task t)
{
  const uint64_t id = at(when, std::move(t));
  background_.insert(id);
  return id;
}

bool Reactor::cancel_timer(uint64_t id)
{
  auto it = timer_when_.find(id);
  if (it == timer_when_.end()) return false;
  timers_.erase({it->second, id});
  timer_when_.erase(it);
  background_.erase(id);
  return true;
}

uint64_t Reactor::watch(simgrid::s4u::ActivityPtr activity, Task done)
{
  const uint64_t id = next_id_++;
  activity_index_[id] = activities_.size();
  activities_.push_back(Watched{std::move(activity), std::move(done), id});
  return id;
}

bool Reactor::cancel_activity(uint64_t id)
{
  auto it = activity_index_.find(id);
  if (it == activity_index_.end()) return false;
  const size_t i = it->second;
  activities_[i].activity->cancel();
  activity_index_.erase(it);
  if (i != activities_.size() - 1) {
    activities_[i] = std::move(activities_.back());
    activity_index_[activities_[i].id] = i;
  }
  activities_.pop_back();
  return true;
}

Reactor::~Reactor()
{
  drop_everything();
}

void Reactor::drop_everything()
{
  // Move everything out first: destroying a callback may release an object whose destructor cancels its own
  // timers or activities through this reactor, which must then find consistent (empty) containers.
  auto activities = std::move(activities_);
  auto timers = std::move(timers_);
  auto ready = std::move(ready_);
  activities_.clear();
  activity_index_.clear();
  timers_.clear();
  timer_when_.clear();
  background_.clear();
  ready_.clear();
  for (auto& w : activities)
    w.activity->cancel();
}

void Reactor::take_snapshot()
{
  at_deadline_ = DeadlineSnapshot{};
  for (const auto& w : activities_) {
    InProgress p;
    p.remaining = w.activity->get_remaining();
    p.started = w.activity->get_start_time();
    if (const auto* c = dynamic_cast<const simgrid::s4u::Comm*>(w.activity.get())) {
      p.comm = true;
      p.from = c->get_source();
      p.to = c->get_destination();
    } else if (const auto* e = dynamic_cast<const simgrid::s4u::Exec*>(w.activity.get())) {
      p.from = e->get_host();
    }
    at_deadline_.activities.push_back(p);
  }
  for (const auto& [key, task] : timers_)
    if (!background_.count(key.second)) {
      ++at_deadline_.timers;
      at_deadline_.next_timer = std::min(at_deadline_.next_timer, key.first);
    }
}

void Reactor::run()
{
  std::vector<simgrid::s4u::ActivityPtr> waitset;
  deadline_hit_ = false;
  for (;;) {
    while (!ready_.empty() && !stop_requested_) {
      Task t = std::move(ready_.front());
      ready_.pop_front();
      t();
    }
    if (stop_requested_) {
      stop_requested_ = false;
      drop_everything();
      return;
    }
    // Timers closer than TIME_EPSILON are due: sub-picosecond differences are floating-point noise.
    constexpr double TIME_EPSILON = 1e-12;
    const double t_now = now();
    if (!timers_.empty() && timers_.begin()->first.first <= t_now + TIME_EPSILON) {
      // Move every due timer to the ready queue, in (time, creation) order.
      while (!timers_.empty() && timers_.begin()->first.first <= t_now + TIME_EPSILON) {
        auto node = timers_.extract(timers_.begin());
        timer_when_.erase(node.key().second);
        background_.erase(node.key().second);
        ready_.push_back(std::move(node.mapped()));
      }
      continue;
    }
    // Nothing left that keeps the loop going: background timers (faults) wait in the calendar for a later run().
    if (activities_.empty() && live_timers() == 0) return;
    if (t_now >= deadline_) {
      deadline_hit_ = true;
      take_snapshot();
      drop_everything();
      return;
    }
    const double next_timer = timers_.empty() ? deadline_ : std::min(timers_.begin()->first.first, deadline_);
    if (activities_.empty()) {
      simgrid::s4u::this_actor::sleep_until(next_timer);
      continue;
    }
    const double timeout = std::isinf(next_timer) ? -1.0 : next_timer - t_now;
    waitset.clear();
    for (const auto& w : activities_)
      waitset.push_back(w.activity);
    const ssize_t idx = simgrid::s4u::Activity::wait_any_for(waitset, timeout);
    if (idx < 0 || size_t(idx) >= activities_.size()) continue; // timeout: a timer (or the deadline) is due
    Watched w = std::move(activities_[size_t(idx)]);
    activity_index_.erase(w.id);
    if (size_t(idx) != activities_.size() - 1) {
      activities_[size_t(idx)] = std::move(activities_.back());
      activity_index_[activities_[size_t(idx)].id] = size_t(idx);
    }
    activities_.pop_back();
    ++completed_;
    ready_.push_back(std::move(w.done));
  }
}

} // namespace tp::sim
