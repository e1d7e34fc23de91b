// Training job driver (see training_job.hpp). What the emulator's training job does alike (task set-up, step
// times, the blamed op of a failed step) is in core/jobs/training_tasks.hpp; here what only the simulator has:
// placement on the cluster's hosts, analytical rings, fault injection, stall diagnosis, the step breakdown.
#include "sim/training_job.hpp"

#include "core/common/progress.hpp"
#include "core/jobs/training_tasks.hpp"
#include "core/training/critical_path.hpp"
#include "sim/analytical_collectives.hpp"
#include "sim/job_estimate.hpp"
#include "sim/platform.hpp"
#include "sim/sim_job_backend.hpp"
#include "sim/simulation.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>

namespace tp::sim {

namespace {

using jobs::process_name;

std::string fmt_seconds(double s)
{
  char b[48];
  std::snprintf(b, sizeof b, "%g", s);
  return b;
}

/// Steps, stall timeout and compute times the simulated clock can hold.
Status check_job(const training::TrainingModel& model, const TrainingJob& job)
{
  if (job.steps < 1 || job.warmup < 0 || job.warmup >= job.steps)
    return Error::at("", "steps", "steps >= 1 and 0 <= warmup < steps",
                     std::to_string(job.steps) + " steps, " + std::to_string(job.warmup) + " warm-up");
  if (!(job.stall_timeout > 0) || !(job.stall_timeout <= MAX_SIMULATED_SECONDS))
    return Error::at("", "stall_timeout",
                     "simulated seconds in (0, " + fmt_seconds(MAX_SIMULATED_SECONDS) +
                         "] (the simulated clock resolves nanoseconds up to about 52 days)",
                     fmt_seconds(job.stall_timeout));
  // A compute time the simulated clock cannot hold (1e308 ms) is bad input, not a slow step.
  double per_step = 0;
  for (size_t i = 0; i < model.layers.size(); ++i) {
    const auto& l = model.layers[i];
    for (const double v : {l.forward_seconds, l.backward_seconds})
      if (!(v >= 0) || !(v <= MAX_SIMULATED_SECONDS))
        return Error::at("", "model " + model.name + ": layer " + l.name,
                         "forward and backward times in [0, " + fmt_seconds(MAX_SIMULATED_SECONDS) +
                             "] s (the simulated clock resolves nanoseconds up to about 52 days)",
                         fmt_seconds(l.forward_seconds) + " s forward, " + fmt_seconds(l.backward_seconds) +
                             " s backward");
    per_step += l.forward_seconds + l.backward_seconds;
  }
  if (per_step * job.steps > MAX_SIMULATED_SECONDS)
    return Error::at("", "model " + model.name,
                     "a compute time per step that " + std::to_string(job.steps) +
                         " steps fit in the simulated clock's range (" + fmt_seconds(MAX_SIMULATED_SECONDS) +
                         " s, about 52 days, where it still resolves nanoseconds)",
                     fmt_seconds(per_step) + " s per step");
  return {};
}

/// Where each task runs: its host, and its GPUs there (in the step layout).
struct Placement {
  training::StepLayout layout;
  std::vector<int> worker_host, ps_host;
  std::map<std::string, int> task_host; ///< every task, by name
};

Result<int> worker_host_of(const models::ClusterProfile& cluster, const TrainingLayout& L, int w)
{
  const int H = int(cluster.host_count());
  int h;
  if (!L.worker_hosts.empty()) {
    if (L.worker_hosts.size() != size_t(L.workers))
      return Error::at("", "worker_hosts", std::to_string(L.workers) + " entries",
                       std::to_string(L.worker_hosts.size()));
    h = L.worker_hosts[size_t(w)];
  } else if (L.mode == TrainingLayout::Mode::ALLREDUCE) {
    const int rph = L.ranks_per_host > 0 ? L.ranks_per_host : int(cluster.host(0).gpus.size());
    h = rph > 0 ? w / rph : w;
  } else {
    h = w % H;
  }
  if (h < 0 || h >= H)
    return Error::at("", "workers", "tasks that fit on the cluster's " + std::to_string(H) + " hosts",
                     "worker " + std::to_string(w) + " on host " + std::to_string(h));
  return h;
}

Result<Placement> place_tasks(const models::ClusterProfile& cluster, const TrainingLayout& L)
{
  const size_t H = cluster.host_count();
  const auto names = cluster.host_names();
  if (H == 0) return Error::at("", "hw", "a cluster with hosts", "none");
  if (L.mode == TrainingLayout::Mode::ALLREDUCE && L.ps_tasks > 0)
    return Error::at("", "ps", "no parameter-server task in allreduce mode (the ranks hold the variables)",
                     std::to_string(L.ps_tasks));
  Placement p;
  training::StepLayout& sl = p.layout;
  sl.mode =
      L.mode == TrainingLayout::Mode::ALLREDUCE ? training::SyncMode::ALLREDUCE : training::SyncMode::PARAMETER_SERVER;
  sl.workers = L.workers;
  sl.gpus_per_worker = L.gpus_per_worker;
  sl.ps_tasks = L.ps_tasks;
  sl.aggregate_on_worker = L.aggregate_on_worker;
  sl.fetch_per_worker = L.fetch_per_worker;
  sl.allreduce_on_host = L.allreduce_on_host;
  p.worker_host.assign(size_t(std::max(L.workers, 0)), 0);
  p.ps_host.assign(size_t(std::max(L.ps_tasks, 0)), 0);
  std::map<int, int> gpus_used;
  for (int w = 0; w < L.workers; ++w) {
    auto hr = worker_host_of(cluster, L, w);
    if (!hr.ok()) return hr.error();
    const int h = hr.value();
    p.worker_host[size_t(w)] = h;
    std::vector<int> g;
    for (int k = 0; k < L.gpus_per_worker; ++k)
      g.push_back(gpus_used[h]++);
    const int have = int(cluster.host(size_t(h)).gpus.size());
    if (gpus_used[h] > have)
      return Error::at(cluster.host(size_t(h)).file, "gpus",
                       std::to_string(gpus_used[h]) + " GPUs on " + names[size_t(h)] + " for its tasks",
                       std::to_string(have));
    sl.gpu_of.push_back(g);
  }
  for (int s = 0; s < L.ps_tasks; ++s) {
    int h = s % int(H);
    if (!L.ps_hosts.empty()) {
      if (L.ps_hosts.size() != size_t(L.ps_tasks))
        return Error::at("", "ps_hosts", std::to_string(L.ps_tasks) + " entries", std::to_string(L.ps_hosts.size()));
      h = L.ps_hosts[size_t(s)];
    }
    if (h < 0 || size_t(h) >= H)
      return Error::at("", "ps_hosts", "a host index below " + std::to_string(H), std::to_string(h));
    p.ps_host[size_t(s)] = h;
  }
  for (int w = 0; w < L.workers; ++w)
    p.task_host[training::worker_task(w)] = p.worker_host[size_t(w)];
  for (int s = 0; s < L.ps_tasks; ++s)
    p.task_host[training::ps_task(s)] = p.ps_host[size_t(s)];
  return p;
}

/// Allreduce mode with collective_mode analytical: the rings timed on the analytical fabric (null otherwise).
Result<std::unique_ptr<AnalyticalCollectives>>
analytical_rings(const models::ClusterProfile& cluster, const TrainingJob& job, const Placement& p, Simulation& sim)
{
  const auto& L = job.layout;
  if (job.collective_mode == FabricMode::FLOW)
    return Error::at("", "collective_mode", "protocol or analytical", "flow");
  const bool analytical = L.mode == TrainingLayout::Mode::ALLREDUCE && job.collective_mode == FabricMode::ANALYTICAL;
  // The analytical fabric times a ring message on the mpi transport's data path (sim/fabric_modes.hpp DataPath);
  // another transport moves it otherwise (its own copies, GPUDirect, TCP), which that timing would silently ignore.
  // (A single rank's ring moves nothing: any transport will do.)
  if (analytical && L.workers > 1 && job.transport != "mpi")
    return Error::at("", "collective_mode",
                     "protocol with transport " + job.transport +
                         " (analytical rings model the mpi transport's data path only)",
                     "analytical");
  if (analytical && L.workers > 1)
    if (auto st = check_fabric_options(job.options); !st.ok()) {
      Error e = st.error();
      e.detail += " (collective_mode analytical)";
      return e;
    }
  if (!analytical) return std::unique_ptr<AnalyticalCollectives>();
  std::vector<RankEndpoint> eps;
  for (int r = 0; r < L.workers; ++r) {
    const auto& host = cluster.host(size_t(p.worker_host[size_t(r)]));
    const int numa = host.nics.empty() ? 0 : host.nics[0].socket;
    eps.push_back({size_t(p.worker_host[size_t(r)]),
                   L.allreduce_on_host ? Location::host(numa) : Location::gpu(p.layout.gpu_of[size_t(r)][0])});
  }
  // The protocol ring's reductions and copies at rank 0's tensors (every rank's are alike).
  const collectives::RingScheduleOptions adds = ring_adds(cluster.host(size_t(p.worker_host[0])), eps[0].loc);
  return std::make_unique<AnalyticalCollectives>(ring_routes(sim.platform(), eps, mpi_data_path(job.options)), adds);
}

/// Every task as a process on its host, with its runtime, engine and executor; their placement into `out`.
Status create_tasks(Simulation& sim, const models::ClusterProfile& cluster, const TrainingJob& job, const Placement& p,
                    const training::StepGraph& sg, const jobs::RankList& ranks, AnalyticalCollectives* analytical,
                    std::vector<jobs::TrainingTask>& tasks, TrainingResult& out)
{
  const auto names = cluster.host_names();
  transports::ClusterSpec spec;
  for (const auto& [task, h] : p.task_host)
    spec[task] = process_name(task);
  jobs::TrainingTaskOptions options;
  options.executor.cpu_threads = job.cpu_threads;
  options.collectives = job.collectives;
  options.ring_runner = analytical;
  for (const auto& [task, h] : p.task_host) {
    auto proc = sim.add_process(names[size_t(h)], process_name(task));
    if (!proc.ok()) return proc.error();
    const auto& host = cluster.host(size_t(h));
    transports::TaskSpec ts;
    ts.task = task;
    ts.transport = job.transport;
    ts.memory.kind = job.strategy;
    ts.options = job.options;
    complete_task_spec(ts, host);
    SimProcess& pr = *proc.value();
    verbs::Device* dev = pr.device_count() > 0 ? &pr.device() : nullptr;
    auto rt = transports::TaskRuntime::create(ts, pr.name(), pr.runtime(), dev, pr.streams(), spec);
    if (!rt.ok()) return rt.error();
    tasks.emplace_back();
    if (auto st = jobs::set_up_task(tasks.back(), std::move(rt.value()), pr.streams(), sg, ranks, options); !st.ok())
      return st.error();
    TaskPlacement tp;
    tp.task = task;
    tp.process = pr.name();
    tp.host = names[size_t(h)];
    for (int w = 0; w < job.layout.workers; ++w)
      if (training::worker_task(w) == task) tp.gpus = p.layout.gpu_of[size_t(w)];
    out.placement.push_back(tp);
    out.task_hosts.emplace_back(task, tp.host);
  }
  return {};
}

/// MaTEx: every variable from rank 0 to all ranks (binomial tree), one after the other, before training.
Status initial_broadcast(Simulation& sim, std::vector<jobs::TrainingTask>& tasks, const jobs::RankList& ranks,
                         TrainingResult& out)
{
  const double b0 = sim.now();
  std::optional<Error> failure;
  const auto channels = jobs::start_variable_broadcast(tasks, ranks, failure);
  sim.run();
  if (failure) return Error::at("", "initial broadcast", "the variables on every rank", failure->message());
  for (auto& t : tasks)
    t.runtime->rendezvous().cleanup(0);
  out.broadcast_seconds = sim.now() - b0;
  return {};
}

/// A process killed by a fault: the master's RunGraph connection to it closes (`fin`), or, to a machine without
/// power, it does not (TF sets no deadline on it).
struct Killed {
  std::string process;
  double when = 0;
  bool fin = false;
};

/// How one step's run ended.
struct StepRun {
  double t0 = 0; ///< when it began
  size_t finished = 0;
  std::vector<char> task_done;
  std::optional<Error> failure;
  bool fatal = false; ///< reported by a transport as fatal (the original aborts), not by a failed op
  size_t failed_task = 0;
  double failed_at = 0;
};

/// Runs step `step` of every task until all finished, the first failure (with faults, or a fatal one), or the stall
/// deadline.
Result<StepRun> run_step(Simulation& sim, std::vector<jobs::TrainingTask>& tasks, int64_t step, const TrainingJob& job)
{
  for (auto& t : tasks)
    t.runtime->log().clear();
  for (auto& t : tasks)
    t.executor->clear_events();
  const double t0 = sim.now();
  const bool with_faults = !job.faults.empty();
  if (auto st = sim.arm_faults(int(step)); !st.ok()) return st.error();
  sim.set_deadline(t0 + job.stall_timeout);
  // Shared with the executors' callbacks, which may still run after this step (a transport shut down after a
  // failed step fails what was pending).
  struct StepState {
    StepRun run;
    bool failed = false;
  };
  auto ss = std::make_shared<StepState>();
  ss->run.t0 = t0;
  ss->run.task_done.assign(tasks.size(), 0);
  for (auto& t : tasks)
    if (t.engine) t.engine->begin_step(step, t.allreduces);
  Simulation* simp = &sim;
  // Also without a fault plan: a failure the original treats as fatal (e.g. LOC_LEN_ERR on a tensor over the RC
  // message limit) ends the job with its reason instead of leaving the step to stall.
  for (size_t k = 0; k < tasks.size(); ++k)
    tasks[k].runtime->set_fatal_handler([ss, k, t0, simp](const Error& e) {
      // The original process aborts here: the job is over whether or not one of its receives was waiting.
      if (ss->failed) return;
      ss->failed = true;
      ss->run.fatal = true;
      ss->run.failure = e;
      ss->run.failed_task = k;
      ss->run.failed_at = simp->now() - t0;
      simp->stop();
    });
  // Fault timers keep the step going only while some task has not finished (a fault may end a hang); once every
  // task is done they wait in the calendar, so a fault due after the step's work changes nothing in it.
  sim.set_faults_keep_alive(true);
  const size_t n = tasks.size();
  for (size_t k = 0; k < n; ++k)
    tasks[k].executor->run_step(step, [ss, k, t0, simp, with_faults, n](Status st) {
      ++ss->run.finished;
      ss->run.task_done[k] = 1;
      if (ss->run.finished == n) simp->set_faults_keep_alive(false);
      if (!st.ok() && !ss->failed) {
        ss->failed = true;
        ss->run.failure = st.error();
        ss->run.failed_task = k;
        ss->run.failed_at = simp->now() - t0;
        if (with_faults) simp->stop(); // the master aborts the step at the first error; the report says where
      }
    });
  sim.run();
  StepRun out = ss->run;
  ss->failed = true; // later callbacks (after this step) change nothing
  return out;
}

/// Why a step did not finish: a hang (nothing left to happen, or only waiting at the deadline) or slowness (the
/// deadline came while transfers or computations were still in progress: say which and what makes them slow).
std::string unfinished_why(const Simulation& sim, const TrainingJob& job, bool& slow)
{
  const auto dl = sim.at_deadline(job.stall_timeout);
  slow = dl.slow;
  const std::string within = "did not finish within stall_timeout (" + fmt_seconds(job.stall_timeout) + " simulated s)";
  if (slow)
    return within + " because it is too slow, not hung: " + dl.in_progress +
           " (a larger stall_timeout lets a run this slow finish)";
  if (!dl.in_progress.empty())
    return within +
           ", though no single transfer or computation in it was long: it kept retrying or waiting "
           "without completing (a livelock or a hang): " +
           dl.in_progress;
  if (sim.deadline_hit()) return within + " and nothing was in progress: a hang (protocol stalled)";
  return "cannot finish: nothing is left to happen and its tasks wait forever (a hang: protocol stalled)";
}

/// The report of a step that failed or did not finish under faults.
TrainingFailure describe_failure(const Simulation& sim, const TrainingJob& job,
                                 const std::vector<jobs::TrainingTask>& tasks, const StepRun& run, int64_t step,
                                 const std::vector<Killed>& killed,
                                 const std::map<std::string, std::string>& task_of_process)
{
  TrainingFailure f;
  f.step = int(step);
  const auto* info = transports::find_transport(job.transport);
  f.original = info ? info->on_failure : "";
  if (run.failure) {
    f.at = run.failed_at;
    f.task = tasks[run.failed_task].runtime->spec().task;
    const auto fo = jobs::blamed_op(tasks, run.failed_task, run.fatal);
    f.op_kind = fo.kind;
    f.op = fo.op;
    f.transfer = fo.key;
    f.error = run.failure->message();
    return f;
  }
  f.stalled = true;
  f.at = sim.now() - run.t0;
  for (size_t k = 0; k < tasks.size(); ++k)
    if (!run.task_done[k]) f.unfinished.push_back(tasks[k].runtime->spec().task);
  f.task = f.unfinished.empty() ? "" : f.unfinished.front();
  const Killed* kill = nullptr;
  for (const auto& k : killed)
    if (k.fin && !kill) kill = &k;
  if (kill) {
    // Nothing failed in the transports, but the master's RunGraph call to the killed process fails.
    f.stalled = false;
    f.at = kill->when - run.t0;
    const auto it = task_of_process.find(kill->process);
    f.task = it != task_of_process.end() ? it->second : kill->process;
    f.error = "Unavailable: " + kill->process + " was killed: the master's RunGraph call to " + f.task +
              " fails (connection closed by the peer)";
    f.original = "the master aborts the step: session.run() raises UnavailableError (\"Socket closed\")";
    return f;
  }
  bool slow = false;
  f.error = "the step " + unfinished_why(sim, job, slow);
  f.slow = slow;
  f.original = slow ? "the step runs on, as slowly (TensorFlow sets no deadline on RecvTensor or collectives)"
                    : "the step hangs (TensorFlow sets no deadline on RecvTensor or collectives by default)";
  return f;
}

/// Adds a measured step's critical path and GPU busy time to the breakdown (averaged at the end).
void add_breakdown(TrainingResult& out, const training::StepGraph& sg, const std::vector<jobs::TrainingTask>& tasks,
                   const Simulation& sim, double t0, const std::map<std::string, std::string>& task_of_process)
{
  std::vector<training::OpTiming> timings;
  std::vector<transports::TransferRecord> records;
  double busy = 0;
  for (auto& t : tasks) {
    auto ti = t.executor->timings();
    timings.insert(timings.end(), ti.begin(), ti.end());
    for (const auto& e : t.executor->events())
      if (e.kind == training::OpKind::FORWARD || e.kind == training::OpKind::BACKWARD) busy += e.end - e.start;
  }
  for (auto& t : tasks)
    for (const auto& r : t.runtime->log().records())
      records.push_back(r);
  std::vector<training::RetryWindow> retry_windows;
  for (const auto& r : sim.retry_intervals())
    if (r.end > t0 && r.start < sim.now()) {
      auto a = task_of_process.find(r.process), b = task_of_process.find(r.peer);
      if (a != task_of_process.end() && b != task_of_process.end())
        retry_windows.push_back({r.start, r.end, a->second, b->second});
    }
  const auto cp = training::critical_path(sg, timings, records, t0, sim.now(), retry_windows);
  auto& o = out.breakdown;
  o.compute += cp.compute, o.copy += cp.copy, o.registration += cp.registration, o.pcie += cp.pcie;
  o.network += cp.network, o.aggregate_apply += cp.aggregate_apply, o.waiting += cp.waiting;
  o.retry += cp.retry;
  o.gpu_busy += busy / std::max(out.gpus, 1);
}

/// The last step's op events, transfer records and platform data movements, relative to its start (for a trace).
void keep_events(TrainingResult& out, const std::vector<jobs::TrainingTask>& tasks,
                 std::vector<TrainingResult::Comm>& comms, double t0)
{
  for (auto& t : tasks)
    for (auto e : t.executor->events()) {
      e.start -= t0;
      e.end -= t0;
      out.events.push_back(e);
    }
  for (auto& t : tasks)
    for (auto r : t.runtime->log().records()) {
      r.t_start -= t0;
      r.t_end -= t0;
      out.records.add(r);
    }
  for (auto& c : comms) {
    c.start -= t0;
    c.end -= t0;
    out.comms.push_back(std::move(c));
  }
}

/// The measured steps' means, what the faults did, and the run's counters.
void finish_result(TrainingResult& out, const jobs::StepTimes& times, const TrainingJob& job, int batch,
                   const Simulation& sim, std::vector<jobs::TrainingTask>& tasks)
{
  out.step_seconds = times.seconds;
  if (times.measured > 0) {
    out.step_time = times.mean();
    auto& o = out.breakdown;
    for (double* v : {&o.compute, &o.waiting, &o.copy, &o.registration, &o.pcie, &o.network, &o.aggregate_apply,
                      &o.retry, &o.gpu_busy})
      *v /= times.measured;
    out.images_per_second = double(batch) * out.gpus / out.step_time;
  }
  if (!job.faults.empty()) {
    out.faults_injected = true;
    out.fault_stats = *sim.fault_stats();
    const int ran = out.failure ? out.failure->step : job.steps;
    for (const auto& u : sim.never_fired_faults(ran, out.failure.has_value()))
      out.fault_stats.events.push_back("never fired: " + u);
  }
  for (auto& t : tasks)
    t.runtime->transport().shutdown();
  out.simgrid_activities = sim.stats().activities;
  if (!tasks.empty() && tasks[0].engine) {
    out.negotiation_rounds = tasks[0].engine->stats().rounds;
    out.collectives_run = tasks[0].engine->stats().collectives;
  }
}

} // namespace

Result<TrainingResult> run_training_job(const models::ClusterProfile& cluster, const training::TrainingModel& model,
                                        const TrainingJob& job)
{
  const auto w0 = std::chrono::steady_clock::now();
  if (auto st = check_job(model, job); !st.ok()) return st.error();
  const auto& L = job.layout;
  // Refuse up front what the machine cannot hold or the time budget does not allow: the step graph grows with tasks x
  // (layers + variables), the rings with ranks^2.
  if (auto st = check_budget(estimate_training(cluster, model, job), "run fewer tasks or steps"); !st.ok())
    return st.error();
  auto placed = place_tasks(cluster, L);
  if (!placed.ok()) return placed.error();
  const Placement& p = placed.value();
  auto sgr = jobs::partitioned_step_graph(model, p.layout);
  if (!sgr.ok()) return sgr.error();
  const training::StepGraph sg = std::move(sgr.value());

  SimOptions sim_options;
  sim_options.faults = job.faults;
  const bool with_faults = !job.faults.empty();
  if (with_faults && L.mode == TrainingLayout::Mode::ALLREDUCE && job.collective_mode == FabricMode::ANALYTICAL)
    return Error::at("", "faults", "collective_mode protocol (analytical rings bypass the simulated NICs and links)",
                     "collective_mode analytical");
  auto simr = Simulation::create(cluster, sim_options);
  if (!simr.ok()) return simr.error();
  Simulation& sim = *simr.value();

  TrainingResult out;
  out.transport = job.transport;
  out.batch = model.batch;
  out.gpus = L.workers * L.gpus_per_worker;
  out.ps_bytes = sg.ps_bytes;
  out.remote_transfers_per_step = sg.remote_sends;
  out.remote_bytes_per_step = sg.remote_bytes;

  auto analytical = analytical_rings(cluster, job, p, sim);
  if (!analytical.ok()) return analytical.error();
  const jobs::RankList ranks = jobs::rank_list(p.layout);
  std::vector<jobs::TrainingTask> tasks;
  if (auto st = create_tasks(sim, cluster, job, p, sg, ranks, analytical.value().get(), tasks, out); !st.ok())
    return st.error();

  std::optional<Error> failure;
  for (auto& t : tasks)
    t.runtime->transport().start([&](Status st) {
      if (!st.ok() && !failure) failure = st.error();
    });
  sim.run();
  if (failure) return *failure;
  if (job.initial_broadcast && !ranks.ranks.empty() && L.workers > 1)
    if (auto st = initial_broadcast(sim, tasks, ranks, out); !st.ok()) return st.error();

  std::map<std::string, std::string> task_of_process;
  for (const auto& [task, h] : p.task_host)
    task_of_process[process_name(task)] = task;
  auto killed = std::make_shared<std::vector<Killed>>();
  sim.set_kill_listener([killed, simp = &sim](const std::string& proc, bool fin) {
    killed->push_back({proc, simp->now(), fin});
  });
  jobs::StepTimes times;
  times.warmup = job.warmup;
  std::vector<TrainingResult::Comm> comms;
  for (int s = 0; s < job.steps; ++s) {
    const int64_t step = s + 1;
    const bool last = s + 1 == job.steps;
    if (last && job.collect_events)
      sim.set_comm_tracer([&comms](const Simulation::CommTrace& c) {
        comms.push_back({c.start, c.end, c.bytes, c.links});
      });
    auto ran = run_step(sim, tasks, step, job);
    if (!ran.ok()) return ran.error();
    const StepRun& run = ran.value();
    if (run.failure && !with_faults)
      return Error::at("", "step " + std::to_string(step), "a completed training step", run.failure->message());
    if (run.finished != tasks.size() && !run.failure && !with_faults) {
      std::string names;
      for (size_t k = 0; k < tasks.size(); ++k)
        if (!run.task_done[k]) names += (names.empty() ? "" : ", ") + tasks[k].runtime->spec().task;
      bool slow = false;
      return Error::msg("training step " + std::to_string(step) + ": " + std::to_string(tasks.size() - run.finished) +
                        " task(s) never finished (" + names + "): the step " + unfinished_why(sim, job, slow));
    }
    if (run.failure || run.finished != tasks.size()) {
      out.failure = describe_failure(sim, job, tasks, run, step, *killed, task_of_process);
      break;
    }
    const double t0 = run.t0;
    const bool measured = times.add(s, sim.now() - t0);
    report_progress(double(s + 1), double(job.steps));
    for (auto& t : tasks)
      t.runtime->rendezvous().cleanup(step);
    if (!measured) continue;
    add_breakdown(out, sg, tasks, sim, t0, task_of_process);
    if (last && job.collect_events) {
      sim.set_comm_tracer(nullptr);
      keep_events(out, tasks, comms, t0);
    }
  }
  finish_result(out, times, job, model.batch, sim, tasks);
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  return out;
}

} // namespace tp::sim
