// Training steps on the simulator: a step finishes on every transport and moves exactly the bytes its graph
// says, the critical path adds up to the step, the physics points the right way (a shared PS, a faster NIC),
// failures surface as errors, and the Chrome trace parses as trace-event JSON.
#include "apps/lib/training_report.hpp"
#include "core/transports/mpi/mpi.hpp"
#include "core/transports/transport.hpp"
#include "number_in_child.hpp"
#include "sim/training_job.hpp"
#include "test_cluster.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <set>

using namespace tp;

namespace {

/// Three layers; variables of 4 MiB + 4 KiB, 256 KiB and 1 KiB.
training::TrainingModel toy(double seconds = 1e-3)
{
  training::TrainingModel m;
  m.name = "toy";
  m.batch = 16;
  m.layers = {{"l0", seconds, 2 * seconds, {{"l0/w", 4 << 20, true}, {"l0/b", 4096, true}}},
              {"l1", seconds, 2 * seconds, {{"l1/w", 256 << 10, true}}},
              {"l2", seconds, 2 * seconds, {{"l2/w", 1024, true}}}};
  return m;
}

sim::TrainingJob ps_job(const std::string& transport, int workers, int ps)
{
  sim::TrainingJob j;
  j.transport = transport;
  j.layout.workers = workers;
  j.layout.gpus_per_worker = 1;
  j.layout.ps_tasks = ps;
  j.steps = 3;
  j.collect_events = true;
  return j;
}

double step_time_in_child(const models::ClusterProfile& cl, const training::TrainingModel& m, const sim::TrainingJob& j)
{
  return test::number_in_child([&]() -> Result<double> {
    auto res = sim::run_training_job(cl, m, j);
    if (!res.ok()) return res.error();
    return res->step_time;
  });
}

void check_ps_step(const std::string& transport, const transports::TransportOptions& options = {})
{
  transports::register_builtin_transports();
  sim::TrainingJob j = ps_job(transport, 2, 2);
  j.options = options;
  auto r = sim::run_training_job(test::test_cluster(2), toy(), j);
  INFO(transport);
  REQUIRE(r.ok());
  CHECK(r->step_seconds.size() == 3);
  CHECK(r->step_time > toy().compute_seconds());
  CHECK(r->gpus == 2);
  CHECK(r->images_per_second == Approx(2 * 16 / r->step_time));
  // Pulls: 2 workers x 4 variables; pushes: 2 x 4 (one tower each: no worker-side sum).
  CHECK(r->remote_transfers_per_step == 16);
  uint64_t bytes = 0;
  size_t consumer = 0;
  for (const auto& rec : r->records.records())
    if (rec.side == transports::Side::CONSUMER && rec.local_task != rec.peer_task) {
      CHECK(rec.ok);
      bytes += rec.bytes;
      ++consumer;
    }
  CHECK(consumer == 16);
  CHECK(bytes == r->remote_bytes_per_step);
  CHECK(bytes == 4 * ((4 << 20) + 4096 + (256 << 10) + 1024));
  const auto& b = r->breakdown;
  CHECK(b.compute + b.copy + b.registration + b.pcie + b.network + b.aggregate_apply + b.waiting ==
        Approx(r->step_time).epsilon(1e-9));
  CHECK(b.gpu_busy == Approx(toy().compute_seconds()).epsilon(1e-6));
}

} // namespace

#define PS_STEP_CASE(NAME)                                                                                             \
  TEST_CASE(NAME ": parameter-server step moves the graph's bytes", "[training]")                                      \
  {                                                                                                                    \
    check_ps_step(NAME);                                                                                               \
  }

PS_STEP_CASE("grpc")
PS_STEP_CASE("verbs_v1")
PS_STEP_CASE("verbs_v2")
PS_STEP_CASE("gdr")
PS_STEP_CASE("mpi")
PS_STEP_CASE("ar_grpc")

TEST_CASE("mpi with TF's MPI_OPTIMAL_PATH: a parameter-server step moves the graph's bytes", "[training]")
{
  // Each response's raw data follows its metadata on tag 3030 and is matched in the order sent: a 1 KiB variable's
  // eager data used to overtake a 4 MiB one's while that one's payload was being registered, and landed in the
  // wrong tensor (the step failed: "message payload of N bytes for a destination of 1024"; MessengerOptions::ordered).
  transports::TransportOptions o;
  o.own<transports::MpiOptions>().optimal_path = true;
  check_ps_step("mpi", o);
}

TEST_CASE("mpi with the optimal path and MPI_Irecv receives: a parameter-server step moves the graph's bytes",
          "[training]")
{
  transports::TransportOptions o;
  o.own<transports::MpiOptions>().optimal_path = true;
  o.own<transports::MpiOptions>().nonblocking_recv = true;
  check_ps_step("mpi", o);
}

TEST_CASE("1-GPU step with host variables costs compute plus the exposed copies", "[training]")
{
  transports::register_builtin_transports();
  training::TrainingModel m;
  m.batch = 1;
  m.layers = {{"only", 1e-3, 2e-3, {{"w", 16 << 20, true}}}}; // nothing can overlap the copies
  sim::TrainingJob j = ps_job("grpc", 1, 0);
  auto r = sim::run_training_job(test::test_cluster(1), m, j);
  REQUIRE(r.ok());
  // H2D and D2H of 16 MiB over PCIe Gen3 x16 (at most 15.75 GB/s raw, at least 8 GB/s), then the update
  // on the CPU (1.5 x 16 MiB at the memcpy rate: between one core at 5 GB/s and four at 20 GB/s).
  const double bytes = 16 << 20;
  CHECK(r->step_time > 3e-3 + 2 * bytes / 15.75e9 + 1.5 * bytes / 80e9);
  CHECK(r->step_time < 3e-3 + 2 * bytes / 8e9 + 1.5 * bytes / 5e9 + 1e-3);
  CHECK(r->remote_transfers_per_step == 0);
}

TEST_CASE("a second worker on one PS lengthens the step", "[training]")
{
  transports::register_builtin_transports();
  auto m = toy(1e-5);
  sim::TrainingJob two = ps_job("verbs_v2", 2, 1);
  two.layout.worker_hosts = {1, 2}; // the PS alone on host 0
  two.layout.ps_hosts = {0};
  sim::TrainingJob one_apart = ps_job("verbs_v2", 1, 1);
  one_apart.layout.worker_hosts = {1};
  one_apart.layout.ps_hosts = {0};
  const double alone = step_time_in_child(test::test_cluster(3), m, one_apart);
  const double shared = step_time_in_child(test::test_cluster(3), m, two);
  // The PS port sends the variables twice: at least one more pull's wire time (plus the PS-side gradient sum).
  const double pulled = (4 << 20) + 4096 + (256 << 10) + 1024;
  CHECK(shared - alone > 0.9 * pulled / 12.5e9);
}

TEST_CASE("a faster NIC shortens the step", "[training]")
{
  transports::register_builtin_transports();
  auto m = toy(1e-5);
  auto slow_host = test::test_host();
  slow_host.nics[0].nic.line_rate = 12.5e9 / 4;
  sim::TrainingJob j = ps_job("gdr", 1, 1);
  j.layout.worker_hosts = {1}; // PS on node0, worker on node1
  const double fast = step_time_in_child(test::test_cluster(2), m, j);
  const double slow = step_time_in_child(test::test_cluster(2, slow_host), m, j);
  // At least the pull of the 4 MiB variable is on the wire at the slower rate (the push is capped by the NIC's
  // peer reads of GPU memory, 4 GB/s, in both runs).
  const double pulled = (4 << 20) + 4096 + (256 << 10) + 1024;
  CHECK(slow - fast > 0.9 * pulled * (1 / 3.125e9 - 1 / 12.5e9));
}

TEST_CASE("a transfer failing inside a step fails the job with its error", "[training]")
{
  transports::register_builtin_transports();
  sim::TrainingJob j = ps_job("verbs_v2", 1, 1);
  j.options.inject_bad_rkey = true;
  auto r = sim::run_training_job(test::test_cluster(2), toy(), j);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("step 1") != std::string::npos);
}

TEST_CASE("training layouts that do not fit the cluster are errors", "[training]")
{
  transports::register_builtin_transports();
  sim::TrainingJob j = ps_job("grpc", 1, 1);
  j.layout.gpus_per_worker = 3; // the test host has 2 GPUs
  auto r = sim::run_training_job(test::test_cluster(2), toy(), j);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().field == "gpus");
}

TEST_CASE("Chrome trace of a step parses as trace-event JSON with GPU and transfer tracks", "[training]")
{
  transports::register_builtin_transports();
  auto r = sim::run_training_job(test::test_cluster(2), toy(), ps_job("grpc", 2, 2));
  REQUIRE(r.ok());
  const auto doc = nlohmann::json::parse(frontend::chrome_trace(r.value()));
  REQUIRE(doc.contains("traceEvents"));
  std::set<std::string> threads, processes;
  size_t complete = 0, async_begin = 0, async_end = 0;
  for (const auto& e : doc["traceEvents"]) {
    const std::string ph = e.at("ph");
    REQUIRE(e.contains("pid"));
    if (ph == "M" && e["name"] == "thread_name") threads.insert(e["args"]["name"].get<std::string>());
    if (ph == "M" && e["name"] == "process_name") processes.insert(e["args"]["name"].get<std::string>());
    if (ph == "X") {
      ++complete;
      CHECK(e.at("ts").get<double>() >= 0);
      CHECK(e.at("dur").get<double>() >= 0);
      CHECK(e.at("ts").get<double>() + e.at("dur").get<double>() <= r->step_time * 1e6 * (1 + 1e-9));
    }
    async_begin += ph == "b";
    async_end += ph == "e";
  }
  CHECK(complete >= 2 * 6); // forward and backward of 3 layers on 2 GPUs
  CHECK(async_begin == async_end);
  CHECK(async_begin > 16); // 16 transfers, plus link and NIC spans
  CHECK(threads.count("worker0 GPU:0"));
  CHECK(threads.count("worker0 transfers in"));
  CHECK(threads.count("ps0 CPU:0"));
  CHECK(threads.count("NIC nic0"));
  CHECK(threads.count("link nic0.port.tx"));
  CHECK(threads.count("link nic0.pcie.down"));
  CHECK(processes == std::set<std::string>{"node0", "node1"});
}

namespace {

sim::TrainingJob allreduce_job(const std::string& transport, int ranks)
{
  sim::TrainingJob j;
  j.transport = transport;
  j.layout.mode = sim::TrainingLayout::Mode::ALLREDUCE;
  j.layout.workers = ranks;
  j.layout.ps_tasks = 0;
  j.layout.ranks_per_host = 1;
  j.steps = 2;
  return j;
}

void check_allreduce_step(const std::string& transport)
{
  transports::register_builtin_transports();
  auto r = sim::run_training_job(test::test_cluster(3), toy(), allreduce_job(transport, 3));
  INFO(transport);
  REQUIRE(r.ok());
  CHECK(r->gpus == 3);
  CHECK(r->step_time > toy().compute_seconds());
  CHECK(r->remote_transfers_per_step == 0); // the graph has no cross-task edges: the ring moves the bytes
  CHECK(r->collectives_run == 2 * 4);       // 4 variables per step, 2 steps
  CHECK(r->negotiation_rounds > 0);
  const auto& b = r->breakdown;
  CHECK(b.compute + b.copy + b.registration + b.pcie + b.network + b.aggregate_apply + b.waiting ==
        Approx(r->step_time).epsilon(1e-9));
  CHECK(b.network > 0);
}

} // namespace

#define ALLREDUCE_STEP_CASE(NAME)                                                                                      \
  TEST_CASE(NAME ": ring-allreduce training step", "[training]")                                                       \
  {                                                                                                                    \
    check_allreduce_step(NAME);                                                                                        \
  }

ALLREDUCE_STEP_CASE("grpc")
ALLREDUCE_STEP_CASE("verbs_v1")
ALLREDUCE_STEP_CASE("verbs_v2")
ALLREDUCE_STEP_CASE("gdr")
ALLREDUCE_STEP_CASE("mpi")
ALLREDUCE_STEP_CASE("ar_grpc")

TEST_CASE("MaTEx mode broadcasts the variables and allreduces without a coordinator", "[training]")
{
  transports::register_builtin_transports();
  sim::TrainingJob j = allreduce_job("mpi", 3);
  j.collectives.coordinator = false;
  j.initial_broadcast = true;
  auto r = sim::run_training_job(test::test_cluster(3), toy(), j);
  REQUIRE(r.ok());
  CHECK(r->broadcast_seconds > 0);
  CHECK(r->negotiation_rounds == 0);
  CHECK(r->collectives_run == 2 * 4);
}

TEST_CASE("tensor fusion runs fewer allreduces per step", "[training]")
{
  transports::register_builtin_transports();
  sim::TrainingJob j = allreduce_job("verbs_v2", 3);
  j.collectives.fusion_threshold = 64 << 20;
  j.collectives.tick_seconds = 5e-3; // several gradients ready per tick
  auto r = sim::run_training_job(test::test_cluster(3), toy(), j);
  REQUIRE(r.ok());
  CHECK(r->collectives_run < 2 * 4);
}

/// Step time of an analytical-collective allreduce run on 2 hosts of 8 GPUs (4 per socket) with that cross-socket
/// GPU peer limit.
double analytical_step_with_gpu_p2p(double gpu_p2p_bandwidth)
{
  models::HostProfile h = test::test_host_8_gpus_two_sockets();
  h.sockets[0].cpu.cores = h.sockets[1].cpu.cores = 8;
  h.socket_link.gpu_p2p_bandwidth = gpu_p2p_bandwidth;
  sim::TrainingJob j = allreduce_job("mpi", 16);
  j.layout.ranks_per_host = 8;
  j.options.own<transports::MpiOptions>().optimal_path = true;
  j.options.own<transports::MpiOptions>().nonblocking_recv = true;
  j.collective_mode = sim::FabricMode::ANALYTICAL;
  return step_time_in_child(test::test_cluster(2, h), toy(), j);
}

TEST_CASE("analytical collective mode: no ring message takes the cross-socket GPU peer path", "[training]")
{
  // The mpi transport stages GPU payloads through host memory and copies between GPUs of different sockets through
  // it: the cross-socket peer limit (0.2 GB/s on some profiles) is on none of its paths, so it changes nothing.
  CHECK(analytical_step_with_gpu_p2p(1e6) == Approx(analytical_step_with_gpu_p2p(1e12)).epsilon(1e-12));
}

TEST_CASE("analytical collective mode is refused for a transport other than mpi", "[training]")
{
  transports::register_builtin_transports();
  sim::TrainingJob j = allreduce_job("verbs_v2", 2);
  j.collective_mode = sim::FabricMode::ANALYTICAL;
  auto r = sim::run_training_job(test::test_cluster(2), toy(), j);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().field == "collective_mode");
  CHECK(r.error().message().find("mpi") != std::string::npos);
}

TEST_CASE("analytical collective mode is refused where the MPI thread's receive blocks", "[training]")
{
  // TF grpc+mpi's defaults (the proto in the response, a blocking receive) serialize ring steps on each rank's MPI
  // thread, which the analytical fabric does not model.
  transports::register_builtin_transports();
  sim::TrainingJob j = allreduce_job("mpi", 2);
  j.collective_mode = sim::FabricMode::ANALYTICAL;
  auto r = sim::run_training_job(test::test_cluster(2), toy(), j);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().field == "mpi_optimal_path");
}

TEST_CASE("analytical collective mode times the rings without moving their segments", "[training]")
{
  transports::register_builtin_transports();
  sim::TrainingJob j = allreduce_job("mpi", 3);
  j.options.own<transports::MpiOptions>().optimal_path = true;
  j.options.own<transports::MpiOptions>().nonblocking_recv = true;
  j.collective_mode = sim::FabricMode::ANALYTICAL;
  auto r = sim::run_training_job(test::test_cluster(3), toy(), j);
  REQUIRE(r.ok());
  CHECK(r->collectives_run == 2 * 4);
  CHECK(r->step_time > toy().compute_seconds());
  // The 4 MiB gradient alone needs 2 (N-1)/N of its bytes through a 100 Gb/s port.
  CHECK(r->step_time > 2.0 * 2 / 3 * (4 << 20) / 12.5e9);
  const auto& b = r->breakdown;
  CHECK(b.compute + b.copy + b.registration + b.pcie + b.network + b.aggregate_apply + b.waiting ==
        Approx(r->step_time).epsilon(1e-9));
}

TEST_CASE("an allreduce job with parameter-server tasks is refused, not run off the end of the rank table",
          "[training]")
{
  transports::register_builtin_transports();
  sim::TrainingJob j = allreduce_job("mpi", 3);
  j.layout.ps_tasks = 1;
  auto r = sim::run_training_job(test::test_cluster(3), toy(), j);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("allreduce mode") != std::string::npos);
}
