// The simulation's event loop. One SimGrid actor runs every callback of every simulated process:
// a FIFO of ready tasks, a timer calendar (ordered by time, then by creation for determinism) and the
// set of SimGrid activities (comms, execs) in flight, each with its completion callback.
// Activities are started in SimGrid's kernel context (owned by maestro), so that SimGrid reports each
// completion through Activity::on_completion: the loop pays O(1) per event instead of a wait_any over
// every activity in flight.
// Include only from sim/*.cpp: it exposes SimGrid types.
#pragma once

#include <simgrid/forward.h>
#include <simgrid/s4u/Activity.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tp::sim {

class Reactor {
public:
  using Task = std::function<void()>;

  Reactor();
  /// Cancels the activities still watched (work a job left in flight when it ended: a failed step, a transport's
  /// shutdown messages after the last run), so that SimGrid does not report each as a comm freed unfinished.
  ~Reactor();
  Reactor(const Reactor&) = delete;
  Reactor& operator=(const Reactor&) = delete;

  /// The simulated time: SimGrid's clock, or the reactor's own when it has run ahead of it (set_run_ahead).
  double now() const { return ahead_ ? local_now_ : simgrid_clock(); }
  void post(Task t) { ready_.push_back(std::move(t)); }
  /// Run `t` at absolute time `when` (clamped to now). Returns an id for cancel_timer().
  uint64_t at(double when, Task t);
  uint64_t after(double delay, Task t) { return at(now() + (delay > 0 ? delay : 0), std::move(t)); }
  bool cancel_timer(uint64_t id);
  /// A timer that does not keep run() going (fault injection): run() returns when only such timers are left,
  /// unless set_background_keeps_alive(true); they stay in the calendar and fire in a later run() once the clock
  /// reaches them. So a fault timed after the work has ended neither fires nor stretches the step.
  uint64_t at_background(double when, Task t);
  /// While on, background timers keep run() going like any other (a step whose tasks have not all finished
  /// waits for its faults: one may end a hang).
  void set_background_keeps_alive(bool on) { background_keeps_alive_ = on; }
  /// Start a host-to-host comm of `bytes`; `done` runs when it arrives. Returns an id for cancel_activity().
  /// A short comm (at most short_comm_bytes(), 4096 by default: one packet at the largest RDMA MTU) is no SimGrid
  /// activity but a timer: its bytes take bytes / its share of each link of its route, the link's bandwidth over the
  /// comms on it counting this one and the others started at the same instant (the fair share max-min gives a flow
  /// bottlenecked there), taken at that instant; it takes nothing from the comms it crosses. Alone on its route that is
  /// bytes / the route's narrowest link, as SimGrid times a comm alone. Why: the control messages of the RDMA
  /// transports are most of the comms of a parameter-server job (88 % in verbs v1), and every SimGrid comm's start and
  /// end re-solves max-min over every flow it shares a link with, which in a parameter-server job is every flow of the
  /// job. docs/model.md "Short comms" gives what it moves. set_short_comm_bytes(0), or TENSORPATH_COMMS_IN_SIMGRID=1 in
  /// the environment, puts every comm in SimGrid.
  uint64_t start_comm(simgrid::s4u::Host* from, simgrid::s4u::Host* to, uint64_t bytes, Task done);
  void set_short_comm_bytes(uint64_t bytes) { short_comm_bytes_ = bytes; }
  uint64_t short_comm_bytes() const { return short_comm_bytes_; }
  /// Start `flops` of work on `host` over `threads` cores; `done` runs when it ends. Returns an id (for
  /// cancel_activity()). One-thread work on a host with a core for it (the threads running there, SimGrid execs by
  /// their threads, spinners and these lone execs, this one included, no more than its cores) is a timer at flops /
  /// the host's speed, as SimGrid times a one-thread exec while the cores suffice, and no SimGrid activity: each
  /// activity SimGrid holds costs every completion a walk of maestro's list of them (ExecImpl::post's
  /// std::list::remove), which grows with the GPUs of a job. Work that arrives on the host while they run and leaves it
  /// more threads than cores makes each of them a SimGrid exec of the flops it has left, which then shares the host as
  /// SimGrid shares it (the sharing depends on the work left, not on what was done), so the result is the same as with
  /// every exec in SimGrid, up to rounding and the order of completions at one instant (tests/sim/reactor_test.cpp,
  /// tests/sim/lone_exec_test.cpp). set_lone_execs_as_timers(false), or TENSORPATH_EXECS_IN_SIMGRID=1 in the
  /// environment, puts every exec in SimGrid.
  uint64_t start_exec(simgrid::s4u::Host* host, double flops, int threads, Task done);
  /// The same for work of `seconds` at one core's speed of `host` (flops = seconds x speed, the host's speed read
  /// once per host); under one flop, a timer of `seconds`.
  uint64_t start_exec_seconds(simgrid::s4u::Host* host, double seconds, int threads, Task done);
  void set_lone_execs_as_timers(bool on) { lone_execs_as_timers_ = on; }
  /// Run ahead of SimGrid's clock: when the next timer is due before anything SimGrid holds can end (the earliest
  /// date of its models' action heaps and of its kernel timers, read while nothing has changed since SimGrid last
  /// solved them, less twice surf/precision: SimGrid ends what is due that close to a round's date in that round),
  /// the reactor moves its own clock there and runs the timer without a round of SimGrid's engine
  /// (about 2 us each: a simcall, the models' updates, two context switches). SimGrid's clock catches up, in one
  /// round, before anything is started in or cancelled from SimGrid, at a deadline and when run() returns. The times
  /// are those of a round per timer, up to rounding: SimGrid would move its clock by the same steps. Why: the
  /// protocols' latencies are timers, and AR-gRPC's 64 KiB chunks take 13 distinct event times each. On by default;
  /// set_run_ahead(false), or TENSORPATH_CLOCK_IN_SIMGRID=1 in the environment, waits for SimGrid at every timer.
  void set_run_ahead(bool on) { run_ahead_ = on; }
  /// Timers run ahead of SimGrid's clock, and rounds of SimGrid's engine the reactor waited for (for tests and
  /// statistics).
  uint64_t timers_run_ahead() const { return timers_run_ahead_; }
  uint64_t simgrid_rounds() const { return simgrid_rounds_; }
  /// A thread that spins for the rest of its process's life (a busy-polling progress thread): one core of `host`
  /// busy, sharing the host's cores with every exec there. It never keeps run() going: it runs while run() does
  /// (started when run() starts, or at once inside it; cancelled when run() returns), so it takes its share of the
  /// cores only while other work is simulated. Returns an id for remove_spinner().
  uint64_t add_spinner(simgrid::s4u::Host* host);
  /// Stop a spinner (its process died); false if unknown.
  bool remove_spinner(uint64_t id);
  size_t spinners() const { return spinners_.size(); } ///< for tests
  /// Cancel a watched activity (its callback never runs). False if its callback already ran or is in the ready
  /// queue; an activity SimGrid reported complete but not yet handed on is withdrawn (true).
  bool cancel_activity(uint64_t id);
  /// Run until nothing is left to do, stop() is called or the deadline passes. Must be called from inside a
  /// SimGrid actor. On stop or deadline every pending timer, task and activity is dropped.
  void run();
  /// Make run() return after the task that calls this (fault reports: the job ends at its first error).
  void stop() { stop_requested_ = true; }
  /// Absolute simulated time after which run() gives up (a stalled job); infinity by default.
  void set_deadline(double t) { deadline_ = t; }
  bool deadline_hit() const { return deadline_hit_; }
  /// SimGrid reports a completion (called in kernel context, from Activity::on_completion).
  void on_activity_completion(const simgrid::s4u::Activity& activity);

  /// Number of activities and timers pending (for tests and statistics; lone execs count once, as timers, and short
  /// comms once, as timers or as comms whose share is not taken yet).
  size_t pending() const { return activities_.size() + timers_.size() + unscheduled_short_.size(); }
  /// Execs run as timers so far (for tests and statistics).
  uint64_t lone_execs() const { return lone_execs_started_; }
  /// Comms counted on links now, summed over the links (for tests: 0 once nothing is in flight).
  uint64_t comms_counted_on_links() const
  {
    uint64_t n = 0;
    for (uint32_t c : comms_on_link_)
      n += c;
    return n;
  }
  /// Short comms run as timers so far (for tests and statistics).
  uint64_t short_comms() const { return short_comms_started_; }
  uint64_t activities_completed() const { return completed_; }
  /// Cancelled activities still held until SimGrid reports their end (for tests: 0 once the simulation has moved on).
  size_t cancelled_held() const { return cancelled_.size(); }

  /// What was still in progress when run() reached its deadline (captured before it was dropped), so that a
  /// report can say what was slow rather than "stalled".
  struct InProgress {
    bool comm = false;    ///< a comm (bytes between two hosts) or an exec (flops on a host)
    double remaining = 0; ///< bytes (comm) or flops (exec) left
    double started = 0;   ///< simulated time it started
    simgrid::s4u::Host *from = nullptr, *to = nullptr; ///< comm: its end points; exec: `from` is the host
  };
  struct DeadlineSnapshot {
    std::vector<InProgress> activities;
    size_t timers = 0; ///< timers pending (background ones excluded)
    double next_timer = std::numeric_limits<double>::infinity();
  };
  /// Valid after run() returned with deadline_hit().
  const DeadlineSnapshot& at_deadline() const { return at_deadline_; }

private:
  /// Watch an activity under a new id, or under `id` (a lone exec made a SimGrid exec keeps its id); `exec_host`:
  /// the host of an exec (counted in its HostUse while watched), null for a comm.
  uint64_t watch(simgrid::s4u::ActivityPtr activity, Task done, simgrid::s4u::Host* exec_host = nullptr,
                 uint64_t id = 0, int exec_threads = 0);
  /// Start a SimGrid exec (kernel context, owned by maestro).
  simgrid::s4u::ActivityPtr start_simgrid_exec(simgrid::s4u::Host* host, double flops, int threads);
  /// The lone exec `id` ended (its timer, then take_completions): its callback to the ready queue; false if unknown.
  bool finish_lone_exec(uint64_t id);
  /// Work arriving leaves the host more threads than cores: this lone exec becomes a SimGrid exec of the flops it has
  /// left (one ending now is left to end as a timer).
  void make_lone_exec_simgrid(uint64_t id);
  /// Forget a lone exec (cancelled, or dropped), its timer included; false if unknown.
  bool drop_lone_exec(uint64_t id);
  struct LoneExec;
  /// What runs on a host: the threads of the SimGrid execs watched and of the spinners, its lone execs (one thread
  /// each), its speed and its cores (0: not read yet).
  struct HostUse {
    int execs = 0;
    std::vector<uint64_t> lone;
    double speed = 0;
    int cores = 0;
    /// The host's cores, read from SimGrid the first time.
    int cores_of(const simgrid::s4u::Host* host);
    /// Whether the host's cores cover its threads running (SimGrid execs', spinners', lone execs') and `threads` more.
    bool has_cores_for(const simgrid::s4u::Host* host, int threads);
    /// Take lone exec `id` off the host's list (nothing if it is not there).
    void forget_lone(uint64_t id);
    /// The host's speed, read from SimGrid the first time (constant: nothing changes a host's speed, no profiles or
    /// pstates).
    double speed_of(const simgrid::s4u::Host* host);
  };
  HostUse& use_of(const simgrid::s4u::Host* host) { return hosts_[host]; }
  /// `threads` more cores' worth of work arrives on the host: if the host's cores no longer cover every thread, each
  /// lone exec there becomes a SimGrid exec (SimGrid then shares the cores among them all).
  void make_room(HostUse& use, const simgrid::s4u::Host* host, int threads);
  uint64_t start_exec_on(HostUse& use, simgrid::s4u::Host* host, double flops, int threads, Task done);
  /// Take a lone exec out of lone_ (and off its host's list), its timer left as it is.
  std::optional<LoneExec> take_lone_exec(uint64_t id);
  void run_loop();
  /// Start a spinner's exec in SimGrid (run() going; stop_spinners() cancels them all when it returns).
  void start_spinner(uint64_t id);
  void stop_spinners();
  /// Hand the completed activities SimGrid reported (all of one instant) to the ready queue, in start order.
  void take_completions();
  /// Block the reactor's actor until a completion is reported or the clock reaches `until` (infinity: no limit).
  void wait_for_completion(double until);
  /// Have SimGrid wake the waiting reactor at `date` through a kernel timer (one pending at a time: a heap entry,
  /// where a semaphore's timeout would start a sleep action in the CPU model for every wait).
  void arm_wakeup(double date);
  void disarm_wakeup();
  static double simgrid_clock();
  /// Whether the reactor may move its clock to `date` without SimGrid: run-ahead on, nothing started, cancelled or
  /// ended in SimGrid since its engine last solved its models, no other actor, and every model's next event (lazy
  /// models only, and none whose event dates move when read, as ns-3's) and every kernel timer after `date`.
  bool may_run_ahead_to(double date);
  /// The date of the next event SimGrid holds (infinity: none; minus infinity: unknown), read once per round.
  double read_simgrid_next_event();
  /// Bring SimGrid's clock to the reactor's (one round) before the reactor starts or cancels anything in SimGrid.
  void catch_up_simgrid();
  /// Catch up, then mark SimGrid's dates stale: the reactor is about to start something in SimGrid.
  void about_to_start_in_simgrid();
  /// After a round: abort with an internal error if SimGrid's clock stopped short of the reactor's.
  void check_not_behind() const;
  void drop_everything();
  void take_snapshot();
  /// Timers that keep run() going: all of them, or all but the background ones.
  size_t live_timers() const { return background_keeps_alive_ ? timers_.size() : timers_.size() - background_.size(); }
  struct Watched {
    simgrid::s4u::ActivityPtr activity;
    Task done;
    uint64_t id;
    simgrid::s4u::Host* exec_host = nullptr; ///< an exec's host (counted in its HostUse), null for a comm
    int exec_threads = 0;                    ///< an exec's threads (as counted in its HostUse)
    double started = -1;                     ///< a lone exec made a SimGrid exec: when its work began
  };
  /// An exec timed as a timer, a core of its host its own (start_exec), by id.
  struct LoneExec {
    simgrid::s4u::Host* host = nullptr;
    double flops = 0, speed = 0, started = 0;
    Task done;
  };
  std::unordered_map<uint64_t, LoneExec> lone_;
  /// Per host (entries stay once made: one look-up per exec, no allocation after the first).
  std::unordered_map<const simgrid::s4u::Host*, HostUse> hosts_;
  bool lone_execs_as_timers_ = true;
  uint64_t lone_execs_started_ = 0;
  /// A route's links that flows share (FATPIPE links bound a comm's rate without being shared), as slots of
  /// comms_on_link_, and the narrowest FATPIPE bandwidth on it (infinity: none).
  struct CommRoute {
    std::vector<uint32_t> links;
    std::vector<double> bandwidth;
    double fatpipe = std::numeric_limits<double>::infinity();
  };
  struct HostPairHash {
    size_t operator()(const std::pair<const simgrid::s4u::Host*, const simgrid::s4u::Host*>& p) const
    {
      return std::hash<const void*>()(p.first) * 31 + std::hash<const void*>()(p.second);
    }
  };
  /// Routes by end points, read from SimGrid once per pair (entries stay: their addresses are held by comms).
  std::unordered_map<std::pair<const simgrid::s4u::Host*, const simgrid::s4u::Host*>, CommRoute, HostPairHash> routes_;
  std::unordered_map<const simgrid::s4u::Link*, uint32_t> link_slot_;
  /// Comms in flight on each shared link (SimGrid comms and short comms, timed or not yet), by slot.
  std::vector<uint32_t> comms_on_link_;
  const CommRoute& route_of(simgrid::s4u::Host* from, simgrid::s4u::Host* to);
  void enter(const CommRoute& route);
  void leave(const CommRoute& route);
  /// A SimGrid comm ended or was cancelled: uncount it on its route's links (nothing if already done).
  void release_comm_route(uint64_t id);
  /// The SimGrid comms in flight, by id, with their routes (uncounted when they end or are cancelled).
  std::unordered_map<uint64_t, const CommRoute*> comm_route_;
  /// A short comm (start_comm), by id.
  struct ShortComm {
    const CommRoute* route = nullptr;
    bool on_links = true; ///< still counted on its route's links (until its end is due, or it is dropped)
    simgrid::s4u::Host *from = nullptr, *to = nullptr;
    double bytes = 0, rate = 0, started = 0;
    Task done;
  };
  std::unordered_map<uint64_t, ShortComm> short_;
  /// Short comms started at this instant, in start order, whose share is not taken yet.
  std::vector<uint64_t> unscheduled_short_;
  /// Take the share of each unscheduled short comm (every comm of this instant counted) and set its end's timer.
  void time_short_comms();
  uint64_t short_comm_bytes_ = 4096;
  uint64_t short_comms_started_ = 0;
  /// The short comm `id` ended (its timer, then take_completions): its callback to the ready queue; false if unknown.
  bool finish_short_comm(uint64_t id);
  /// Uncount a short comm on its route's links, once.
  void release_links(ShortComm& c);
  /// Forget a short comm (cancelled), its timer included; false if unknown.
  bool drop_short_comm(uint64_t id);
  /// Take timer `id` out of the calendar (a timer, a lone exec's or a short comm's); false if it is not there.
  bool erase_timer(uint64_t id);
  /// Stop watching `id` and return what was watched (none: not watched).
  std::optional<Watched> unwatch(uint64_t id);
  /// Cancel an unwatched activity in SimGrid, unless SimGrid already reported it, holding it until SimGrid lets go.
  void cancel_in_simgrid(const simgrid::s4u::ActivityPtr& activity);
  std::deque<Task> ready_;
  std::map<std::pair<double, uint64_t>, Task> timers_;
  std::unordered_map<uint64_t, double> timer_when_;
  std::unordered_set<uint64_t> background_;
  bool background_keeps_alive_ = false;
  DeadlineSnapshot at_deadline_;
  std::vector<Watched> activities_;
  /// Spinners by id, with the exec that holds their core while run() goes (null between runs).
  struct Spinner {
    simgrid::s4u::Host* host = nullptr;
    simgrid::s4u::ActivityPtr exec;
  };
  std::map<uint64_t, Spinner> spinners_;
  bool running_ = false;
  std::unordered_map<uint64_t, size_t> activity_index_;
  /// The watched activities by SimGrid object, for the completion callback.
  std::unordered_map<const simgrid::s4u::Activity*, uint64_t> id_of_;
  /// Ids SimGrid reported complete, in order, not yet handed to the ready queue.
  std::deque<uint64_t> completed_ids_;
  /// Cancelled activities, kept alive until SimGrid's kernel has reported their end (it reads the object then).
  std::unordered_map<const simgrid::s4u::Activity*, simgrid::s4u::ActivityPtr> cancelled_;
  /// Activities whose last reference may be released on the reactor's actor (never inside SimGrid's callback).
  std::vector<simgrid::s4u::ActivityPtr> release_later_;
  simgrid::s4u::SemaphorePtr wake_;
  bool waiting_ = false;
  simgrid::kernel::timer::Timer* wakeup_timer_ = nullptr; ///< pending wake-up (arm_wakeup), owned by SimGrid
  double wakeup_date_ = 0;
  bool run_ahead_ = true;
  std::vector<simgrid::kernel::resource::Model*> models_; ///< SimGrid's models, read when run() starts
  double simgrid_precision_ = 0;                          ///< surf/precision, read when run() starts
  bool ahead_ = false;                                    ///< now() is local_now_, ahead of SimGrid's clock
  double local_now_ = 0;
  /// Something was started in, cancelled from or ended in SimGrid since its engine last solved its models: the
  /// dates in its action heaps may be stale until the next round.
  bool simgrid_touched_ = true;
  /// read_simgrid_next_event()'s answer for this round (NaN: not read yet).
  double simgrid_next_event_ = std::numeric_limits<double>::quiet_NaN();
  uint64_t timers_run_ahead_ = 0;
  uint64_t simgrid_rounds_ = 0;
  uint64_t next_id_ = 1;
  uint64_t completed_ = 0;
  bool stop_requested_ = false;
  bool deadline_hit_ = false;
  double deadline_ = std::numeric_limits<double>::infinity();
};

} // namespace tp::sim
