// Training job driver (see training_job.hpp).
#include "sim/training_job.hpp"

#include "core/collectives/ring.hpp"
#include "core/common/progress.hpp"
#include "core/training/critical_path.hpp"
#include "core/training/step_graph.hpp"
#include "sim/analytical_collectives.hpp"
#include "sim/job_estimate.hpp"
#include "sim/platform.hpp"
#include "sim/simulation.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>

namespace tp::sim {

namespace {

std::string process_name(const std::string& task)
{
  // "/job:worker/replica:0/task:3" -> "worker3"
  const auto j = task.find("/job:") + 5;
  const auto r = task.find('/', j);
  const auto t = task.rfind(':');
  return task.substr(j, r - j) + task.substr(t + 1);
}

std::string fmt_seconds(double s)
{
  char b[48];
  std::snprintf(b, sizeof b, "%g", s);
  return b;
}

bool allreduce_mode_check(const TrainingLayout&, const TrainingJob& job)
{
  return job.collective_mode == FabricMode::FLOW;
}

/// MaTEx's initial broadcast on one rank: the variables one after the other.
struct Broadcasts {
  collectives::Channel* ch = nullptr;
  std::vector<std::pair<std::string, Tensor>> vars;
  std::optional<Error>* failure = nullptr;
};

void broadcast_next(std::shared_ptr<Broadcasts> b, size_t i)
{
  if (i == b->vars.size()) return;
  collectives::tree_broadcast(*b->ch, 0, "broadcast/" + b->vars[i].first, b->vars[i].second, 0,
                              [b, i](Result<Tensor> r) {
                                if (!r.ok() && !*b->failure) *b->failure = r.error();
                                broadcast_next(b, i + 1);
                              });
}

} // namespace

Result<TrainingResult> run_training_job(const models::ClusterProfile& cluster, const training::TrainingModel& model,
                                        const TrainingJob& job)
{
  const auto w0 = std::chrono::steady_clock::now();
  if (job.steps < 1 || job.warmup < 0 || job.warmup >= job.steps)
    return Error::at("", "steps", "steps >= 1 and 0 <= warmup < steps",
                     std::to_string(job.steps) + " steps, " + std::to_string(job.warmup) + " warm-up");
  if (!(job.stall_timeout > 0) || !(job.stall_timeout <= MAX_SIMULATED_SECONDS))
    return Error::at("", "stall_timeout",
                     "simulated seconds in (0, " + fmt_seconds(MAX_SIMULATED_SECONDS) +
                         "] (the simulated clock resolves nanoseconds up to about 52 days)",
                     fmt_seconds(job.stall_timeout));
  {
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
  }
  const auto& L = job.layout;
  // Refuse up front what the machine cannot hold or the time budget does not allow: the step graph grows with tasks x
  // (layers + variables), the rings with ranks^2.
  if (auto st = check_budget(estimate_training(cluster, model, job), "run fewer tasks or steps"); !st.ok())
    return st.error();
  const size_t H = cluster.host_count();
  const auto names = cluster.host_names();
  if (H == 0) return Error::at("", "hw", "a cluster with hosts", "none");
  if (L.mode == TrainingLayout::Mode::ALLREDUCE && L.ps_tasks > 0)
    return Error::at("", "ps", "no parameter-server task in allreduce mode (the ranks hold the variables)",
                     std::to_string(L.ps_tasks));

  // Placement of tasks on hosts and GPUs.
  training::StepLayout sl;
  sl.mode =
      L.mode == TrainingLayout::Mode::ALLREDUCE ? training::SyncMode::ALLREDUCE : training::SyncMode::PARAMETER_SERVER;
  sl.workers = L.workers;
  sl.gpus_per_worker = L.gpus_per_worker;
  sl.ps_tasks = L.ps_tasks;
  sl.aggregate_on_worker = L.aggregate_on_worker;
  sl.fetch_per_worker = L.fetch_per_worker;
  sl.allreduce_on_host = L.allreduce_on_host;
  std::vector<int> worker_host(size_t(std::max(L.workers, 0))), ps_host(size_t(std::max(L.ps_tasks, 0)));
  std::map<int, int> gpus_used;
  for (int w = 0; w < L.workers; ++w) {
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
      h = w % int(H);
    }
    if (h < 0 || size_t(h) >= H)
      return Error::at("", "workers", "tasks that fit on the cluster's " + std::to_string(H) + " hosts",
                       "worker " + std::to_string(w) + " on host " + std::to_string(h));
    worker_host[size_t(w)] = h;
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
    ps_host[size_t(s)] = h;
  }

  auto sgr = training::build_step_graph(model, sl);
  if (!sgr.ok()) return sgr.error();
  training::StepGraph sg = std::move(sgr.value());
  training::partition(sg);

  SimOptions sim_options;
  sim_options.faults = job.faults;
  const bool with_faults = !job.faults.empty();
  if (!(job.stall_timeout > 0)) return Error::at("", "stall_timeout", "a positive number of seconds", "<= 0");
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

  transports::ClusterSpec spec;
  std::map<std::string, int> task_host;
  for (int w = 0; w < L.workers; ++w)
    task_host[training::worker_task(w)] = worker_host[size_t(w)];
  for (int s = 0; s < L.ps_tasks; ++s)
    task_host[training::ps_task(s)] = ps_host[size_t(s)];
  for (const auto& [task, h] : task_host)
    spec[task] = process_name(task);

  if (allreduce_mode_check(L, job)) return Error::at("", "collective_mode", "protocol or analytical", "flow");
  // The analytical fabric times a ring message on the mpi transport's data path (sim/fabric_modes.hpp DataPath);
  // another transport moves it otherwise (its own copies, GPUDirect, TCP), which that timing would silently ignore.
  // (A single rank's ring moves nothing: any transport will do.)
  if (L.mode == TrainingLayout::Mode::ALLREDUCE && job.collective_mode == FabricMode::ANALYTICAL && L.workers > 1 &&
      job.transport != "mpi")
    return Error::at("", "collective_mode",
                     "protocol with transport " + job.transport +
                         " (analytical rings model the mpi transport's data path only)",
                     "analytical");
  if (L.mode == TrainingLayout::Mode::ALLREDUCE && job.collective_mode == FabricMode::ANALYTICAL && L.workers > 1)
    if (auto st = check_fabric_options(job.options); !st.ok()) {
      Error e = st.error();
      e.detail += " (collective_mode analytical)";
      return e;
    }
  std::unique_ptr<AnalyticalCollectives> analytical;
  if (L.mode == TrainingLayout::Mode::ALLREDUCE && job.collective_mode == FabricMode::ANALYTICAL) {
    std::vector<RankEndpoint> eps;
    for (int r = 0; r < L.workers; ++r) {
      const auto& host = cluster.host(size_t(worker_host[size_t(r)]));
      const int numa = host.nics.empty() ? 0 : host.nics[0].socket;
      eps.push_back({size_t(worker_host[size_t(r)]),
                     L.allreduce_on_host ? Location::host(numa) : Location::gpu(sl.gpu_of[size_t(r)][0])});
    }
    // The protocol ring's reductions and copies at rank 0's tensors (every rank's are alike).
    const collectives::RingScheduleOptions adds = ring_adds(cluster.host(size_t(worker_host[0])), eps[0].loc);
    analytical =
        std::make_unique<AnalyticalCollectives>(ring_routes(sim.platform(), eps, mpi_data_path(job.options)), adds);
  }

  std::vector<std::unique_ptr<transports::TaskRuntime>> runtimes;
  std::vector<std::unique_ptr<training::TaskExecutor>> executors;
  std::vector<std::unique_ptr<collectives::CollectiveEngine>> engines;
  std::vector<size_t> expected; // ALLREDUCE ops per executor and step
  std::vector<collectives::RankInfo> ranks;
  std::vector<std::string> rank_process;
  const bool allreduce = L.mode == TrainingLayout::Mode::ALLREDUCE;
  if (allreduce)
    for (int r = 0; r < L.workers; ++r) {
      ranks.push_back({training::worker_task(r),
                       training::worker_task(r) + (L.allreduce_on_host
                                                       ? std::string("/device:CPU:0")
                                                       : "/device:GPU:" + std::to_string(sl.gpu_of[size_t(r)][0]))});
      rank_process.push_back(process_name(training::worker_task(r)));
    }
  for (const auto& [task, h] : task_host) {
    auto p = sim.add_process(names[size_t(h)], process_name(task));
    if (!p.ok()) return p.error();
    const auto& host = cluster.host(size_t(h));
    transports::TaskSpec ts;
    ts.task = task;
    ts.transport = job.transport;
    ts.memory.kind = job.strategy;
    ts.memory.nic_socket = host.nics.empty() ? 0 : host.nics[0].socket;
    for (size_t g = 0; g < host.gpus.size(); ++g)
      if (!host.nics.empty() && host.gpus[g].socket == host.nics[0].socket) ts.memory.gpudirect_gpus.push_back(int(g));
    ts.options = job.options;
    ts.cpu_numa_node = ts.memory.nic_socket;
    verbs::Device* dev = p.value()->device_count() > 0 ? &p.value()->device() : nullptr;
    auto rt =
        transports::TaskRuntime::create(ts, p.value()->name(), p.value()->runtime(), dev, p.value()->streams(), spec);
    if (!rt.ok()) return rt.error();
    training::ExecutorOptions eo;
    eo.cpu_threads = job.cpu_threads;
    collectives::CollectiveEngine* engine = nullptr;
    if (allreduce) {
      int rank = 0;
      while (ranks[size_t(rank)].task != task)
        ++rank;
      engines.push_back(std::make_unique<collectives::CollectiveEngine>(*rt.value(), p.value()->streams(), ranks,
                                                                        rank_process, rank, job.collectives));
      engine = engines.back().get();
      if (analytical) engine->set_ring_runner(analytical.get());
      if (auto st = engine->start(); !st.ok()) return st.error();
    }
    if (engine && !job.collectives.coordinator) {
      // MaTEx: one blocking allreduce per gradient in graph order, the same on every rank (rank 0's op order).
      std::vector<std::pair<int, std::string>> ordered;
      for (auto [vi, vend] = boost::vertices(sg.graph); vi != vend; ++vi)
        if (sg.graph[*vi].kind == training::OpKind::ALLREDUCE &&
            training::task_of_device(sg.graph[*vi].device) == training::worker_task(0))
          ordered.emplace_back(sg.graph[*vi].order, sg.graph[*vi].collective);
      std::sort(ordered.begin(), ordered.end());
      std::vector<std::string> names;
      for (auto& [o, n] : ordered)
        names.push_back(n);
      engine->set_order(std::move(names));
    }
    auto ex = std::make_unique<training::TaskExecutor>(*rt.value(), sg, eo, engine);
    size_t n_allreduce = 0;
    for (auto [vi, vend] = boost::vertices(sg.graph); vi != vend; ++vi)
      n_allreduce +=
          sg.graph[*vi].kind == training::OpKind::ALLREDUCE && training::task_of_device(sg.graph[*vi].device) == task;
    expected.push_back(n_allreduce);
    if (auto st = ex->prepare(); !st.ok()) return st.error();
    TaskPlacement tp;
    tp.task = task;
    tp.process = p.value()->name();
    tp.host = names[size_t(h)];
    for (int w = 0; w < L.workers; ++w)
      if (training::worker_task(w) == task) tp.gpus = sl.gpu_of[size_t(w)];
    out.placement.push_back(tp);
    out.task_hosts.emplace_back(task, tp.host);
    runtimes.push_back(std::move(rt.value()));
    executors.push_back(std::move(ex));
  }

  std::optional<Error> failure;
  for (auto& rt : runtimes)
    rt->transport().start([&](Status st) {
      if (!st.ok() && !failure) failure = st.error();
    });
  sim.run();
  if (failure) return *failure;

  if (job.initial_broadcast && allreduce && L.workers > 1) {
    // MaTEx: every variable from rank 0 to all ranks (binomial tree), one after the other, before training.
    const double b0 = sim.now();
    std::vector<std::unique_ptr<collectives::Channel>> channels;
    for (size_t k = 0; k < runtimes.size(); ++k) {
      int rank = 0;
      while (ranks[size_t(rank)].task != runtimes[k]->spec().task)
        ++rank;
      channels.push_back(std::make_unique<collectives::Channel>(*runtimes[k], ranks, rank));
    }
    for (size_t k = 0; k < executors.size(); ++k) {
      auto b = std::make_shared<Broadcasts>();
      b->ch = channels[k].get();
      b->failure = &failure;
      for (const auto& [name, t] : executors[k]->variables())
        b->vars.emplace_back(name.substr(0, name.rfind("/rank")), t);
      broadcast_next(b, 0);
    }
    sim.run();
    if (failure) return Error::at("", "initial broadcast", "the variables on every rank", failure->message());
    for (auto& rt : runtimes)
      rt->rendezvous().cleanup(0);
    out.broadcast_seconds = sim.now() - b0;
  }

  std::map<std::string, std::string> task_of_process;
  for (const auto& [task, h] : task_host)
    task_of_process[process_name(task)] = task;
  // Processes killed by faults: the master's RunGraph connection to a killed process closes, to a machine without
  // power it does not (TF sets no deadline on it).
  struct Killed {
    std::string process;
    double when = 0;
    bool fin = false;
  };
  auto killed = std::make_shared<std::vector<Killed>>();
  sim.set_kill_listener([killed, simp = &sim](const std::string& p, bool fin) {
    killed->push_back({p, simp->now(), fin});
  });
  int measured = 0;
  std::vector<TrainingResult::Comm> comms;
  for (int s = 0; s < job.steps; ++s) {
    const int64_t step = s + 1;
    const bool last = s + 1 == job.steps;
    if (last && job.collect_events)
      sim.set_comm_tracer([&comms](const Simulation::CommTrace& c) {
        comms.push_back({c.start, c.end, c.bytes, c.links});
      });
    for (auto& rt : runtimes)
      rt->log().clear();
    for (auto& ex : executors)
      ex->clear_events();
    const double t0 = sim.now();
    if (auto st = sim.arm_faults(int(step)); !st.ok()) return st.error();
    sim.set_deadline(t0 + job.stall_timeout);
    // Shared with the executors' callbacks, which may still run after this step (a transport shut down after a
    // failed step fails what was pending).
    struct StepState {
      size_t finished = 0;
      std::vector<char> task_done;
      bool failed = false;
      bool fatal = false; ///< reported by a transport as fatal (the original aborts), not by a failed op
      Error error;
      size_t failed_task = 0;
      double failed_at = 0;
    };
    auto ss = std::make_shared<StepState>();
    ss->task_done.assign(executors.size(), 0);
    for (size_t k = 0; k < engines.size(); ++k)
      engines[k]->begin_step(step, expected[k]);
    Simulation* simp = &sim;
    // Also without a fault plan: a failure the original treats as fatal (e.g. LOC_LEN_ERR on a tensor over the RC
    // message limit) ends the job with its reason instead of leaving the step to stall.
    for (size_t k = 0; k < runtimes.size(); ++k)
      runtimes[k]->set_fatal_handler([ss, k, t0, simp](const Error& e) {
        // The original process aborts here: the job is over whether or not one of its receives was waiting.
        if (ss->failed) return;
        ss->failed = true;
        ss->fatal = true;
        ss->error = e;
        ss->failed_task = k;
        ss->failed_at = simp->now() - t0;
        simp->stop();
      });
    // Fault timers keep the step going only while some task has not finished (a fault may end a hang); once every
    // task is done they wait in the calendar, so a fault due after the step's work changes nothing in it.
    sim.set_faults_keep_alive(true);
    const size_t tasks = executors.size();
    for (size_t k = 0; k < executors.size(); ++k)
      executors[k]->run_step(step, [ss, k, t0, simp, with_faults, tasks](Status st) {
        ++ss->finished;
        ss->task_done[k] = 1;
        if (ss->finished == tasks) simp->set_faults_keep_alive(false);
        if (!st.ok() && !ss->failed) {
          ss->failed = true;
          ss->error = st.error();
          ss->failed_task = k;
          ss->failed_at = simp->now() - t0;
          if (with_faults) simp->stop(); // the master aborts the step at the first error; the report says where
        }
      });
    sim.run();
    if (ss->failed) failure = ss->error;
    const size_t finished = ss->finished;
    const size_t failed_task = ss->failed_task;
    const double failed_at = ss->failed_at;
    const auto task_done = ss->task_done;
    const bool fatal = ss->fatal;
    ss->failed = true; // later callbacks (after this step) change nothing
    if (failure && !with_faults)
      return Error::at("", "step " + std::to_string(step), "a completed training step", failure->message());
    // A step that did not finish: a hang (nothing left to happen, or only waiting at the deadline) or slowness (the
    // deadline came while transfers or computations were still in progress: say which and what makes them slow).
    const auto dl = sim.at_deadline(job.stall_timeout);
    const bool slow = dl.slow;
    const std::string within =
        "did not finish within stall_timeout (" + fmt_seconds(job.stall_timeout) + " simulated s)";
    const std::string unfinished_why =
        slow ? within + " because it is too slow, not hung: " + dl.in_progress +
                   " (a larger stall_timeout lets a run this slow finish)"
        : !dl.in_progress.empty()
            ? within +
                  ", though no single transfer or computation in it was long: it kept retrying or waiting "
                  "without completing (a livelock or a hang): " +
                  dl.in_progress
        : sim.deadline_hit() ? within + " and nothing was in progress: a hang (protocol stalled)"
                             : "cannot finish: nothing is left to happen and its tasks wait forever (a hang: protocol "
                               "stalled)";
    if (finished != executors.size() && !failure && !with_faults) {
      std::string names;
      for (size_t k = 0; k < executors.size(); ++k)
        if (!task_done[k]) names += (names.empty() ? "" : ", ") + runtimes[k]->spec().task;
      return Error::msg("training step " + std::to_string(step) + ": " + std::to_string(executors.size() - finished) +
                        " task(s) never finished (" + names + "): the step " + unfinished_why);
    }
    if (failure || finished != executors.size()) {
      TrainingFailure f;
      f.step = int(step);
      const auto* info = transports::find_transport(job.transport);
      f.original = info ? info->on_failure : "";
      if (failure) {
        f.at = failed_at;
        f.task = runtimes[failed_task]->spec().task;
        // A failed op names itself; a fatal error completion (the original aborts the process) names a channel:
        // report the transfer the task was waiting for then or, when it waited for none (it was the producer: a
        // Send is passive), the earliest transfer another task was waiting for from it.
        auto fo = executors[failed_task]->failed_op();
        if (fatal || fo.kind.empty()) {
          const auto waiting = executors[failed_task]->waiting_ops();
          if (!waiting.empty()) fo = waiting.front();
        }
        if (fo.kind.empty()) {
          const std::string& me = runtimes[failed_task]->spec().task;
          for (size_t k = 0; k < executors.size(); ++k)
            for (const auto& w : executors[k]->waiting_ops())
              if (w.key.find(me + "/") != std::string::npos && (fo.kind.empty() || w.started < fo.started)) fo = w;
        }
        f.op_kind = fo.kind;
        f.op = fo.op;
        f.transfer = fo.key;
        f.error = failure->message();
      } else {
        f.stalled = true;
        f.at = sim.now() - t0;
        for (size_t k = 0; k < executors.size(); ++k)
          if (!task_done[k]) f.unfinished.push_back(runtimes[k]->spec().task);
        f.task = f.unfinished.empty() ? "" : f.unfinished.front();
      }
      const Killed* kill = nullptr;
      for (const auto& k : *killed)
        if (k.fin && !kill) kill = &k;
      if (!failure && kill) {
        // Nothing failed in the transports, but the master's RunGraph call to the killed process fails.
        f.stalled = false;
        f.at = kill->when - t0;
        f.task = task_of_process.count(kill->process) ? task_of_process[kill->process] : kill->process;
        f.error = "Unavailable: " + kill->process + " was killed: the master's RunGraph call to " + f.task +
                  " fails (connection closed by the peer)";
        f.original = "the master aborts the step: session.run() raises UnavailableError (\"Socket closed\")";
      } else if (!failure) {
        f.slow = slow;
        f.error = "the step " + unfinished_why;
        f.original = slow ? "the step runs on, as slowly (TensorFlow sets no deadline on RecvTensor or collectives)"
                          : "the step hangs (TensorFlow sets no deadline on RecvTensor or collectives by default)";
      }
      out.failure = f;
      break;
    }
    const double dt = sim.now() - t0;
    out.step_seconds.push_back(dt);
    report_progress(double(s + 1), double(job.steps));
    for (auto& rt : runtimes)
      rt->rendezvous().cleanup(step);
    if (s < job.warmup) continue;
    ++measured;
    out.step_time += dt;
    std::vector<training::OpTiming> timings;
    std::vector<transports::TransferRecord> records;
    double busy = 0;
    for (auto& ex : executors) {
      auto ti = ex->timings();
      timings.insert(timings.end(), ti.begin(), ti.end());
      for (const auto& e : ex->events())
        if (e.kind == "forward" || e.kind == "backward") busy += e.end - e.start;
    }
    for (auto& rt : runtimes)
      for (const auto& r : rt->log().records())
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
    if (last && job.collect_events) {
      for (auto& ex : executors)
        for (auto e : ex->events()) {
          e.start -= t0;
          e.end -= t0;
          out.events.push_back(e);
        }
      for (auto& rt : runtimes)
        for (auto r : rt->log().records()) {
          r.t_start -= t0;
          r.t_end -= t0;
          out.records.add(r);
        }
      sim.set_comm_tracer(nullptr);
      for (auto& c : comms) {
        c.start -= t0;
        c.end -= t0;
        out.comms.push_back(std::move(c));
      }
    }
  }
  if (measured > 0) {
    out.step_time /= measured;
    auto& o = out.breakdown;
    for (double* v : {&o.compute, &o.waiting, &o.copy, &o.registration, &o.pcie, &o.network, &o.aggregate_apply,
                      &o.retry, &o.gpu_busy})
      *v /= measured;
    out.images_per_second = double(model.batch) * out.gpus / out.step_time;
  }
  if (with_faults) {
    out.faults_injected = true;
    out.fault_stats = *sim.fault_stats();
    const int ran = out.failure ? out.failure->step : job.steps;
    for (const auto& u : sim.never_fired_faults(ran, out.failure.has_value()))
      out.fault_stats.events.push_back("never fired: " + u);
  }
  for (auto& rt : runtimes)
    rt->transport().shutdown();
  out.simgrid_activities = sim.stats().activities;
  if (!engines.empty()) {
    out.negotiation_rounds = engines[0]->stats().rounds;
    out.collectives_run = engines[0]->stats().collectives;
  }
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  return out;
}

} // namespace tp::sim
