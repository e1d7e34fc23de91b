// What both training jobs share (core/jobs/training_tasks.hpp): process names, the rank list of allreduce mode,
// step times with a warm-up, the partitioned step graph.
#include "core/jobs/training_tasks.hpp"

#include <catch2/catch.hpp>

using namespace tp;

TEST_CASE("a training task runs in the process named after its job and index", "[training]")
{
  CHECK(jobs::process_name(training::worker_task(3)) == "worker3");
  CHECK(jobs::process_name(training::ps_task(12)) == "ps12");
}

TEST_CASE("the rank list of allreduce mode names each rank's reduction device, and none in ps mode", "[training]")
{
  training::StepLayout l;
  l.mode = training::SyncMode::ALLREDUCE;
  l.workers = 3;
  l.ps_tasks = 0;
  l.gpu_of = {{0}, {1}, {0}};
  auto r = jobs::rank_list(l);
  REQUIRE(r.ranks->size() == 3);
  CHECK((*r.ranks)[1].task == training::worker_task(1));
  CHECK((*r.ranks)[1].device == training::worker_task(1) + "/device:GPU:1");
  CHECK(*r.processes == std::vector<std::string>{"worker0", "worker1", "worker2"});
  CHECK(r.rank_of(training::worker_task(2)) == 2);
  l.allreduce_on_host = true;
  CHECK((*jobs::rank_list(l).ranks)[0].device == training::worker_task(0) + "/device:CPU:0");
  l.mode = training::SyncMode::PARAMETER_SERVER;
  CHECK(jobs::rank_list(l).ranks->empty());
}

TEST_CASE("step times keep every step and average those after the warm-up", "[training]")
{
  jobs::StepTimes t;
  t.warmup = 1;
  CHECK_FALSE(t.add(0, 10.0));
  CHECK(t.mean() == 0);
  CHECK(t.add(1, 2.0));
  CHECK(t.add(2, 4.0));
  CHECK(t.seconds == std::vector<double>{10.0, 2.0, 4.0});
  CHECK(t.measured == 2);
  CHECK(t.mean() == 3.0);
}

TEST_CASE("the shared step graph is partitioned: every cross-task edge is a send and receive pair", "[training]")
{
  training::TrainingModel m;
  m.name = "two";
  m.batch = 4;
  m.layers = {{"l0", 0.001, 0.002, {{"l0/w", 400, true}}}, {"l1", 0.001, 0.002, {{"l1/w", 40, true}}}};
  training::StepLayout l;
  l.workers = 2;
  l.ps_tasks = 1;
  l.gpu_of = {{0}, {0}};
  auto sg = jobs::partitioned_step_graph(m, l);
  REQUIRE(sg.ok());
  CHECK(sg->tasks.size() == 3);
  CHECK(sg->remote_sends > 0);
  CHECK(sg->remote_bytes > 0);
  l.workers = 0;
  CHECK_FALSE(jobs::partitioned_step_graph(m, l).ok());
}
