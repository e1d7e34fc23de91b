// Training steps on emulated processes (see training_job.hpp); what they share with the simulator's training job
// (task set-up, step times) is in core/jobs/training_tasks.hpp.
#include "emulator/training_job.hpp"

#include "core/jobs/training_tasks.hpp"
#include "emulator/emu_job_backend.hpp"
#include "emulator/emulation.hpp"
#include "emulator/job_estimate.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>

namespace tp::emu {

using jobs::process_name;

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

namespace {

/// The step layout of an emulated job: each emulated process has GPUs 0..G-1 of its own.
training::StepLayout step_layout(const EmuTrainingJob& job)
{
  training::StepLayout sl;
  sl.mode = job.mode;
  const bool allreduce = job.mode == training::SyncMode::ALLREDUCE;
  sl.workers = job.workers;
  sl.gpus_per_worker = allreduce ? 1 : job.gpus_per_worker;
  sl.ps_tasks = allreduce ? 0 : job.ps_tasks;
  sl.fetch_per_worker = job.fetch_per_worker;
  for (int w = 0; w < job.workers; ++w) {
    std::vector<int> g;
    for (int k = 0; k < sl.gpus_per_worker; ++k)
      g.push_back(k);
    sl.gpu_of.push_back(g);
  }
  return sl;
}

} // namespace

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

  const training::StepLayout sl = step_layout(job);
  auto sgr = jobs::partitioned_step_graph(model, sl);
  if (!sgr.ok()) return sgr.error();
  const training::StepGraph sg = std::move(sgr.value());

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
  const jobs::RankList ranks = jobs::rank_list(sl);
  struct Task {
    EmuProcess* proc = nullptr;
    jobs::TrainingTask job;
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
      ts.options = job.options;
      complete_task_spec(ts);
      auto rt = transports::TaskRuntime::create(ts, t.proc->name, *t.proc->runtime, t.proc->device.get(),
                                                *t.proc->streams, spec);
      if (!rt.ok()) return fail(rt.error());
      if (auto st = jobs::set_up_task(t.job, std::move(rt.value()), *t.proc->streams, sg, ranks, {}); !st.ok())
        return fail(st.error());
      t.job.runtime->transport().start([fail, started](Status st) {
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

  jobs::StepTimes times;
  times.warmup = job.warmup;
  for (int s = 0; s < job.steps; ++s) {
    const int64_t step = s + 1;
    // On the heap: after a failure, the other tasks' callbacks may still come while this function returns.
    auto done = std::make_shared<std::atomic<int>>(0);
    const auto t0 = std::chrono::steady_clock::now();
    for (auto& t : tasks)
      t.proc->runtime->post([&, done, step] {
        if (t.job.engine) t.job.engine->begin_step(step, t.job.allreduces);
        t.job.executor->run_step(step, [fail, done](Status st) {
          if (!st.ok()) fail(st.error());
          ++*done;
        });
      });
    if (!finished([&] { return *done == int(tasks.size()); }))
      return Error::msg(job.transport + ": training step " + std::to_string(step) + " did not finish in " +
                        std::to_string(job.timeout) + " s (protocol stalled)");
    if (failure) return Error::at("", "step " + std::to_string(step), "a completed training step", failure->message());
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // The engines' last negotiation round (every rank idle, SHUTDOWN) ends after the executors finish: the next
    // step may begin only then, as in the simulator, where the step's events all run before the next one.
    auto engines_idle = [&] {
      bool idle = true;
      for (auto& t : tasks)
        if (t.job.engine) Emulation::on(*t.proc, [&] { idle = idle && t.job.engine->idle(); });
      return idle;
    };
    if (!finished(engines_idle))
      return Error::msg(job.transport + ": the collective engines did not finish step " + std::to_string(step) +
                        "'s negotiation");
    for (auto& t : tasks)
      Emulation::on(*t.proc, [&] { t.job.runtime->rendezvous().cleanup(step); });
    times.add(s, dt);
  }
  out.step_seconds = times.seconds;
  out.step_time = times.mean();
  out.tasks = int(tasks.size());
  for (auto& t : tasks)
    Emulation::on(*t.proc, [&] {
      t.job.runtime->transport().shutdown();
      t.job.executor.reset();
      t.job.engine.reset();
      t.job.runtime.reset();
    });
  return out;
}

} // namespace tp::emu
