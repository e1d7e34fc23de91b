// Training steps on emulated processes (see training_job.hpp).
#include "emulator/training_job.hpp"

#include "core/training/executor.hpp"
#include "core/training/step_graph.hpp"
#include "core/transports/task_runtime.hpp"
#include "emulator/emulation.hpp"
#include "emulator/job_estimate.hpp"

#include <boost/graph/adjacency_list.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>

namespace tp::emu {

namespace {

std::string process_name(const std::string& task)
{
  // "/job:worker/replica:0/task:3" -> "worker3"
  const auto j = task.find("/job:") + 5;
  const auto r = task.find("/replica");
  return task.substr(j, r - j) + task.substr(task.rfind(':') + 1);
}

} // namespace

training::TrainingModel scale_model(const training::TrainingModel& m, double scale)
{
  training::TrainingModel out = m;
  out.name = m.name + (scale != 1 ? " x" + std::to_string(scale) : "");
  for (auto& l : out.layers) {
    l.forward_seconds *= scale;
    l.backward_seconds *= scale;
    for (auto& v : l.variables)
      v.bytes = std::max<uint64_t>(4, uint64_t(std::llround(double(v.bytes) * scale / 4)) * 4);
  }
  return out;
}

Result<EmuTrainingResult> run_emulated_training(const training::TrainingModel& full, const EmuTrainingJob& job)
{
  if (job.steps < 1 || job.warmup < 0 || job.warmup >= job.steps)
    return Error::at("", "steps", "steps >= 1 and 0 <= warmup < steps", std::to_string(job.steps));
  if (job.workers < 1 || job.gpus_per_worker < 1 || job.ps_tasks < 0)
    return Error::at("", "workers", "at least one worker with one GPU", std::to_string(job.workers));
  if (!(job.scale > 0)) return Error::at("", "scale", "a positive factor", std::to_string(job.scale));
  transports::register_builtin_transports();
  if (!transports::find_transport(job.transport))
    return Error::at("", "transport", "a registered transport", "\"" + job.transport + "\"");
  const training::TrainingModel model = scale_model(full, job.scale);
  if (auto st = check_budget(estimate_emulated_training(model, job), "use a smaller --scale, fewer workers or steps");
      !st.ok())
    return st.error();

  training::StepLayout sl;
  sl.mode = job.allreduce ? training::SyncMode::ALLREDUCE : training::SyncMode::PARAMETER_SERVER;
  sl.workers = job.workers;
  sl.gpus_per_worker = job.allreduce ? 1 : job.gpus_per_worker;
  sl.ps_tasks = job.allreduce ? 0 : job.ps_tasks;
  sl.fetch_per_worker = job.fetch_per_worker;
  for (int w = 0; w < job.workers; ++w) {
    std::vector<int> g;
    for (int k = 0; k < sl.gpus_per_worker; ++k)
      g.push_back(k); // each emulated process has GPUs 0..G-1 of its own
    sl.gpu_of.push_back(g);
  }
  auto sgr = training::build_step_graph(model, sl);
  if (!sgr.ok()) return sgr.error();
  training::StepGraph sg = std::move(sgr.value());
  training::partition(sg);

  EmuTrainingResult out;
  out.transport = job.transport;
  out.model_bytes = model.bytes();
  out.compute_seconds = model.compute_seconds();
  out.remote_bytes_per_step = sg.remote_bytes;

  transports::ClusterSpec spec;
  for (const auto& t : sg.tasks)
    spec[t] = process_name(t);
  Emulation::Options eo;
  eo.gpus_per_process = std::max(sl.gpus_per_worker, 1);
  Emulation emu(eo);
  std::vector<collectives::RankInfo> ranks;
  std::vector<std::string> rank_process;
  if (job.allreduce)
    for (int r = 0; r < job.workers; ++r) {
      ranks.push_back({training::worker_task(r), training::worker_task(r) + "/device:GPU:0"});
      rank_process.push_back(process_name(training::worker_task(r)));
    }
  struct Task {
    EmuProcess* proc = nullptr;
    std::unique_ptr<transports::TaskRuntime> rt;
    std::unique_ptr<collectives::CollectiveEngine> engine;
    std::unique_ptr<training::TaskExecutor> ex;
    size_t allreduces = 0;
  };
  std::vector<Task> tasks(sg.tasks.size());
  struct Failure {
    std::mutex mu;
    std::optional<Error> first;
  };
  auto failed = std::make_shared<Failure>();
  std::optional<Error> failure; // read on this thread after the tasks have reported
  auto fail = [failed](const Error& e) {
    std::lock_guard<std::mutex> lock(failed->mu);
    if (!failed->first) failed->first = e;
  };
  auto check = [&] {
    std::lock_guard<std::mutex> lock(failed->mu);
    failure = failed->first;
    return failure.has_value();
  };
  auto started = std::make_shared<std::atomic<int>>(0);
  // Whatever way this function returns, the loops stop before the tasks they call into are destroyed.
  struct StopLoops {
    std::vector<Task>& tasks;
    ~StopLoops()
    {
      for (auto& t : tasks)
        if (t.proc) t.proc->runtime->stop();
    }
  } stop_loops{tasks};
  for (size_t k = 0; k < sg.tasks.size(); ++k) {
    const std::string& task = sg.tasks[k];
    Task& t = tasks[k];
    t.proc = &emu.add_process(process_name(task));
    Emulation::on(*t.proc, [&] {
      transports::TaskSpec ts;
      ts.task = task;
      ts.transport = job.transport;
      ts.memory.kind = job.strategy;
      ts.memory.gpudirect_gpus = {0};
      ts.options = job.options;
      auto rt = transports::TaskRuntime::create(ts, t.proc->name, *t.proc->runtime, t.proc->device.get(),
                                                *t.proc->streams, spec);
      if (!rt.ok()) return fail(rt.error());
      t.rt = std::move(rt.value());
      collectives::CollectiveEngine* engine = nullptr;
      if (job.allreduce) {
        int rank = 0;
        while (ranks[size_t(rank)].task != task)
          ++rank;
        t.engine = std::make_unique<collectives::CollectiveEngine>(*t.rt, *t.proc->streams, ranks, rank_process, rank,
                                                                   collectives::EngineOptions{});
        engine = t.engine.get();
        if (auto st = engine->start(); !st.ok()) return fail(st.error());
      }
      t.ex = std::make_unique<training::TaskExecutor>(*t.rt, sg, training::ExecutorOptions{}, engine);
      for (auto [vi, vend] = boost::vertices(sg.graph); vi != vend; ++vi)
        t.allreduces +=
            sg.graph[*vi].kind == training::OpKind::ALLREDUCE && training::task_of_device(sg.graph[*vi].device) == task;
      if (auto st = t.ex->prepare(); !st.ok()) return fail(st.error());
      t.rt->transport().start([fail, started](Status st) {
        if (!st.ok()) fail(st.error());
        ++*started;
      });
    });
    if (check()) return *failure;
  }
  auto finished = [&](const std::function<bool()>& pred) {
    return Emulation::wait_until([&] { return pred() || check(); }, job.timeout);
  };
  if (!finished([&] { return *started == int(tasks.size()); }))
    return Error::msg(job.transport + ": transports did not start within the timeout");
  if (failure) return *failure;

  double measured = 0;
  for (int s = 0; s < job.steps; ++s) {
    const int64_t step = s + 1;
    // On the heap: after a failure, the other tasks' callbacks may still come while this function returns.
    auto done = std::make_shared<std::atomic<int>>(0);
    const auto t0 = std::chrono::steady_clock::now();
    for (auto& t : tasks)
      t.proc->runtime->post([&, done, step] {
        if (t.engine) t.engine->begin_step(step, t.allreduces);
        t.ex->run_step(step, [fail, done](Status st) {
          if (!st.ok()) fail(st.error());
          ++*done;
        });
      });
    if (!finished([&] { return *done == int(tasks.size()); }))
      return Error::msg(job.transport + ": training step " + std::to_string(step) + " did not finish in " +
                        std::to_string(job.timeout) + " s (protocol stalled)");
    if (failure) return Error::at("", "step " + std::to_string(step), "a completed training step", failure->message());
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.step_seconds.push_back(dt);
    // The engines' last negotiation round (every rank idle, SHUTDOWN) ends after the executors finish: the next
    // step may begin only then, as in the simulator, where the step's events all run before the next one.
    auto engines_idle = [&] {
      bool idle = true;
      for (auto& t : tasks)
        if (t.engine) Emulation::on(*t.proc, [&] { idle = idle && t.engine->idle(); });
      return idle;
    };
    if (!finished(engines_idle))
      return Error::msg(job.transport + ": the collective engines did not finish step " + std::to_string(step) +
                        "'s negotiation");
    for (auto& t : tasks)
      Emulation::on(*t.proc, [&] { t.rt->rendezvous().cleanup(step); });
    if (s >= job.warmup) {
      out.step_time += dt;
      ++measured;
    }
  }
  out.step_time /= measured;
  out.tasks = int(tasks.size());
  for (auto& t : tasks)
    Emulation::on(*t.proc, [&] {
      t.rt->transport().shutdown();
      t.ex.reset();
      t.engine.reset();
      t.rt.reset();
    });
  return out;
}

} // namespace tp::emu
