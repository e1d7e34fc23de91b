// The simulator's job backend (sim/sim_job_backend.hpp): processes on the cluster's hosts, tasks placed by the host
// profile, run_until()'s outcomes on simulated time, stop() ending the job, and the training driver's cases.
#include "sim/sim_job_backend.hpp"

#include "core/transports/transport.hpp"
#include "models/catalog.hpp"
#include "tests/jobs/training_driver_cases.hpp"
#include "tests/sim/test_cluster.hpp"

#include <catch2/catch.hpp>

#include <limits>

using namespace tp;
using namespace tp::sim;

namespace {

constexpr double NO_LIMIT = std::numeric_limits<double>::infinity();

struct SimBackendFixture {
  models::ClusterProfile cluster = test::test_cluster(2);
  std::unique_ptr<Simulation> sim = Simulation::create(cluster).value();
  SimJobBackend backend{*sim, cluster};
};

} // namespace

TEST_CASE("sim job backend: run_until runs to quiet, then says done, idle or deadline")
{
  SimBackendFixture f;
  auto p = f.backend.add_process(1, "p").value();
  CHECK(p->host == 1);
  CHECK(p->device(0) != nullptr);
  CHECK(p->device(5) == nullptr);
  int fired = 0;
  f.backend.post(*p, [&] { p->runtime->after(2.0, [&] { ++fired; }); });
  // The predicate already holds, yet the simulator runs on until nothing is left: the timer fires.
  CHECK(f.backend.run_until([] { return true; }, NO_LIMIT) == jobs::RunOutcome::DONE);
  CHECK(fired == 1);
  CHECK(f.backend.now() == Approx(2.0));
  CHECK(f.backend.run_until([] { return false; }, NO_LIMIT) == jobs::RunOutcome::IDLE);
  f.backend.post(*p, [&] { p->runtime->after(10.0, [&] { ++fired; }); });
  CHECK(f.backend.run_until([&] { return fired == 2; }, 1.0) == jobs::RunOutcome::DEADLINE);
  CHECK(fired == 1);
  CHECK(f.backend.now() == Approx(3.0));
  CHECK(f.backend.add_process(2, "q").error().message().find("host index below 2") != std::string::npos);
}

TEST_CASE("sim job backend: stop from a callback ends this run and every later one")
{
  SimBackendFixture f;
  auto p = f.backend.add_process(0, "p").value();
  int fired = 0;
  f.backend.post(*p, [&] {
    p->runtime->after(1.0, [&] { f.backend.stop(); });
    p->runtime->after(5.0, [&] { ++fired; });
  });
  CHECK(f.backend.run_until([] { return true; }, NO_LIMIT) == jobs::RunOutcome::STOPPED);
  CHECK(fired == 0);
  CHECK(f.backend.now() == Approx(1.0));
  CHECK(f.backend.run_until([] { return true; }, NO_LIMIT) == jobs::RunOutcome::STOPPED);
}

TEST_CASE("sim job backend: tasks are placed by the host profile and their data location checked")
{
  SimBackendFixture f;
  auto p = f.backend.add_process(0, "p").value();
  transports::register_builtin_transports();
  transports::TaskSpec spec;
  spec.task = "/job:worker/replica:0/task:0";
  spec.transport = "grpc";
  transports::ClusterSpec cluster{{spec.task, "p"}};
  auto t = f.backend.create_task(*p, spec, cluster, Location::host(1));
  REQUIRE(t.ok());
  CHECK(t.value()->spec().cpu_numa_node == 1);
  const auto& host = f.cluster.host(0);
  const int nic_socket = host.nics[0].socket;
  CHECK(t.value()->spec().memory.nic_socket == nic_socket);
  for (int g : t.value()->spec().memory.gpudirect_gpus)
    CHECK(host.gpus[size_t(g)].socket == nic_socket);
  auto on_gpu = f.backend.create_task(*p, spec, cluster, Location::gpu(0));
  REQUIRE(on_gpu.ok());
  CHECK(on_gpu.value()->spec().cpu_numa_node == nic_socket);
  auto bad = f.backend.create_task(*p, spec, cluster, Location::gpu(99));
  REQUIRE(!bad.ok());
  CHECK(bad.error().message().find("a GPU 99") != std::string::npos);
  CHECK(f.backend.nic_buffer_location(*p, 0, false, false).value() == Location::host(nic_socket));
  CHECK(!f.backend.nic_buffer_location(*p, 7, false, false).ok());
}

// The training driver's cases (tests/jobs/training_driver_cases.hpp) on the simulator: tasks on two hosts.
namespace {
void sim_driver_case(test::DriverCase c)
{
  SimBackendFixture f;
  test::check_training_driver(c, f.backend, 2, 1000);
}
} // namespace

TP_TRAINING_DRIVER_TEST_CASES("simulator", sim_driver_case)

TEST_CASE("sim job backend: a task whose tensors live on a GPU talks through the NIC nearest it (one rail per GPU)")
{
  models::Catalog cat;
  auto host = cat.host("hgx-h100-8gpu");
  REQUIRE(host.ok());
  for (int g = 0; g < 8; ++g)
    CHECK(host->nic_for_gpu(g) == g); // DGX H100: each GPU behind its own NIC's switch
  auto a100 = cat.host("dgx-a100-8gpu");
  REQUIRE(a100.ok());
  // Two GPUs and two NICs per switch: each GPU its own NIC of its switch.
  CHECK(a100->nic_for_gpu(0) == 0);
  CHECK(a100->nic_for_gpu(1) == 1);
  CHECK(a100->nic_for_gpu(6) == 6);
  CHECK(a100->nic_for_gpu(7) == 7);
  const auto cluster = models::make_cluster(*host, 1, {"sw", 0, {}}, "node");
  auto sim = Simulation::create(cluster).value();
  SimJobBackend backend(*sim, cluster);
  auto p = backend.add_process(0, "p").value();
  REQUIRE(p->devices.size() == 8);
  transports::register_builtin_transports();
  transports::TaskSpec spec;
  spec.task = "/job:worker/replica:0/task:0";
  spec.transport = "verbs_v1";
  const transports::ClusterSpec cs{{spec.task, "p"}};
  auto on_gpu5 = backend.create_task(*p, spec, cs, Location::gpu(5));
  REQUIRE(on_gpu5.ok());
  CHECK(on_gpu5.value()->spec().memory.nic_socket == 1); // NIC 5, on socket 1
  CHECK(on_gpu5.value()->spec().cpu_numa_node == 1);
  CHECK(on_gpu5.value()->spec().memory.gpudirect_gpus == std::vector<int>{4, 5, 6, 7});
}
