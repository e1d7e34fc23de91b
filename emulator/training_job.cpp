// Training steps on emulated processes (see training_job.hpp): the training driver (core/jobs/training_driver.hpp),
// which the simulator's training job runs too, over the emulator's job backend.
#include "emulator/training_job.hpp"

#include "core/jobs/training_driver.hpp"
#include "core/jobs/training_tasks.hpp"
#include "emulator/emu_job_backend.hpp"
#include "emulator/job_estimate.hpp"

#include <algorithm>
#include <cmath>

namespace tp::emu {

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
  if (!(job.timeout > 0)) return Error::at("", "timeout", "a positive number of seconds", std::to_string(job.timeout));
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
  out.tasks = int(sg.tasks.size());

  jobs::TrainingDriverJob dj;
  dj.transport = job.transport;
  dj.strategy = job.strategy;
  dj.options = job.options;
  for (const auto& t : sg.tasks)
    dj.task_host[t] = 0; // every process on this machine
  dj.steps = job.steps;
  dj.warmup = job.warmup;
  dj.start_timeout = job.timeout;
  dj.step_timeout = job.timeout;
  Emulation::Options eo;
  eo.gpus_per_process = std::max(sl.gpus_per_worker, 1);
  EmuJobBackend backend(eo);
  jobs::TrainingHooks hooks; // wall-clock steps: nothing to arm, trace or explain beyond a timeout
  auto r = jobs::run_training(backend, sg, dj, hooks);
  if (!r.ok()) return r.error();
  out.step_seconds = std::move(r.value().step_seconds);
  out.step_time = r.value().step_time;
  return out;
}

} // namespace tp::emu
