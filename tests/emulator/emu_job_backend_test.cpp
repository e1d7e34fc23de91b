// The emulator's job backend (emulator/emu_job_backend.hpp): work posted to a process runs on its own loop,
// run_until() returns as soon as its predicate holds or at the wall-clock limit, stop() ends the job, and JobTasks
// start real transports between two emulated processes; perftest through the microbenchmark driver; the training
// driver's cases.
#include "emulator/emu_job_backend.hpp"
#include "emulator/microbench_jobs.hpp"

#include "tests/jobs/training_driver_cases.hpp"
#include "tests/test_time.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

using namespace tp;
using namespace tp::emu;

TEST_CASE("emu job backend: posted work runs on the process's loop, run_until returns when it is done")
{
  EmuJobBackend backend;
  auto p = backend.add_process(0, "p").value();
  REQUIRE(p->device(0) != nullptr);
  std::atomic<bool> ran{false};
  std::atomic<bool> other_thread{false};
  const auto me = std::this_thread::get_id();
  backend.post(*p, [&] {
    other_thread = std::this_thread::get_id() != me;
    ran = true;
  });
  CHECK(backend.run_until([&] { return ran.load(); }, test::wall_seconds(10)) == jobs::RunOutcome::DONE);
  CHECK(other_thread);
  const double t0 = backend.now();
  CHECK(backend.run_until([] { return false; }, 0.05) == jobs::RunOutcome::DEADLINE);
  CHECK(backend.now() - t0 >= 0.05);
  int value = 0;
  backend.on(*p, [&] { value = 7; }); // waits for it
  CHECK(value == 7);
}

TEST_CASE("emu job backend: stop from a process's loop ends this run and every later one")
{
  EmuJobBackend backend;
  auto p = backend.add_process(0, "p").value();
  backend.post(*p, [&] { p->runtime->after(0.01, [&] { backend.stop(); }); });
  CHECK(backend.run_until([] { return false; }, test::wall_seconds(10)) == jobs::RunOutcome::STOPPED);
  CHECK(backend.run_until([] { return true; }, test::wall_seconds(10)) == jobs::RunOutcome::STOPPED);
}

TEST_CASE("emu job backend: JobTasks start a transport between two processes and collect its records")
{
  EmuJobBackend backend;
  auto a = backend.add_process(0, "a").value();
  auto b = backend.add_process(0, "b").value();
  transports::register_builtin_transports();
  transports::ClusterSpec cluster{{"/job:ps/replica:0/task:0", "a"}, {"/job:worker/replica:0/task:0", "b"}};
  jobs::JobTasks tasks(backend);
  for (auto* p : {a, b}) {
    transports::TaskSpec spec;
    spec.task = p == a ? "/job:ps/replica:0/task:0" : "/job:worker/replica:0/task:0";
    spec.transport = "verbs_v2";
    REQUIRE(tasks.add(*p, spec, cluster).ok());
  }
  CHECK(tasks.task(0).spec().memory.gpudirect_gpus == std::vector<int>{0});
  REQUIRE(tasks.start(test::wall_seconds(10)).ok());
  CHECK(!tasks.failure()->has());
  transports::TransferLog log;
  tasks.collect_records(log, true);
  CHECK(log.records().empty());
  tasks.shutdown();
  CHECK(backend.nic_buffer_location(*a, 0, true, true).value() == Location::gpu(1));
  CHECK(!backend.nic_buffer_location(*a, 1, false, false).ok());
}

TEST_CASE("emu job backend: perftest runs on the emulator through the microbenchmark driver")
{
  EmuPerftestJob job;
  job.config.sizes = {4096, 65536};
  job.config.iterations = 200;
  job.timeout = test::wall_seconds(30);
  auto bw = run_emulated_perftest(job);
  REQUIRE(bw.ok());
  REQUIRE(bw->result.bw.size() == 2);
  for (const auto& row : bw->result.bw) {
    CHECK(row.iterations == 200);
    CHECK(row.bw_average > 0);
  }
  job.config.metric = microbench::Metric::LAT;
  job.config.sizes = {8};
  job.placement.cross_socket = true;
  auto lat = run_emulated_perftest(job);
  REQUIRE(lat.ok());
  REQUIRE(lat->result.lat.size() == 1);
  CHECK(lat->result.lat[0].t_min > 0);
  CHECK(lat->result.lat[0].t_min <= lat->result.lat[0].t_max);
  job.placement.nic = 1;
  auto no_nic = run_emulated_perftest(job);
  REQUIRE(!no_nic.ok());
  CHECK(no_nic.error().message().find("perftest --nic") != std::string::npos);
}

// The training driver's cases (tests/jobs/training_driver_cases.hpp) on the emulator: every process on this machine.
namespace {
void emu_driver_case(test::DriverCase c)
{
  EmuJobBackend backend;
  test::check_training_driver(c, backend, 1, test::wall_seconds(60));
}
} // namespace

TP_TRAINING_DRIVER_TEST_CASES("emulator", emu_driver_case)
