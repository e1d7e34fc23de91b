// The simulator's training job (see training_job.hpp): placement on the cluster's hosts, analytical rings, and the
// hooks of what only the simulator has (fault injection, stall diagnosis, link tracing) around the training
// driver's steps (core/jobs/training_driver.hpp), which the emulator's training job runs too.
#include "sim/training_job.hpp"

#include "core/jobs/training_tasks.hpp"
#include "models/network_models.hpp"
#include "sim/analytical_collectives.hpp"
#include "sim/job_estimate.hpp"
#include "sim/large_pages.hpp"
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
    h = w / allreduce_ranks_per_host(cluster, L);
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

/// Allreduce mode with collective_mode analytical: the rings timed on the analytical fabric (null otherwise); each
/// one a ring of `ring_ranks` whose routes repeat the placed ranks' (0: the placed ranks).
Result<std::unique_ptr<AnalyticalCollectives>> analytical_rings(const models::ClusterProfile& cluster,
                                                                const TrainingJob& job, const Placement& p,
                                                                Simulation& sim, int ring_ranks)
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
  const DataPath path = mpi_data_path(job.options);
  auto rings = std::make_unique<AnalyticalCollectives>(ring_routes(sim.platform(), eps, path), adds, ring_ranks);
  // The first hosts' ranks as the ring's period, where the ranks go on past them (checked per tensor size).
  if (ring_ranks <= 0)
    if (auto period = ring_period(sim.platform(), eps, path)) rings->set_period(std::move(*period));
  return rings;
}

/// Network model roce: every ring takes, beyond the analytical fabric's time on the cluster, what the job's RoCE
/// fabric adds to its hops between hosts: their max-min time over a non-blocking fabric of the same leaves (the
/// oversubscribed uplinks: network time), and the roce model's time over that max-min (PFC pauses, DCQCN's rate
/// cuts: a wait, charged to the critical path's retry through Simulation::add_charged_wait). Ranks are taken in ring
/// order; hops inside a host cross no switch.
Status add_roce_congestion(const models::ClusterProfile& cluster, const TrainingJob& job, const Placement& p,
                           Simulation& sim, AnalyticalCollectives* rings)
{
  if (!job.roce_fabric) return {};
  const auto& L = job.layout;
  if (L.mode != TrainingLayout::Mode::ALLREDUCE || !rings)
    return Error::at("", "network_model", "an allreduce job whose rings are timed (collective_mode analytical)",
                     "roce");
  const int ranks = L.workers;
  int hops = 0;
  for (int r = 0; r < ranks; ++r)
    hops += p.worker_host[size_t(r)] != p.worker_host[size_t((r + 1) % ranks)];
  const auto& host = cluster.host(size_t(p.worker_host[0]));
  if (host.nics.empty()) return Error::at("", "network_model", "ranks on hosts with a NIC", "roce");
  const models::RoceConfig fabric = models::roce_at_nic_rate(*job.roce_fabric, host.nics[0].nic.line_rate * 8);
  // The model's errors in the file's terms: roce_fabric.<key>, the ring's hops between hosts for its senders.
  auto in_field = [hops, sw = fabric.switch_name](Error e) {
    return models::roce_fabric_error(std::move(e), hops, sw);
  };
  const int checked_hops = std::max(hops, 2); // the settings are checked even where no hop leaves a host
  if (auto st = models::check_roce(models::roce_ring(fabric, std::max(ranks, 2), checked_hops, 1e6)); !st.ok())
    return in_field(st.error());
  if (hops == 0) return {}; // every rank on one host: no ring crosses the fabric
  rings->set_congestion(
      [fabric, ranks, hops, in_field](double bytes) -> Result<AnalyticalCollectives::Extra> {
        const auto c = models::roce_ring(fabric, ranks, hops, bytes);
        auto roce = models::run_roce_model("roce", c);
        if (!roce.ok()) return in_field(roce.error());
        auto flow = models::run_roce_model("flow", c);
        if (!flow.ok()) return in_field(flow.error());
        auto open = c;
        open.oversubscription = 1;
        auto open_flow = models::run_roce_model("flow", open);
        if (!open_flow.ok()) return in_field(open_flow.error());
        return AnalyticalCollectives::Extra{std::max(0.0, flow->completion - open_flow->completion),
                                            std::max(0.0, roce->completion - flow->completion)};
      },
      // One window per ring, between its first two ranks: the critical path charges any window against an
      // allreduce.
      [&sim, first = process_name(training::worker_task(0)),
       second = process_name(training::worker_task(1 % std::max(ranks, 1)))](double from, double until) {
        sim.add_charged_wait(RetryInterval{from, until, first, second});
      });
  return {};
}

/// Where each task runs, for the report and the trace's processes.
void add_placement(TrainingResult& out, const models::ClusterProfile& cluster, const TrainingJob& job,
                   const Placement& p)
{
  const auto names = cluster.host_names();
  for (const auto& [task, h] : p.task_host) {
    TaskPlacement tp;
    tp.task = task;
    tp.process = process_name(task);
    tp.host = names[size_t(h)];
    for (int w = 0; w < job.layout.workers; ++w)
      if (training::worker_task(w) == task) tp.gpus = p.layout.gpu_of[size_t(w)];
    out.placement.push_back(tp);
    out.task_hosts.emplace_back(task, tp.host);
  }
}

/// A process killed by a fault: the master's RunGraph connection to it closes (`fin`), or, to a machine without
/// power, it does not (TF sets no deadline on it).
struct Killed {
  std::string process;
  double when = 0;
  bool fin = false;
};

/// What only the simulator does around a training step: arm the step's faults and keep their timers alive while a
/// task is unfinished, trace the last step's link use, give the retransmission windows, and explain a step that
/// did not finish from the simulation's state (a killed process, a hang, or slowness at the stall deadline).
class SimTrainingHooks final : public jobs::TrainingHooks {
public:
  SimTrainingHooks(Simulation& sim, const TrainingJob& job, const Placement& p) : sim_(sim), job_(job)
  {
    for (const auto& [task, h] : p.task_host)
      task_of_process_[process_name(task)] = task;
    sim.set_kill_listener([killed = killed_, simp = &sim](const std::string& proc, bool fin) {
      killed->push_back({proc, simp->now(), fin});
    });
  }
  ~SimTrainingHooks() override { sim_.set_kill_listener(nullptr); }

  Status before_step(int64_t step, bool last) override
  {
    if (last && job_.collect_events) {
      sim_.set_comm_tracer([this](const Simulation::CommTrace& c) {
        comms.push_back({c.start, c.end, c.bytes, c.links});
      });
      sim_.record_cpu(true);
    }
    if (auto st = sim_.arm_faults(int(step)); !st.ok()) return st.error();
    // Fault timers keep the step going only while some task has not finished (a fault may end a hang); once every
    // task is done they wait in the calendar, so a fault due after the step's work changes nothing in it.
    sim_.set_faults_keep_alive(true);
    return ok_status();
  }
  void all_tasks_ended() override { sim_.set_faults_keep_alive(false); }
  void after_step(int64_t, bool last, bool) override
  {
    if (last && job_.collect_events) {
      sim_.set_comm_tracer(nullptr);
      cpu_tracks = sim_.cpu_tracks();
      sim_.record_cpu(false);
    }
  }
  std::vector<jobs::ProcessCpuUse> cpu_use() override
  {
    std::vector<jobs::ProcessCpuUse> out;
    for (const auto& c : sim_.cpu_use()) {
      out.push_back({task_of_process(c.process), c.host, c.rpc_threads, c.rpc_cpu_seconds, c.rpc_waited_seconds,
                     double(c.rpc_messages), c.work_cpu_seconds, c.busy_pollers});
    }
    return out;
  }
  std::vector<training::RetryWindow> retry_windows(double t0, double t1) override
  {
    std::vector<training::RetryWindow> out;
    for (const auto& r : sim_.retry_intervals())
      if (r.end > t0 && r.start < t1) {
        auto a = task_of_process_.find(r.process), b = task_of_process_.find(r.peer);
        if (a != task_of_process_.end() && b != task_of_process_.end())
          out.push_back({r.start, r.end, a->second, b->second});
      }
    return out;
  }
  /// A hang (nothing left to happen, or only waiting at the deadline) or slowness (the deadline came while transfers
  /// or computations were still in progress: say which and what makes them slow).
  std::string unfinished_why(double, bool& slow) override
  {
    const auto dl = sim_.at_deadline(job_.stall_timeout);
    slow = dl.slow;
    const std::string within =
        "did not finish within stall_timeout (" + fmt_seconds(job_.stall_timeout) + " simulated s)";
    if (slow)
      return within + " because it is too slow, not hung: " + dl.in_progress +
             " (a larger stall_timeout lets a run this slow finish)";
    if (!dl.in_progress.empty())
      return within +
             ", though no single transfer or computation in it was long: it kept retrying or waiting "
             "without completing (a livelock or a hang): " +
             dl.in_progress;
    if (sim_.deadline_hit()) return within + " and nothing was in progress: a hang (protocol stalled)";
    return "cannot finish: nothing is left to happen and its tasks wait forever (a hang: protocol stalled)";
  }
  void explain_stall(TrainingFailure& f, double t0) override
  {
    const Killed* kill = nullptr;
    for (const auto& k : *killed_)
      if (k.fin && !kill) kill = &k;
    if (!kill) return jobs::TrainingHooks::explain_stall(f, t0);
    // Nothing failed in the transports, but the master's RunGraph call to the killed process fails.
    f.stalled = false;
    f.at = kill->when - t0;
    const auto it = task_of_process_.find(kill->process);
    f.task = it != task_of_process_.end() ? it->second : kill->process;
    f.error = "Unavailable: " + kill->process + " was killed: the master's RunGraph call to " + f.task +
              " fails (connection closed by the peer)";
    f.original = "the master aborts the step: session.run() raises UnavailableError (\"Socket closed\")";
  }

  std::vector<TrainingResult::Comm> comms; ///< the last step's data movements on the platform's links
  std::vector<CpuTrack> cpu_tracks;        ///< the last step's busy gRPC threads per process

  /// The task a process runs (its own name when it runs none).
  std::string task_of_process(const std::string& process) const
  {
    auto t = task_of_process_.find(process);
    return t != task_of_process_.end() ? t->second : process;
  }

private:
  Simulation& sim_;
  const TrainingJob& job_;
  std::map<std::string, std::string> task_of_process_;
  std::shared_ptr<std::vector<Killed>> killed_ = std::make_shared<std::vector<Killed>>();
};

/// The driver's job for `job` placed as `p`.
jobs::TrainingDriverJob driver_job(const TrainingJob& job, const Placement& p, AnalyticalCollectives* analytical)
{
  jobs::TrainingDriverJob dj;
  dj.transport = job.transport;
  dj.strategy = job.strategy;
  dj.options = job.options;
  for (const auto& [task, h] : p.task_host)
    dj.task_host[task] = size_t(h);
  // A worker's tensors live on its (first) GPU: it talks through the NIC nearest it, one rail per GPU on a node with
  // a NIC per GPU (on a host with one NIC, that NIC).
  for (int w = 0; w < job.layout.workers; ++w)
    if (!p.layout.gpu_of[size_t(w)].empty())
      dj.task_data[training::worker_task(w)] = Location::gpu(p.layout.gpu_of[size_t(w)][0]);
  dj.steps = job.steps;
  dj.warmup = job.warmup;
  dj.task_options.executor.cpu_threads = job.cpu_threads;
  dj.task_options.collectives = job.collectives;
  dj.task_options.ring_runner = analytical;
  dj.initial_broadcast = job.initial_broadcast;
  dj.step_timeout = job.stall_timeout;
  dj.report_failure = !job.faults.empty();
  dj.breakdown = true;
  dj.collect_events = job.collect_events;
  return dj;
}

/// The driver's result, the last step's link use and what the faults did, into `out`.
void finish_result(TrainingResult& out, jobs::TrainingDriverResult&& r, SimTrainingHooks& hooks, const TrainingJob& job,
                   int batch, const Simulation& sim)
{
  out.step_seconds = std::move(r.step_seconds);
  out.step_time = r.step_time;
  out.breakdown = r.breakdown;
  out.cpu_use = std::move(r.cpu_use);
  if (r.measured > 0) out.images_per_second = double(batch) * out.gpus / out.step_time;
  out.broadcast_seconds = r.broadcast_seconds;
  out.negotiation_rounds = r.negotiation_rounds;
  out.collectives_run = r.collectives_run;
  out.failure = std::move(r.failure);
  if (r.events_kept) {
    out.events = std::move(r.events);
    out.records = std::move(r.records);
    for (auto& c : hooks.comms) {
      c.start -= r.last_step_start;
      c.end -= r.last_step_start;
      out.comms.push_back(std::move(c));
    }
    for (auto& t : hooks.cpu_tracks) {
      auto it = hooks.task_of_process(t.process);
      t.process = it;
      for (auto& [when, busy] : t.busy)
        when = std::max(0.0, when - r.last_step_start);
      out.cpu_tracks.push_back(std::move(t));
    }
  }
  if (!job.faults.empty()) {
    out.faults_injected = true;
    out.fault_stats = *sim.fault_stats();
    const int ran = out.failure ? out.failure->step : job.steps;
    for (const auto& u : sim.never_fired_faults(ran, out.failure.has_value()))
      out.fault_stats.events.push_back("never fired: " + u);
  }
  out.incast_bursts_charged = sim.incast_bursts_charged();
  std::tie(out.incast_port_buffer_min, out.incast_port_buffer_max) = sim.incast_port_buffers();
  const SimStats stats = sim.stats();
  out.simgrid_activities = stats.activities;
  out.short_comms = stats.short_comms;
  out.simgrid_rounds = stats.simgrid_rounds;
  out.timers_run_ahead = stats.timers_run_ahead;
}

} // namespace

Result<std::optional<SymmetricJob>> symmetric_ranks_job(const models::ClusterProfile& cluster, const TrainingJob& job)
{
  const auto& L = job.layout;
  auto refuse = [](const std::string& expected, const std::string& got) {
    return Error::at("", "symmetric_ranks", expected + "; every host must run alike", got);
  };
  if (L.mode != TrainingLayout::Mode::ALLREDUCE) return refuse("an allreduce job", "a parameter-server job");
  if (job.collective_mode != FabricMode::ANALYTICAL)
    return refuse("collective_mode analytical (rings timed for the whole job)", "collective_mode protocol");
  if (!job.faults.empty()) return refuse("a job without injected faults", "faults on some hosts");
  if (job.initial_broadcast) return refuse("no initial broadcast", "a broadcast from rank 0");
  if (job.roce_fabric) return refuse("network model flow or analytical", "network model roce");
  if (!L.worker_hosts.empty()) return refuse("ranks placed in order, host by host", "worker_hosts given");
  if (cluster.groups.size() != 1)
    return refuse("a cluster of one group of identical hosts", std::to_string(cluster.groups.size()) + " groups");
  if (cluster.topology && cluster.topology->tiers > 1)
    return refuse("hosts behind one switch", std::to_string(cluster.topology->tiers) + "-tier topology");
  const int per_host = L.ranks_per_host > 0 ? L.ranks_per_host : int(cluster.host(0).gpus.size());
  if (per_host < 1 || L.workers % per_host != 0)
    return refuse("ranks filling every host (a multiple of " + std::to_string(per_host) + " per host)",
                  std::to_string(L.workers) + " ranks");
  const int hosts = L.workers / per_host;
  if (hosts <= SYMMETRIC_SIMULATED_HOSTS) return std::optional<SymmetricJob>{};
  SymmetricJob c{cluster, job, L.workers, hosts};
  c.cluster.groups[0].count = SYMMETRIC_SIMULATED_HOSTS;
  c.job.layout.workers = SYMMETRIC_SIMULATED_HOSTS * per_host;
  c.job.layout.ranks_per_host = per_host;
  c.job.symmetric_ranks = false; // the job as simulated
  // The second host's ranks stand for every host but rank 0's: the coordinator works on their requests and
  // responses once per host.
  c.job.collectives.first_mirrored_rank = per_host;
  c.job.collectives.mirrored_copies = uint32_t(hosts - 1);
  return std::optional<SymmetricJob>{std::move(c)};
}

namespace {

/// The job as placed on `cluster`; `ring_ranks` > 0: its rings are that many ranks' (TrainingJob::symmetric_ranks).
Result<TrainingResult> run_placed(const models::ClusterProfile& cluster, const training::TrainingModel& model,
                                  const TrainingJob& job, int ring_ranks)
{
  const auto w0 = std::chrono::steady_clock::now();
  const auto& L = job.layout;
  // Refuse up front what the machine cannot hold or the time budget does not allow: the step graph grows with tasks x
  // (layers + variables), the rings with ranks^2.
  const JobEstimate need = estimate_training(cluster, model, job);
  if (auto st = check_budget(need, "run fewer tasks or steps"); !st.ok()) return st.error();
  if (auto pages = use_large_pages_for(need.bytes); !pages.ok()) return pages.error();
  auto placed = place_tasks(cluster, L);
  if (!placed.ok()) return placed.error();
  const Placement& p = placed.value();
  training::StepLayout graph_layout = p.layout;
  graph_layout.one_rank_template = job.share_rank_ops;
  auto sgr = jobs::partitioned_step_graph(model, graph_layout);
  if (!sgr.ok()) return sgr.error();
  const training::StepGraph sg = std::move(sgr.value());

  SimOptions sim_options;
  sim_options.faults = job.faults;
  sim_options.rpc_threads = job.rpc_threads;
  sim_options.tcp_incast = job.tcp_incast;
  sim_options.tcp_port_buffer = job.tcp_port_buffer;
  const models::SwitchProfile& leaf = cluster.leaf_switch();
  if (job.tcp_incast && job.tcp_port_buffer == 0) { // the receivers' ports share their switch's memory
    auto share = models::lossy_port_buffer(leaf, 1);
    if (!share.ok()) return Error::at("", "port_buffer", share.error().expected, share.error().got);
    sim_options.tcp_switch_buffer = leaf.buffer;
  }
  // The network model the job's collectives run on must inject each of its faults (models/network_models.cpp): the
  // scenario parser refuses the others already; a job built in code meets the same words here.
  if (job.tcp_incast && L.mode != TrainingLayout::Mode::PARAMETER_SERVER)
    return Error::at("", "tcp_port_buffer", "a parameter-server job (tcp-incast charges the N-to-1 bursts of a PS)",
                     "an allreduce job");
  if (!job.faults.empty()) {
    const bool analytical = L.mode == TrainingLayout::Mode::ALLREDUCE && job.collective_mode == FabricMode::ANALYTICAL;
    const char* model = job.tcp_incast ? "tcp-incast" : job.roce_fabric ? "roce" : analytical ? "analytical" : "flow";
    if (auto st = models::check_faults_supported(model, "training", fault_type_names(job.faults)); !st.ok())
      return st.error();
  }
  auto simr = Simulation::create(cluster, sim_options);
  if (!simr.ok()) return simr.error();
  Simulation& sim = *simr.value();

  TrainingResult out;
  out.transport = job.transport;
  out.batch = model.batch;
  out.gpus = (ring_ranks > 0 ? ring_ranks : L.workers) * L.gpus_per_worker; // symmetric ranks: the whole job's
  out.ps_bytes = sg.ps_bytes;
  out.remote_transfers_per_step = sg.remote_sends;
  out.remote_bytes_per_step = sg.remote_bytes;
  out.rank_template = sg.rank_template;
  add_placement(out, cluster, job, p);

  auto analytical = analytical_rings(cluster, job, p, sim, ring_ranks);
  if (!analytical.ok()) return analytical.error();
  if (auto st = add_roce_congestion(cluster, job, p, sim, analytical.value().get()); !st.ok()) return st.error();
  SimJobBackend backend(sim, cluster);
  SimTrainingHooks hooks(sim, job, p);
  auto r = jobs::run_training(backend, sg, driver_job(job, p, analytical.value().get()), hooks);
  if (!r.ok()) return r.error();
  finish_result(out, std::move(r.value()), hooks, job, model.batch, sim);
  if (analytical.value()) {
    out.analytical_shared_link_sizes = analytical.value()->shared_link_sizes();
    out.analytical_bounded_sizes = analytical.value()->bounded_sizes();
    out.analytical_folded_sizes = analytical.value()->folded_sizes();
  }
  if (sim_options.tcp_switch_buffer) out.incast_buffer_switch = leaf.name;
  if (const std::string e = sim.incast_error(); !e.empty())
    return Error::at("", "port_buffer", "a port the tcp-incast model can run", e);
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  return out;
}

} // namespace

Result<TrainingResult> run_training_job(const models::ClusterProfile& cluster, const training::TrainingModel& model,
                                        const TrainingJob& job)
{
  if (auto st = check_job(model, job); !st.ok()) return st.error();
  if (!job.symmetric_ranks) return run_placed(cluster, model, job, 0);
  if (auto placed = place_tasks(cluster, job.layout); !placed.ok()) return placed.error(); // the whole job fits
  auto collapsed = symmetric_ranks_job(cluster, job);
  if (!collapsed.ok()) return collapsed.error();
  if (!collapsed.value()) return run_placed(cluster, model, job, 0);
  // The rings folded for every rank count too (run_placed checks the simulated part only).
  if (auto st = check_budget(estimate_training(cluster, model, job), "run fewer ranks or steps"); !st.ok())
    return st.error();
  const SymmetricJob& c = *collapsed.value();
  auto r = run_placed(c.cluster, model, c.job, c.ranks);
  if (!r.ok()) return r.error();
  TrainingResult& out = r.value();
  out.simulated_ranks = c.job.layout.workers;
  out.symmetric_hosts = c.hosts;
  return r;
}

int allreduce_ranks_per_host(const models::ClusterProfile& cluster, const TrainingLayout& layout)
{
  if (layout.ranks_per_host > 0) return layout.ranks_per_host;
  const int gpus = cluster.host_count() > 0 ? int(cluster.host(0).gpus.size()) : 0;
  return gpus > 0 ? gpus : 1;
}

} // namespace tp::sim
