// The training driver's contract (core/jobs/training_driver.hpp), checked on any job backend: the hooks are called
// in step order with the right flags, a hook's error ends the job after the steps before it, MaTEx's initial
// broadcast runs before the first step, and a step past its timeout is an error naming the unfinished tasks (or,
// with report_failure, the job's failure report). Included by tests/sim/job_backend_test.cpp (the simulator) and
// tests/emulator/emu_job_backend_test.cpp (the emulator), so both backends pass the same cases.
#pragma once

#include "core/jobs/training_driver.hpp"
#include "core/jobs/training_tasks.hpp"
#include "core/transports/transport.hpp"

#include <catch2/catch.hpp>

#include <mutex>
#include <string>
#include <vector>

namespace tp::test {

/// Records every hook call; before_step fails at step `fail_at` (0: never).
class RecordingHooks final : public jobs::TrainingHooks {
public:
  Status before_step(int64_t step, bool last) override
  {
    add("before " + std::to_string(step) + (last ? " last" : ""));
    if (step == fail_at) return Error::msg("armed to fail at step " + std::to_string(step));
    return ok_status();
  }
  void all_tasks_ended() override { add("ended"); }
  void after_step(int64_t step, bool last, bool measured) override
  {
    add("after " + std::to_string(step) + (last ? " last" : "") + (measured ? " measured" : ""));
  }
  std::vector<std::string> log()
  {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  int64_t fail_at = 0;

private:
  void add(std::string s)
  {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(std::move(s));
  }
  std::mutex mu_;
  std::vector<std::string> calls_;
};

/// Four layers of real bytes (layer l's kernel (l + 1) x `kernel_unit` bytes) and short kernels: a step of a few
/// milliseconds on either backend.
inline training::TrainingModel driver_test_model(uint64_t kernel_unit = 16 << 10)
{
  training::TrainingModel m;
  m.name = "small";
  m.batch = 8;
  for (int l = 0; l < 4; ++l) {
    training::ModelLayer layer;
    layer.name = "layer" + std::to_string(l);
    layer.forward_seconds = 1e-3;
    layer.backward_seconds = 2e-3;
    layer.variables.push_back({layer.name + "/kernel", kernel_unit * uint64_t(l + 1), true});
    layer.variables.push_back({layer.name + "/bias", 256, true});
    m.layers.push_back(layer);
  }
  return m;
}

/// Two workers (one GPU each) and a PS, or `workers` allreduce ranks; task k on host k mod `hosts`.
inline training::StepLayout driver_test_layout(training::SyncMode mode, int workers)
{
  training::StepLayout sl;
  sl.mode = mode;
  sl.workers = workers;
  sl.ps_tasks = mode == training::SyncMode::ALLREDUCE ? 0 : 1;
  for (int w = 0; w < workers; ++w)
    sl.gpu_of.push_back({0});
  return sl;
}

inline jobs::TrainingDriverJob driver_test_job(const training::StepGraph& sg, size_t hosts,
                                               const std::string& transport)
{
  jobs::TrainingDriverJob j;
  j.transport = transport;
  size_t k = 0;
  for (const auto& t : sg.tasks)
    j.task_host[t] = hosts > 0 ? k++ % hosts : 0;
  j.steps = 3;
  j.warmup = 1;
  return j;
}

/// The driver's cases, one per backend (the simulator allows one simulation per process: one case per TEST_CASE).
enum class DriverCase { HOOK_ORDER, HOOK_ERROR, INITIAL_BROADCAST, TIMEOUT_ERROR, TIMEOUT_REPORT };

/// Runs case `c` on `backend` (fresh), with tasks spread over `hosts` hosts; `wall_limit`: a generous step timeout.
inline void check_training_driver(DriverCase c, jobs::JobBackend& backend, size_t hosts, double wall_limit)
{
  transports::register_builtin_transports();
  const auto model = driver_test_model();
  const auto ps = jobs::partitioned_step_graph(model, driver_test_layout(training::SyncMode::PARAMETER_SERVER, 2));
  REQUIRE(ps.ok());
  RecordingHooks hooks;
  switch (c) {
  case DriverCase::HOOK_ORDER: {
    auto job = driver_test_job(ps.value(), hosts, "grpc");
    job.step_timeout = wall_limit;
    auto r = jobs::run_training(backend, ps.value(), job, hooks);
    REQUIRE(r.ok());
    CHECK(hooks.log() == std::vector<std::string>{"before 1", "ended", "after 1", "before 2", "ended",
                                                  "after 2 measured", "before 3 last", "ended",
                                                  "after 3 last measured"});
    REQUIRE(r->step_seconds.size() == 3);
    CHECK(r->measured == 2);
    CHECK(r->step_time == Approx((r->step_seconds[1] + r->step_seconds[2]) / 2));
    // A step holds at least one tower's forward and backward kernels (simulated, or real sleeps).
    CHECK(r->step_time >= model.compute_seconds());
    CHECK_FALSE(r->failure);
    return;
  }
  case DriverCase::HOOK_ERROR: {
    hooks.fail_at = 2;
    auto job = driver_test_job(ps.value(), hosts, "verbs_v1");
    job.step_timeout = wall_limit;
    auto r = jobs::run_training(backend, ps.value(), job, hooks);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message().find("armed to fail at step 2") != std::string::npos);
    CHECK(hooks.log() == std::vector<std::string>{"before 1", "ended", "after 1", "before 2"});
    return;
  }
  case DriverCase::INITIAL_BROADCAST: {
    const auto ar = jobs::partitioned_step_graph(model, driver_test_layout(training::SyncMode::ALLREDUCE, 3));
    REQUIRE(ar.ok());
    auto job = driver_test_job(ar.value(), hosts, "mpi");
    job.step_timeout = wall_limit;
    job.initial_broadcast = true;
    job.task_options.collectives.coordinator = false; // MaTEx: rank 0's graph order, no negotiation
    auto r = jobs::run_training(backend, ar.value(), job, hooks);
    REQUIRE(r.ok());
    CHECK(r->broadcast_seconds > 0);
    CHECK(r->collectives_run > 0);
    CHECK(r->step_seconds.size() == 3);
    return;
  }
  case DriverCase::TIMEOUT_ERROR:
  case DriverCase::TIMEOUT_REPORT: {
    const bool report = c == DriverCase::TIMEOUT_REPORT;
    auto job = driver_test_job(ps.value(), hosts, "grpc");
    job.step_timeout = 1e-4; // far below one layer's kernel
    job.start_timeout = wall_limit;
    job.report_failure = report;
    auto r = jobs::run_training(backend, ps.value(), job, hooks);
    if (!report) {
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().message().find("training step 1:") != std::string::npos);
      CHECK(r.error().message().find("3 task(s) never finished") != std::string::npos);
      CHECK(r.error().message().find("/job:worker/replica:0/task:0") != std::string::npos);
      return;
    }
    REQUIRE(r.ok());
    REQUIRE(r->failure);
    CHECK(r->failure->step == 1);
    CHECK(r->failure->stalled);
    CHECK(r->failure->unfinished.size() == 3);
    CHECK(r->failure->error.find("did not finish within the step timeout") != std::string::npos);
    CHECK(r->step_seconds.empty());
    return;
  }
  }
}

} // namespace tp::test

/// Defines the TEST_CASEs of every DriverCase for one backend: `BACKEND` names it in the case names, `RUN(c)` runs case
/// c on a fresh backend of that kind.
#define TP_TRAINING_DRIVER_TEST_CASES(BACKEND, RUN)                                                                    \
  TEST_CASE("training driver on the " BACKEND ": hooks in step order")                                                 \
  {                                                                                                                    \
    RUN(tp::test::DriverCase::HOOK_ORDER);                                                                             \
  }                                                                                                                    \
  TEST_CASE("training driver on the " BACKEND ": a hook's error ends the job")                                         \
  {                                                                                                                    \
    RUN(tp::test::DriverCase::HOOK_ERROR);                                                                             \
  }                                                                                                                    \
  TEST_CASE("training driver on the " BACKEND ": MaTEx's initial broadcast")                                           \
  {                                                                                                                    \
    RUN(tp::test::DriverCase::INITIAL_BROADCAST);                                                                      \
  }                                                                                                                    \
  TEST_CASE("training driver on the " BACKEND ": a step past its timeout is an error")                                 \
  {                                                                                                                    \
    RUN(tp::test::DriverCase::TIMEOUT_ERROR);                                                                          \
  }                                                                                                                    \
  TEST_CASE("training driver on the " BACKEND ": a step past its timeout, reported")                                   \
  {                                                                                                                    \
    RUN(tp::test::DriverCase::TIMEOUT_REPORT);                                                                         \
  }
