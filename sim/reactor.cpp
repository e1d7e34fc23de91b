// Reactor loop: ready tasks first, then due timers, then completed activities; then block on a
// semaphore until SimGrid reports the next completion or the next timer is due.
//
// Why activities are started in kernel context: SimGrid 3.32 reports the end of an activity through
// Activity::on_completion only when maestro owns it (EngineImpl::handle_ended_actions); an actor's own
// activities are reported only to a wait/test on them, and wait_any over every activity in flight costs
// O(activities) per event (the scale issue's first profile item). Started inside simcall_answered(), the
// activity is maestro's; the callback queues its id and wakes the reactor's actor.
#include "sim/reactor.hpp"

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/kernel/resource/Model.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/Semaphore.hpp>
#include <simgrid/simix.hpp>
#include <xbt/config.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>

namespace tp::sim {

namespace {

/// The reactors alive in this process (one SimGrid simulation per process: at most one or two).
std::vector<Reactor*>& live_reactors()
{
  static std::vector<Reactor*> reactors;
  return reactors;
}

void connect_completion_callback()
{
  static std::once_flag once;
  std::call_once(once, [] {
    simgrid::s4u::Activity::on_completion_cb([](const simgrid::s4u::Activity& a) {
      for (Reactor* r : live_reactors())
        r->on_activity_completion(a);
    });
  });
}

} // namespace

double Reactor::simgrid_clock()
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

bool Reactor::erase_timer(uint64_t id)
{
  auto it = timer_when_.find(id);
  if (it == timer_when_.end()) return false;
  timers_.erase({it->second, id});
  timer_when_.erase(it);
  return true;
}

bool Reactor::cancel_timer(uint64_t id)
{
  if (drop_lone_exec(id) || drop_short_comm(id)) return true;
  if (!erase_timer(id)) return false;
  background_.erase(id);
  return true;
}

const Reactor::CommRoute& Reactor::route_of(simgrid::s4u::Host* from, simgrid::s4u::Host* to)
{
  auto [it, fresh] = routes_.try_emplace({from, to});
  if (!fresh) return it->second;
  std::vector<simgrid::s4u::Link*> links;
  double latency = 0;
  from->route_to(to, links, &latency);
  // A comm with a latency phase changes SimGrid's max-min system when the phase ends, with no completion to tell the
  // reactor: its heap of dates cannot then be trusted between rounds. The simulator's links have none (latencies are
  // the device model's timers), but a reactor on another platform must not run ahead there.
  if (latency > 0) run_ahead_ = false;
  CommRoute& route = it->second;
  for (const simgrid::s4u::Link* l : links) {
    if (l->get_sharing_policy() == simgrid::s4u::Link::SharingPolicy::FATPIPE) {
      route.fatpipe = std::min(route.fatpipe, l->get_bandwidth());
      continue;
    }
    auto [slot, added] = link_slot_.try_emplace(l, uint32_t(comms_on_link_.size()));
    if (added) comms_on_link_.push_back(0);
    route.links.push_back(slot->second);
    route.bandwidth.push_back(l->get_bandwidth()); // constant: nothing changes a link's bandwidth (no profiles)
  }
  return route;
}

void Reactor::enter(const CommRoute& route)
{
  for (uint32_t slot : route.links)
    ++comms_on_link_[slot];
}

void Reactor::leave(const CommRoute& route)
{
  for (uint32_t slot : route.links)
    --comms_on_link_[slot];
}

void Reactor::release_comm_route(uint64_t id)
{
  auto route = comm_route_.find(id);
  if (route == comm_route_.end()) return;
  leave(*route->second);
  comm_route_.erase(route);
}

uint64_t Reactor::start_comm(simgrid::s4u::Host* from, simgrid::s4u::Host* to, uint64_t bytes, Task done)
{
  const CommRoute& route = route_of(from, to);
  if (bytes <= short_comm_bytes_) {
    // A short comm: counted on its links now; its share is taken once every comm that starts at this instant has
    // (time_short_comms), so that comms started together share alike, as in max-min.
    const uint64_t id = next_id_++;
    enter(route);
    short_.emplace(id, ShortComm{&route, true, from, to, double(bytes), 0, now(), std::move(done)});
    unscheduled_short_.push_back(id);
    ++short_comms_started_;
    return id;
  }
  about_to_start_in_simgrid();
  auto comm = simgrid::kernel::actor::simcall_answered(
      [from, to, bytes] { return simgrid::s4u::ActivityPtr(simgrid::s4u::Comm::sendto_async(from, to, bytes)); });
  enter(route);
  const uint64_t id = watch(std::move(comm), std::move(done));
  comm_route_.emplace(id, &route);
  return id;
}

void Reactor::time_short_comms()
{
  auto ids = std::move(unscheduled_short_);
  unscheduled_short_.clear();
  for (uint64_t id : ids) {
    auto it = short_.find(id);
    if (it == short_.end()) continue; // cancelled at the instant it started
    ShortComm& c = it->second;
    // The fair share of each link: its bandwidth over the comms on it, this one and those started with it included.
    double rate = c.route->fatpipe;
    for (size_t i = 0; i < c.route->links.size(); ++i)
      rate = std::min(rate, c.route->bandwidth[i] / double(std::max<uint32_t>(comms_on_link_[c.route->links[i]], 1)));
    c.rate = rate;
    const double when = c.started + (std::isinf(rate) ? 0.0 : c.bytes / rate);
    // Its end is handed on with the completions SimGrid reports at that instant, in start order, as a comm's would;
    // it leaves its links when its end is due, as a SimGrid comm leaves them when SimGrid reports it.
    timers_.emplace(std::make_pair(when, id), [this, id] {
      if (auto s = short_.find(id); s != short_.end()) release_links(s->second);
      completed_ids_.push_back(id);
    });
    timer_when_[id] = when;
  }
}

void Reactor::release_links(ShortComm& c)
{
  if (!c.on_links) return;
  c.on_links = false;
  leave(*c.route);
}

bool Reactor::finish_short_comm(uint64_t id)
{
  auto it = short_.find(id);
  if (it == short_.end()) return false;
  release_links(it->second);
  ready_.push_back(std::move(it->second.done));
  short_.erase(it);
  ++completed_;
  return true;
}

bool Reactor::drop_short_comm(uint64_t id)
{
  auto it = short_.find(id);
  if (it == short_.end()) return false;
  release_links(it->second);
  erase_timer(id);
  Task done = std::move(it->second.done); // destroyed after the entry is gone (it may cancel more through us)
  short_.erase(it);
  return true;
}

simgrid::s4u::ActivityPtr Reactor::start_simgrid_exec(simgrid::s4u::Host* host, double flops, int threads)
{
  about_to_start_in_simgrid();
  return simgrid::kernel::actor::simcall_answered([host, flops, threads] {
    auto e = simgrid::s4u::Exec::init();
    e->set_flops_amount(flops);
    e->set_host(host);
    if (threads > 1) e->set_thread_count(threads);
    e->start();
    return simgrid::s4u::ActivityPtr(e);
  });
}

uint64_t Reactor::start_exec(simgrid::s4u::Host* host, double flops, int threads, Task done)
{
  return start_exec_on(use_of(host), host, flops, threads, std::move(done));
}

double Reactor::HostUse::speed_of(const simgrid::s4u::Host* host)
{
  if (speed == 0) speed = host->get_speed();
  return speed;
}

uint64_t Reactor::start_exec_seconds(simgrid::s4u::Host* host, double seconds, int threads, Task done)
{
  HostUse& use = use_of(host);
  const double flops = seconds * use.speed_of(host); // per thread: SimGrid's thread count multiplies the cores used
  if (flops < 1.0) return at(now() + seconds, std::move(done));
  return start_exec_on(use, host, flops, threads, std::move(done));
}

void Reactor::HostUse::forget_lone(uint64_t id)
{
  lone.erase(std::remove(lone.begin(), lone.end(), id), lone.end());
}

int Reactor::HostUse::cores_of(const simgrid::s4u::Host* host)
{
  if (cores == 0) cores = std::max(1, host->get_core_count());
  return cores;
}

bool Reactor::HostUse::has_cores_for(const simgrid::s4u::Host* host, int threads)
{
  return execs + int(lone.size()) + threads <= cores_of(host);
}

void Reactor::make_room(HostUse& use, const simgrid::s4u::Host* host, int threads)
{
  if (use.lone.empty() || use.has_cores_for(host, threads)) return;
  const std::vector<uint64_t> lone = use.lone; // make_lone_exec_simgrid takes each off the host's list
  for (uint64_t id : lone)
    make_lone_exec_simgrid(id);
}

uint64_t Reactor::start_exec_on(HostUse& use, simgrid::s4u::Host* host, double flops, int threads, Task done)
{
  threads = std::max(threads, 1);
  make_room(use, host, threads);
  if (lone_execs_as_timers_ && threads == 1 && use.has_cores_for(host, 1)) {
    // A core of its own: SimGrid's Cas01 CPU model bounds a one-thread exec by one core's speed and shares the host's
    // cores by max-min, so while the threads on the host do not outnumber its cores each runs at that bound, whatever
    // else runs there: flops / speed. (Alone on a one-core GPU, the case this began with.)
    const uint64_t id = next_id_++;
    const double speed = use.speed_of(host);
    const double when = now() + flops / speed;
    // Its end is handed on with the completions SimGrid reports at that instant, in start order (take_completions),
    // after the timers due then, as a SimGrid exec's would be.
    timers_.emplace(std::make_pair(when, id), [this, id] { completed_ids_.push_back(id); });
    timer_when_[id] = when;
    lone_.emplace(id, LoneExec{host, flops, speed, now(), std::move(done)});
    use.lone.push_back(id);
    ++lone_execs_started_;
    return id;
  }
  return watch(start_simgrid_exec(host, flops, threads), std::move(done), host, 0, threads);
}

std::optional<Reactor::LoneExec> Reactor::take_lone_exec(uint64_t id)
{
  auto it = lone_.find(id);
  if (it == lone_.end()) return std::nullopt;
  LoneExec e = std::move(it->second);
  lone_.erase(it);
  use_of(e.host).forget_lone(id);
  return e;
}

bool Reactor::finish_lone_exec(uint64_t id)
{
  std::optional<LoneExec> e = take_lone_exec(id);
  if (!e) return false;
  ready_.push_back(std::move(e->done));
  ++completed_;
  return true;
}

void Reactor::make_lone_exec_simgrid(uint64_t id)
{
  auto it = lone_.find(id);
  if (it == lone_.end()) return;
  const LoneExec& e = it->second;
  use_of(e.host).forget_lone(id);
  // Ending now (its timer due, or already fired and its end queued): left to end so, the host free for the newcomer.
  constexpr double TIME_EPSILON = 1e-12; // as run_loop's
  auto when = timer_when_.find(id);
  if (when == timer_when_.end() || when->second <= now() + TIME_EPSILON) return;
  const double left = e.flops - (now() - e.started) * e.speed;
  if (!(left > 0)) return;
  timers_.erase({when->second, id});
  timer_when_.erase(when);
  LoneExec moved = std::move(*take_lone_exec(id));
  watch(start_simgrid_exec(moved.host, left, 1), std::move(moved.done), moved.host, id, 1);
  activities_.back().started = moved.started; // a deadline's snapshot reports when the work began
}

bool Reactor::drop_lone_exec(uint64_t id)
{
  if (!take_lone_exec(id)) return false;
  erase_timer(id);
  return true;
}

uint64_t Reactor::add_spinner(simgrid::s4u::Host* host)
{
  const uint64_t id = next_id_++;
  spinners_[id].host = host;
  if (running_) start_spinner(id);
  return id;
}

bool Reactor::remove_spinner(uint64_t id)
{
  auto it = spinners_.find(id);
  if (it == spinners_.end()) return false;
  if (it->second.exec) {
    cancel_in_simgrid(it->second.exec);
    --use_of(it->second.host).execs;
  }
  spinners_.erase(it);
  return true;
}

void Reactor::start_spinner(uint64_t id)
{
  Spinner& s = spinners_.at(id);
  if (s.exec) return;
  make_room(use_of(s.host), s.host, 1);
  ++use_of(s.host).execs;
  about_to_start_in_simgrid();
  // Work that never ends within any simulation (1e300 flops is ~1e291 s at any host speed): SimGrid's solver gives
  // it one core's share like any one-thread exec, and its end date never comes first.
  s.exec = simgrid::kernel::actor::simcall_answered([host = s.host] {
    auto e = simgrid::s4u::Exec::init();
    e->set_flops_amount(1e300);
    e->set_host(host);
    e->start();
    return simgrid::s4u::ActivityPtr(e);
  });
  id_of_[s.exec.get()] = id; // so that cancel_in_simgrid cancels it; a completion of it is never reported
}

void Reactor::stop_spinners()
{
  for (auto& [id, s] : spinners_)
    if (s.exec) {
      cancel_in_simgrid(s.exec);
      s.exec = nullptr;
      --use_of(s.host).execs;
    }
}

uint64_t Reactor::watch(simgrid::s4u::ActivityPtr activity, Task done, simgrid::s4u::Host* exec_host, uint64_t id,
                        int exec_threads)
{
  if (id == 0) id = next_id_++;
  id_of_[activity.get()] = id;
  activity_index_[id] = activities_.size();
  if (exec_host) use_of(exec_host).execs += exec_threads;
  activities_.push_back(Watched{std::move(activity), std::move(done), id, exec_host, exec_host ? exec_threads : 0});
  return id;
}

void Reactor::on_activity_completion(const simgrid::s4u::Activity& activity)
{
  simgrid_touched_ = true; // its end changes the shares of what SimGrid still holds
  if (auto it = id_of_.find(&activity); it != id_of_.end()) {
    completed_ids_.push_back(it->second);
    // A comm leaves its links now, before the timers due at this instant run (they may start short comms there).
    release_comm_route(it->second);
    id_of_.erase(it);
    if (waiting_) {
      waiting_ = false;
      wake_->release();
    }
    return;
  }
  // A cancelled activity: SimGrid says FAILED once its kernel has let go (from an actor's cancel(), inside its
  // simcall) and CANCELED from cancel() itself, in that order.
  if (activity.get_state() == simgrid::s4u::Activity::State::CANCELED) return;
  if (auto it = cancelled_.find(&activity); it != cancelled_.end()) {
    release_later_.push_back(std::move(it->second)); // not here: SimGrid still reads the object after the callback
    cancelled_.erase(it);
  }
}

void Reactor::take_completions()
{
  // Completions reported together happened at the same instant: hand them on in the order they were started
  // (ids grow with each start), not in the order SimGrid's models list them.
  std::sort(completed_ids_.begin(), completed_ids_.end());
  while (!completed_ids_.empty()) {
    const uint64_t id = completed_ids_.front();
    completed_ids_.pop_front();
    std::optional<Watched> w = unwatch(id);
    if (!w) {
      // A lone exec's or a short comm's end (nothing when cancelled after it completed).
      if (!finish_lone_exec(id)) finish_short_comm(id);
      continue;
    }
    ++completed_;
    ready_.push_back(std::move(w->done));
  }
}

void Reactor::wait_for_completion(double until)
{
  if (!wake_) wake_ = simgrid::s4u::Semaphore::create(0);
  if (std::isinf(until))
    disarm_wakeup(); // a wake-up left from a timer since cancelled would only wake the loop for nothing
  else
    arm_wakeup(until);
  simgrid_touched_ = false; // what the reactor started and cancelled is solved in this round; ends set it again
  simgrid_next_event_ = std::numeric_limits<double>::quiet_NaN();
  ++simgrid_rounds_;
  waiting_ = true;
  wake_->acquire();
  waiting_ = false;
  check_not_behind();
  ahead_ = false;
}

void Reactor::check_not_behind() const
{
  // Nothing SimGrid holds may end before the reactor's clock (may_run_ahead_to): if SimGrid woke it earlier, time
  // would go back for the callbacks. Never seen; loud if a change of SimGrid or of the platform makes it happen.
  if (ahead_ && simgrid_clock() < local_now_ - 1e-12 * std::max(1.0, local_now_)) {
    std::fprintf(stderr,
                 "tensorpath: internal error: SimGrid's clock (%.17g s) is behind the reactor's (%.17g s) after a "
                 "round: an event SimGrid held was missed; rerun with TENSORPATH_CLOCK_IN_SIMGRID=1\n",
                 simgrid_clock(), local_now_);
    std::abort();
  }
}

bool Reactor::may_run_ahead_to(double date)
{
  if (!run_ahead_ || simgrid_touched_ || models_.empty()) return false;
  if (std::isnan(simgrid_next_event_)) simgrid_next_event_ = read_simgrid_next_event();
  // SimGrid ends, with the round that reaches a date, every action due within surf/precision of it: an end that close
  // after `date` belongs to the round at `date`, which running ahead would skip.
  return date < simgrid_next_event_ - 2 * simgrid_precision_;
}

double Reactor::read_simgrid_next_event()
{
  constexpr double NOW = -std::numeric_limits<double>::infinity();              // run nothing ahead
  if (simgrid::s4u::Engine::get_instance()->get_actor_count() != 1) return NOW; // another would run at SimGrid's clock
  disarm_wakeup();                                                              // the reactor's own, if one is left
  double next = std::numeric_limits<double>::infinity();
  if (const double timer = simgrid::kernel::timer::Timer::next(); timer >= 0) next = timer;
  for (simgrid::kernel::resource::Model* model : models_) {
    if (model->get_started_action_set()->empty()) continue;
    if (!model->is_update_lazy()) return NOW; // no heap of dates to read
    if (const auto& heap = model->get_action_heap(); !heap.empty()) next = std::min(next, heap.top_date());
  }
  return next;
}

void Reactor::about_to_start_in_simgrid()
{
  catch_up_simgrid();
  simgrid_touched_ = true;
}

void Reactor::catch_up_simgrid()
{
  if (!ahead_) return;
  // Nothing SimGrid holds is due by the reactor's clock (may_run_ahead_to): this round moves SimGrid's clock.
  wait_for_completion(local_now_);
}

// The kernel timer heap is changed here from the reactor's actor, outside a simcall: safe with SimGrid's sequential
// contexts (one actor or maestro runs at a time: the simulator never sets contexts/nthreads above 1).
void Reactor::arm_wakeup(double date)
{
  if (wakeup_timer_ && wakeup_date_ == date) return;
  disarm_wakeup();
  wakeup_date_ = date;
  wakeup_timer_ = simgrid::kernel::timer::Timer::set(date, [this] {
    wakeup_timer_ = nullptr; // SimGrid deletes the timer after this callback
    if (waiting_) {
      waiting_ = false;
      wake_->release();
    }
  });
}

void Reactor::disarm_wakeup()
{
  if (!wakeup_timer_) return;
  wakeup_timer_->remove();
  wakeup_timer_ = nullptr;
}

std::optional<Reactor::Watched> Reactor::unwatch(uint64_t id)
{
  auto it = activity_index_.find(id);
  if (it == activity_index_.end()) return std::nullopt;
  const size_t i = it->second;
  Watched w = std::move(activities_[i]);
  activity_index_.erase(it);
  if (w.exec_host)
    use_of(w.exec_host).execs -= w.exec_threads;
  else
    release_comm_route(id);
  if (i != activities_.size() - 1) {
    activities_[i] = std::move(activities_.back());
    activity_index_[activities_[i].id] = i;
  }
  activities_.pop_back();
  return w;
}

void Reactor::cancel_in_simgrid(const simgrid::s4u::ActivityPtr& activity)
{
  catch_up_simgrid(); // first: an end SimGrid reported while catching up (none is expected) is then seen below
  // Reported complete but not yet handed on: nothing to cancel in SimGrid (take_completions skips the id).
  if (id_of_.erase(activity.get()) == 0) return;
  simgrid_touched_ = true;
  // Held before cancel(): from an actor, SimGrid reports the kernel's end (FAILED) inside cancel()'s simcall.
  cancelled_.emplace(activity.get(), activity);
  activity->cancel();
}

bool Reactor::cancel_activity(uint64_t id)
{
  if (drop_lone_exec(id) || drop_short_comm(id)) return true;
  std::optional<Watched> w = unwatch(id);
  if (!w) return false;
  cancel_in_simgrid(w->activity);
  return true;
}

Reactor::Reactor()
{
  auto set = [](const char* name) {
    const char* v = std::getenv(name);
    return v && *v && std::string(v) != "0";
  };
  if (set("TENSORPATH_EXECS_IN_SIMGRID")) lone_execs_as_timers_ = false;
  if (set("TENSORPATH_COMMS_IN_SIMGRID")) short_comm_bytes_ = 0;
  if (set("TENSORPATH_CLOCK_IN_SIMGRID")) run_ahead_ = false;
  connect_completion_callback();
  live_reactors().push_back(this);
}

Reactor::~Reactor()
{
  disarm_wakeup();
  ahead_ = false; // not in an actor here: nothing left to catch up (run() ends caught up)
  drop_everything();
  auto& live = live_reactors();
  live.erase(std::remove(live.begin(), live.end(), this), live.end());
}

void Reactor::drop_everything()
{
  // Move everything out first: destroying a callback may release an object whose destructor cancels its own
  // timers or activities through this reactor, which must then find consistent (empty) containers.
  auto activities = std::move(activities_);
  auto timers = std::move(timers_);
  auto ready = std::move(ready_);
  auto lone = std::move(lone_);
  lone_.clear();
  auto short_comms = std::move(short_);
  short_.clear();
  unscheduled_short_.clear();
  comm_route_.clear();
  std::fill(comms_on_link_.begin(), comms_on_link_.end(), 0);
  for (auto& [host, use] : hosts_) { // the spinners stay counted: stop_spinners() or remove_spinner() uncounts them
    use.execs = 0;
    use.lone.clear();
  }
  for (const auto& [id, s] : spinners_)
    if (s.exec) ++use_of(s.host).execs;
  activities_.clear();
  activity_index_.clear();
  completed_ids_.clear();
  timers_.clear();
  timer_when_.clear();
  background_.clear();
  ready_.clear();
  for (auto& w : activities)
    cancel_in_simgrid(w.activity);
}

void Reactor::take_snapshot()
{
  at_deadline_ = DeadlineSnapshot{};
  for (const auto& w : activities_) {
    InProgress p;
    p.remaining = w.activity->get_remaining();
    p.started = w.started >= 0 ? w.started : w.activity->get_start_time();
    if (const auto* c = dynamic_cast<const simgrid::s4u::Comm*>(w.activity.get())) {
      p.comm = true;
      p.from = c->get_source();
      p.to = c->get_destination();
    } else if (const auto* e = dynamic_cast<const simgrid::s4u::Exec*>(w.activity.get())) {
      p.from = e->get_host();
    }
    at_deadline_.activities.push_back(p);
  }
  std::map<uint64_t, const LoneExec*> lone_by_id; // in start order, whatever the hash map's
  for (const auto& [id, e] : lone_)
    lone_by_id[id] = &e;
  for (const auto& [id, lone] : lone_by_id) {
    const LoneExec& e = *lone;
    InProgress p;
    p.remaining = e.flops - (now() - e.started) * e.speed;
    p.started = e.started;
    p.from = e.host;
    at_deadline_.activities.push_back(p);
  }
  std::map<uint64_t, const ShortComm*> short_by_id;
  for (const auto& [id, c] : short_)
    short_by_id[id] = &c;
  for (const auto& [id, c] : short_by_id) {
    InProgress p;
    p.comm = true;
    p.remaining = std::max(0.0, c->bytes - (now() - c->started) * c->rate);
    p.started = c->started;
    p.from = c->from;
    p.to = c->to;
    at_deadline_.activities.push_back(p);
  }
  for (const auto& [key, task] : timers_)
    if (!background_.count(key.second) && !lone_.count(key.second) && !short_.count(key.second)) {
      ++at_deadline_.timers;
      at_deadline_.next_timer = std::min(at_deadline_.next_timer, key.first);
    }
}

void Reactor::run()
{
  running_ = true;
  // The models whose next events may_run_ahead_to reads; none (no running ahead) where one's move when read (ns-3).
  models_ = simgrid::s4u::Engine::get_instance()->get_all_models();
  simgrid_precision_ = simgrid::config::get_value<double>("surf/precision");
  if (std::any_of(models_.begin(), models_.end(), [](auto* m) { return !m->next_occurring_event_is_idempotent(); }))
    models_.clear();
  for (const auto& [id, s] : spinners_)
    start_spinner(id);
  run_loop();
  catch_up_simgrid(); // SimGrid's clock ends where the reactor's did
  disarm_wakeup(); // a pending wake-up would carry SimGrid's clock on to its date after the last actor ended
  stop_spinners();
  running_ = false;
}

void Reactor::run_loop()
{
  deadline_hit_ = false;
  for (;;) {
    release_later_.clear();
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
    if (!completed_ids_.empty()) {
      take_completions();
      continue;
    }
    if (!unscheduled_short_.empty()) { // nothing else starts at this instant: time the short comms that did
      time_short_comms();
      continue;
    }
    // Nothing left that keeps the loop going: background timers (faults) wait in the calendar for a later run().
    if (activities_.empty() && live_timers() == 0) return;
    if (t_now >= deadline_) {
      deadline_hit_ = true;
      catch_up_simgrid(); // the snapshot reads what SimGrid's activities have left
      take_snapshot();
      drop_everything();
      return;
    }
    const double next_timer = timers_.empty() ? deadline_ : std::min(timers_.begin()->first.first, deadline_);
    if (!timers_.empty() && timers_.begin()->first.first <= deadline_ && may_run_ahead_to(next_timer)) {
      // As SimGrid would move its clock: by the difference, not to the date (the two differ in the last bit).
      local_now_ = t_now + (next_timer - t_now);
      ahead_ = true;
      ++timers_run_ahead_;
      continue;
    }
    wait_for_completion(next_timer);
  }
}

} // namespace tp::sim
