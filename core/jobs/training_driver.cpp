// The training job over the job backend interface (see training_driver.hpp).
#include "core/jobs/training_driver.hpp"

#include "core/common/progress.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>

namespace tp::jobs {

Status TrainingHooks::before_step(int64_t, bool)
{
  return ok_status();
}

void TrainingHooks::after_step(int64_t, bool, bool) {}

std::vector<training::RetryWindow> TrainingHooks::retry_windows(double, double)
{
  return {};
}

std::string TrainingHooks::unfinished_why(double, bool& slow)
{
  slow = false;
  char b[48];
  std::snprintf(b, sizeof b, "%g", step_timeout);
  return std::string("did not finish within the step timeout (") + b + " s): a hang (protocol stalled)";
}

void TrainingHooks::explain_stall(TrainingFailure& f, double t0)
{
  bool slow = false;
  f.error = "the step " + unfinished_why(t0, slow);
  f.slow = slow;
  f.original = slow ? "the step runs on, as slowly (TensorFlow sets no deadline on RecvTensor or collectives)"
                    : "the step hangs (TensorFlow sets no deadline on RecvTensor or collectives by default)";
}

namespace {

/// The job's tasks on their processes. Destroyed on their processes' loops after every step completed (nothing is
/// left in flight); after a failure or a step that did not finish, the loops are stopped and what was queued on them
/// dropped first (callbacks there may own the tasks' tensors), and the tasks are destroyed on this thread.
class TaskSet {
public:
  explicit TaskSet(JobBackend& backend) : backend_(backend) {}
  ~TaskSet()
  {
    if (!clean_) {
      backend_.stop_processes();
      return; // `tasks` goes on this thread
    }
    for (size_t k = 0; k < tasks.size(); ++k)
      backend_.on(*procs[k], [t = &tasks[k]] {
        t->executor.reset();
        t->engine.reset();
        t->runtime.reset();
      });
  }
  TaskSet(const TaskSet&) = delete;
  TaskSet& operator=(const TaskSet&) = delete;

  /// Shuts every transport down on its loop; `completed`: every step finished, so the tasks are destroyed on their
  /// loops (else as after a failure).
  void finish(bool completed)
  {
    for (size_t k = 0; k < tasks.size(); ++k)
      backend_.on(*procs[k], [t = &tasks[k]] { t->runtime->transport().shutdown(); });
    clean_ = completed;
  }
  /// Runs `fn(k)` for every task on its process's loop, in task order, waiting for each.
  template <class Fn> void on_each(Fn fn)
  {
    for (size_t k = 0; k < tasks.size(); ++k)
      backend_.on(*procs[k], [&fn, k] { fn(k); });
  }
  /// Posts `fn(k)` to every task's loop, in task order, without waiting.
  template <class Fn> void post_each(Fn fn)
  {
    for (size_t k = 0; k < tasks.size(); ++k)
      backend_.post(*procs[k], [fn, k] { fn(k); });
  }

  std::vector<JobProcess*> procs;
  std::vector<TrainingTask> tasks;

private:
  JobBackend& backend_;
  bool clean_ = false;
};

Status create_tasks(JobBackend& backend, const training::StepGraph& graph, const TrainingDriverJob& job,
                    const RankList& ranks, TaskSet& set)
{
  transports::ClusterSpec spec;
  for (const auto& [task, h] : job.task_host)
    spec[task] = process_name(task);
  set.tasks.reserve(job.task_host.size());
  for (const auto& [task, h] : job.task_host) {
    auto proc = backend.add_process(h, process_name(task));
    if (!proc.ok()) return proc.error();
    JobProcess& p = *proc.value();
    transports::TaskSpec ts;
    ts.task = task;
    ts.transport = job.transport;
    ts.memory.kind = job.strategy;
    ts.options = job.options;
    ts.collective_library_only = graph.layout.mode == training::SyncMode::ALLREDUCE;
    const auto data = job.task_data.find(task);
    auto rt = backend.create_task(p, ts, spec,
                                  data == job.task_data.end() ? std::nullopt : std::optional<Location>(data->second));
    if (!rt.ok()) return rt.error();
    set.procs.push_back(&p);
    set.tasks.emplace_back();
    Status st = ok_status();
    backend.on(p, [&] {
      st = set_up_task(set.tasks.back(), std::move(rt.value()), *p.streams, graph, ranks, job.task_options);
    });
    if (!st.ok()) return st.error();
  }
  return ok_status();
}

/// MaTEx: every variable from rank 0 to all ranks (binomial tree), one after the other, before training.
Status initial_broadcast(JobBackend& backend, const TrainingDriverJob& job, const RankList& ranks, TaskSet& set,
                         TrainingDriverResult& out)
{
  const double b0 = backend.now();
  auto state = std::make_shared<BroadcastState>();
  std::vector<std::unique_ptr<collectives::Channel>> channels(set.tasks.size());
  set.on_each([&](size_t k) { channels[k] = broadcast_channel(set.tasks[k], ranks); });
  set.on_each([&](size_t k) { start_variable_broadcast(set.tasks[k], *channels[k], state); });
  const size_t n = set.tasks.size();
  const RunOutcome o = backend.run_until([&] { return state->ranks_done() == n; }, job.step_timeout);
  if (auto f = state->failure.get())
    return Error::at("", "initial broadcast", "the variables on every rank", f->message());
  if (o != RunOutcome::DONE)
    return Error::at("", "initial broadcast", "the variables on every rank",
                     std::string("a broadcast that did not finish (") + to_string(o) + ")");
  set.on_each([&](size_t k) { set.tasks[k].runtime->rendezvous().cleanup(0); });
  set.on_each([&](size_t k) { channels[k].reset(); });
  out.broadcast_seconds = backend.now() - b0;
  return ok_status();
}

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

/// Runs step `step` of every task until all finished, the first failure (reported, or fatal), or the step timeout.
Result<StepRun> run_step(JobBackend& backend, TaskSet& set, int64_t step, bool last, const TrainingDriverJob& job,
                         TrainingHooks& hooks)
{
  set.on_each([&](size_t k) {
    set.tasks[k].runtime->log().clear();
    set.tasks[k].executor->clear_events();
  });
  const double t0 = backend.now();
  if (auto st = hooks.before_step(step, last); !st.ok()) return st.error();
  // Shared with the executors' callbacks, which may still run after this step (a transport shut down after a
  // failed step fails what was pending) and, on the emulator, on the processes' threads.
  struct StepState {
    std::mutex mu;
    StepRun run;
    bool failed = false;
    /// Keeps the step's first failure (mu held); false when one is already kept.
    bool record(size_t k, const Error& e, double at, bool fatal)
    {
      if (failed) return false;
      failed = true;
      run.fatal = fatal;
      run.failure = e;
      run.failed_task = k;
      run.failed_at = at;
      return true;
    }
  };
  auto ss = std::make_shared<StepState>();
  ss->run.t0 = t0;
  ss->run.task_done.assign(set.tasks.size(), 0);
  set.post_each([&set, step](size_t k) {
    if (set.tasks[k].engine) set.tasks[k].engine->begin_step(step, set.tasks[k].allreduces);
  });
  JobBackend* b = &backend;
  // Also without a fault plan: a failure the original treats as fatal (e.g. LOC_LEN_ERR on a tensor over the RC
  // message limit) ends the job with its reason instead of leaving the step to stall.
  set.on_each([&](size_t k) {
    set.tasks[k].runtime->set_fatal_handler([ss, k, t0, b](const Error& e) {
      {
        // The original process aborts here: the job is over whether or not one of its receives was waiting.
        std::lock_guard<std::mutex> lock(ss->mu);
        if (!ss->record(k, e, b->now() - t0, true)) return;
      }
      b->stop();
    });
  });
  const size_t n = set.tasks.size();
  const bool report = job.report_failure;
  TrainingHooks* h = &hooks;
  set.post_each([&set, ss, step, t0, b, h, report, n](size_t k) {
    set.tasks[k].executor->run_step(step, [ss, k, t0, b, h, report, n](Status st) {
      bool all = false, stop = false;
      {
        std::lock_guard<std::mutex> lock(ss->mu);
        ++ss->run.finished;
        ss->run.task_done[k] = 1;
        all = ss->run.finished == n;
        // The master aborts the step at the first error when it reports it; the report says where.
        if (!st.ok() && ss->record(k, st.error(), b->now() - t0, false)) stop = report;
      }
      if (all) h->all_tasks_ended();
      if (stop) b->stop();
    });
  });
  backend.run_until(
      [&] {
        std::lock_guard<std::mutex> lock(ss->mu);
        return ss->run.finished == n || ss->run.failure.has_value();
      },
      job.step_timeout);
  std::lock_guard<std::mutex> lock(ss->mu);
  StepRun out = ss->run;
  ss->failed = true; // later callbacks (after this step) change nothing
  return out;
}

/// The report of a step that failed or did not finish.
TrainingFailure describe_failure(JobBackend& backend, const TrainingDriverJob& job, TaskSet& set, const StepRun& run,
                                 int64_t step, TrainingHooks& hooks)
{
  TrainingFailure f;
  f.step = int(step);
  const auto* info = transports::find_transport(job.transport);
  f.original = info ? info->on_failure : "";
  if (run.failure) {
    f.at = run.failed_at;
    f.task = set.tasks[run.failed_task].runtime->spec().task;
    std::vector<OpSnapshot> ops(set.tasks.size());
    set.on_each([&](size_t k) { ops[k] = op_snapshot(set.tasks[k]); });
    const auto fo = blamed_op(ops, run.failed_task, run.fatal);
    f.op_kind = fo.kind;
    f.op = fo.op;
    f.transfer = fo.key;
    f.error = run.failure->message();
    return f;
  }
  f.stalled = true;
  f.at = backend.now() - run.t0;
  for (size_t k = 0; k < set.tasks.size(); ++k)
    if (!run.task_done[k]) f.unfinished.push_back(set.tasks[k].runtime->spec().task);
  f.task = f.unfinished.empty() ? "" : f.unfinished.front();
  hooks.explain_stall(f, run.t0);
  return f;
}

/// Adds a measured step's critical path and GPU busy time to the breakdown (averaged at the end).
void add_breakdown(TrainingDriverResult& out, const training::StepGraph& graph, TaskSet& set, double t0, double t1,
                   TrainingHooks& hooks)
{
  std::vector<training::OpTiming> timings;
  std::vector<transports::TransferRecord> records;
  double busy = 0;
  // A rank template's ranks each keep to their own ops, transfers and devices: the path runs in the rank that finished
  // last (the first of them on a tie), and only its timings are read.
  std::optional<size_t> last_rank;
  if (graph.rank_template) {
    std::vector<double> last(set.tasks.size(), -1);
    set.on_each([&](size_t k) { last[k] = set.tasks[k].executor->last_end(); });
    last_rank = size_t(std::max_element(last.begin(), last.end()) - last.begin());
  }
  training::RankNames names;
  set.on_each([&](size_t k) { // each task's executor and log read on its own loop
    const auto& t = set.tasks[k];
    t.executor->add_compute_seconds(busy);
    if (last_rank && k != *last_rank) return;
    if (last_rank) names = training::RankNames(graph.layout, training::rank_of_task(t.runtime->spec().task));
    auto ti = t.executor->timings();
    timings.insert(timings.end(), ti.begin(), ti.end());
    for (const auto& r : t.runtime->log().records())
      records.push_back(r);
  });
  const auto cp = training::critical_path(graph, timings, records, t0, t1, hooks.retry_windows(t0, t1), &names);
  auto& o = out.breakdown;
  o.compute += cp.compute, o.copy += cp.copy, o.registration += cp.registration, o.pcie += cp.pcie;
  o.network += cp.network, o.aggregate_apply += cp.aggregate_apply, o.waiting += cp.waiting;
  o.retry += cp.retry, o.cpu += cp.cpu;
  o.gpu_busy += busy / std::max(graph.layout.workers * graph.layout.gpus_per_worker, 1);
}

/// Adds what each process's CPU ran between two of the backend's cumulative readings (`before` may lack a process
/// that appeared since) to `sum`, matched by process name.
void add_cpu_use(std::vector<ProcessCpuUse>& sum, const std::vector<ProcessCpuUse>& before,
                 const std::vector<ProcessCpuUse>& after)
{
  std::map<std::string, const ProcessCpuUse*> was;
  for (const auto& b : before)
    was[b.process] = &b;
  std::map<std::string, size_t> index;
  for (size_t k = 0; k < sum.size(); ++k)
    index[sum[k].process] = k;
  for (const auto& a : after) {
    auto [pos, added] = index.emplace(a.process, sum.size());
    if (added) {
      ProcessCpuUse z = a;
      z.rpc_cpu_seconds = z.rpc_waited_seconds = z.rpc_messages = z.work_cpu_seconds = 0;
      sum.push_back(z);
    }
    ProcessCpuUse* it = &sum[pos->second];
    auto w = was.find(a.process);
    const ProcessCpuUse* b = w == was.end() ? nullptr : w->second;
    it->rpc_threads = a.rpc_threads;
    it->busy_pollers = a.busy_pollers;
    it->rpc_cpu_seconds += a.rpc_cpu_seconds - (b ? b->rpc_cpu_seconds : 0);
    it->rpc_waited_seconds += a.rpc_waited_seconds - (b ? b->rpc_waited_seconds : 0);
    it->rpc_messages += a.rpc_messages - (b ? b->rpc_messages : 0);
    it->work_cpu_seconds += a.work_cpu_seconds - (b ? b->work_cpu_seconds : 0);
  }
}

/// The last step's op events and transfer records, relative to its start (for a trace).
void keep_events(TrainingDriverResult& out, TaskSet& set, double t0)
{
  set.on_each([&](size_t k) { // each task's executor and log read on its own loop
    const auto& t = set.tasks[k];
    for (auto e : t.executor->events()) {
      e.start -= t0;
      e.end -= t0;
      out.events.push_back(e);
    }
    for (auto r : t.runtime->log().records()) {
      r.t_start -= t0;
      r.t_end -= t0;
      out.records.add(r);
    }
  });
  out.last_step_start = t0;
  out.events_kept = true;
}

/// After a step every task finished: the collective engines' last negotiation round (every rank idle, SHUTDOWN) may
/// still be under way on the emulator; the next step begins only after it, as on the simulator, where a step's
/// events all run before the next one.
Status wait_engines_idle(JobBackend& backend, TaskSet& set, int64_t step, const TrainingDriverJob& job)
{
  auto idle = [&] {
    bool all = true;
    set.on_each([&](size_t k) { all = all && (!set.tasks[k].engine || set.tasks[k].engine->idle()); });
    return all;
  };
  if (idle()) return ok_status();
  if (backend.run_until(idle, job.step_timeout) == RunOutcome::DONE) return ok_status();
  return Error::msg(job.transport + ": the collective engines did not finish step " + std::to_string(step) +
                    "'s negotiation");
}

/// The error of a step that did not complete, for a job without report_failure.
Error step_error(const TrainingDriverJob& job, TaskSet& set, const StepRun& run, int64_t step, TrainingHooks& hooks)
{
  if (run.failure)
    return Error::at("", "step " + std::to_string(step), "a completed training step", run.failure->message());
  std::string names;
  for (size_t k = 0; k < set.tasks.size(); ++k)
    if (!run.task_done[k]) names += (names.empty() ? "" : ", ") + set.tasks[k].runtime->spec().task;
  bool slow = false;
  return Error::msg("training step " + std::to_string(step) + ": " + std::to_string(set.tasks.size() - run.finished) +
                    " task(s) never finished (" + names + "): the step " + hooks.unfinished_why(run.t0, slow));
}

} // namespace

Result<TrainingDriverResult> run_training(JobBackend& backend, const training::StepGraph& graph,
                                          const TrainingDriverJob& job, TrainingHooks& hooks)
{
  if (job.steps < 1 || job.warmup < 0 || job.warmup >= job.steps)
    return Error::at("", "steps", "steps >= 1 and 0 <= warmup < steps",
                     std::to_string(job.steps) + " steps, " + std::to_string(job.warmup) + " warm-up");
  hooks.step_timeout = job.step_timeout;
  const RankList ranks = rank_list(graph.layout);
  TaskSet set(backend);
  if (auto st = create_tasks(backend, graph, job, ranks, set); !st.ok()) return st.error();
  std::vector<ProcessTask> started;
  for (size_t k = 0; k < set.tasks.size(); ++k)
    started.push_back({set.procs[k], set.tasks[k].runtime.get()});
  if (auto st = start_transports(backend, started, job.start_timeout); !st.ok()) return st.error();
  TrainingDriverResult out;
  if (job.initial_broadcast && !ranks.ranks->empty() && graph.layout.workers > 1)
    if (auto st = initial_broadcast(backend, job, ranks, set, out); !st.ok()) return st.error();

  StepTimes times;
  times.warmup = job.warmup;
  for (int s = 0; s < job.steps; ++s) {
    const int64_t step = s + 1;
    const bool last = s + 1 == job.steps;
    const std::vector<ProcessCpuUse> cpu_before = hooks.cpu_use();
    auto ran = run_step(backend, set, step, last, job, hooks);
    if (!ran.ok()) return ran.error();
    const StepRun& run = ran.value();
    const bool complete = !run.failure && run.finished == set.tasks.size();
    if (!complete && !job.report_failure) return step_error(job, set, run, step, hooks);
    if (!complete) {
      out.failure = describe_failure(backend, job, set, run, step, hooks);
      break;
    }
    const double t0 = run.t0, t1 = backend.now();
    if (auto st = wait_engines_idle(backend, set, step, job); !st.ok()) return st.error();
    const bool measured = times.add(s, t1 - t0);
    report_progress(double(s + 1), double(job.steps));
    set.on_each([&](size_t k) { set.tasks[k].runtime->rendezvous().cleanup(step); });
    if (measured && job.breakdown) add_breakdown(out, graph, set, t0, t1, hooks);
    if (measured) add_cpu_use(out.cpu_use, cpu_before, hooks.cpu_use());
    if (measured && last && job.collect_events) keep_events(out, set, t0);
    hooks.after_step(step, last, measured);
  }
  out.step_seconds = times.seconds;
  out.measured = times.measured;
  if (times.measured > 0) {
    out.step_time = times.mean();
    auto& o = out.breakdown;
    for (double* v : {&o.compute, &o.waiting, &o.copy, &o.registration, &o.pcie, &o.network, &o.aggregate_apply,
                      &o.retry, &o.cpu, &o.gpu_busy})
      *v /= times.measured;
    for (auto& c : out.cpu_use)
      for (double* v : {&c.rpc_cpu_seconds, &c.rpc_waited_seconds, &c.rpc_messages, &c.work_cpu_seconds})
        *v /= times.measured;
  }
  if (!set.tasks.empty() && set.tasks[0].engine)
    backend.on(*set.procs[0], [&] {
      out.negotiation_rounds = set.tasks[0].engine->stats().rounds;
      out.collectives_run = set.tasks[0].engine->stats().collectives;
    });
  set.finish(!out.failure);
  return out;
}

} // namespace tp::jobs
