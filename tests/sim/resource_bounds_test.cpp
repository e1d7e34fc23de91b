// Jobs beyond the budget are refused before anything is built, with the estimate and the parameter that drives it:
// a million allreduce ranks, a SimGrid platform of 100,000 hosts, 100,000 tensors x 100 steps, a thousand training
// steps of a large job, a materialized transfer larger than the machine. Every simulator job kind checks (the class:
// with a tiny time budget each one refuses), a job under the budget still runs, and estimates grow with what drives
// them. "Before anything is built": a simulation can still be created in the same process afterwards (SimGrid
// allows one per process).
#include "core/transports/ar_grpc/ar_grpc.hpp"
#include "core/transports/transport.hpp"
#include "models/catalog.hpp"
#include "sim/fabric_modes.hpp"
#include "sim/job_estimate.hpp"
#include "sim/microbench_jobs.hpp"
#include "sim/simulation.hpp"
#include "sim/training_job.hpp"
#include "sim/transfer_job.hpp"
#include "test_cluster.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace tp;

namespace {

struct EnvGuard {
  EnvGuard(const char* name, const char* v) : name_(name) { setenv(name, v, 1); }
  ~EnvGuard() { unsetenv(name_); }
  const char* name_;
};

bool has(const std::string& s, const std::string& part)
{
  return s.find(part) != std::string::npos;
}

/// Nothing was built: this process can still start its one simulation.
void check_no_simulation_started()
{
  auto s = sim::Simulation::create(test::test_cluster(2));
  CHECK(s.ok());
}

training::TrainingModel toy_model(int layers)
{
  training::TrainingModel m;
  m.name = "toy";
  m.batch = 16;
  for (int l = 0; l < layers; ++l)
    m.layers.push_back({"l" + std::to_string(l), 1e-3, 2e-3, {{"l" + std::to_string(l) + "/w", 4096, true}}});
  return m;
}

/// A cluster whose network is a SimGrid platform file of `hosts` hosts (models/simgrid_platform.cpp reads it).
models::ClusterProfile platform_cluster(int hosts)
{
  const auto dir = std::filesystem::temp_directory_path() / ("tp_bounds_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "net.xml") << "<?xml version='1.0'?>\n<platform version=\"4.1\">\n"
                                 << "<cluster id=\"c\" prefix=\"node\" suffix=\"\" radical=\"0-" << hosts - 1
                                 << "\" speed=\"1Gf\" bw=\"100Gbps\" lat=\"0.6us\" bb_bw=\"1600Gbps\" "
                                    "bb_lat=\"0.09us\"/>\n</platform>\n";
  std::ofstream(dir / "big.json") << R"({"kind": "cluster", "name": "big", "description": "many hosts",
    "hosts": [{"host": "hkust-k40m-cx3", "prefix": "node"}], "switch": "mellanox-sb7800", "network": "net.xml"})";
  auto c = models::Catalog().cluster((dir / "big.json").string());
  std::filesystem::remove_all(dir);
  REQUIRE(c.ok());
  REQUIRE(c->host_count() == size_t(hosts));
  return c.value();
}

} // namespace

TEST_CASE("a million allreduce ranks are refused up front in every mode, naming the ranks", "[quick]")
{
  transports::register_builtin_transports();
  const auto cl = test::test_cluster(1048576);
  for (auto mode : {sim::FabricMode::ANALYTICAL, sim::FabricMode::FLOW, sim::FabricMode::PROTOCOL}) {
    sim::AllreduceJob j;
    j.mode = mode;
    j.ranks = 1048576;
    auto r = sim::run_allreduce(cl, j);
    REQUIRE_FALSE(r.ok());
    const std::string m = r.error().message();
    INFO(m);
    CHECK(has(m, "allreduce (" + std::string(sim::to_string(mode)) + " mode, 1048576 ranks)"));
    CHECK(has(m, "estimated"));
    CHECK(has(m, "driven by ranks = 1048576"));
    CHECK(has(m, "TENSORPATH_TIME_LIMIT="));
  }
  check_no_simulation_started();
}

TEST_CASE("a million training ranks are refused up front with the estimate's terms", "[quick]")
{
  transports::register_builtin_transports();
  sim::TrainingJob j;
  j.transport = "grpc";
  j.layout.mode = sim::TrainingLayout::Mode::ALLREDUCE;
  j.layout.workers = 1000000;
  j.layout.ps_tasks = 0;
  j.collective_mode = sim::FabricMode::ANALYTICAL;
  auto r = sim::run_training_job(test::test_cluster(2), toy_model(50), j);
  REQUIRE_FALSE(r.ok());
  const std::string msg = r.error().message();
  INFO(msg);
  CHECK(has(msg, "1000000 ranks"));
  CHECK(has(msg, "estimated"));
  // Ranks sharing rank 0's ops: the processes drive the memory (step-graph ops at 0.3 KB per rank and op).
  CHECK(has(msg, "simulated processes"));
  CHECK(has(msg, "ranks = 1000000"));
  check_no_simulation_started();
}

TEST_CASE("a SimGrid platform of 100,000 hosts is refused up front, naming the hosts", "[quick]")
{
  transports::register_builtin_transports();
  const auto cl = platform_cluster(100000);
  sim::TransferJob j;
  j.transport = "verbs_v2";
  auto r = sim::run_transfer_job(cl, j);
  REQUIRE_FALSE(r.ok());
  const std::string m = r.error().message();
  INFO(m);
  CHECK(has(m, "time is driven by hosts in the cluster = 100000"));
  CHECK(has(m, "SimGrid platform of 100,000 machines"));
  check_no_simulation_started();
}

TEST_CASE("100,000 tensors x 100 steps are refused up front, naming both", "[quick]")
{
  transports::register_builtin_transports();
  sim::TransferJob j;
  j.transport = "grpc";
  j.tensors_per_step = 100000;
  j.steps = 100;
  auto r = sim::run_transfer_job(test::test_cluster(2), j);
  REQUIRE_FALSE(r.ok());
  const std::string m = r.error().message();
  INFO(m);
  CHECK(has(m, "10,000,000 transfers"));
  CHECK(has(m, "driven by tensors per step = 100000, steps = 100"));
  check_no_simulation_started();
}

TEST_CASE("a thousand steps of a large parameter-server job are refused up front, naming the steps", "[quick]")
{
  transports::register_builtin_transports();
  sim::TrainingJob j;
  j.transport = "verbs_v2";
  j.layout.workers = 16;
  j.layout.gpus_per_worker = 4;
  j.layout.ps_tasks = 16;
  j.steps = 1000;
  test::test_host();
  auto host = test::test_host();
  host.gpus.resize(4, host.gpus.at(0));
  auto r = sim::run_training_job(test::test_cluster(16, host), toy_model(300), j);
  REQUIRE_FALSE(r.ok());
  const std::string m = r.error().message();
  INFO(m);
  CHECK(has(m, "time is driven by workers = 16 x 4 GPUs, steps = 1000"));
  CHECK(has(m, "remote transfers per step"));
  check_no_simulation_started();
}

TEST_CASE("a materialized transfer larger than the machine is refused up front", "[quick]")
{
  transports::register_builtin_transports();
  sim::TransferJob j;
  j.transport = "verbs_v2";
  j.materialize = true;
  j.sizes = {1ull << 44}; // 16 TiB
  auto r = sim::run_transfer_job(test::test_cluster(2), j);
  REQUIRE_FALSE(r.ok());
  const std::string m = r.error().message();
  INFO(m);
  CHECK(has(m, "transfer (verbs_v2)"));
  CHECK(has(m, "TB"));
  CHECK(has(m, "memory is driven by size = 17.6 TB"));
  CHECK(has(m, "TENSORPATH_MEMORY_LIMIT="));
  check_no_simulation_started();
}

TEST_CASE("every simulator job kind checks its budget before it builds anything", "[quick]")
{
  transports::register_builtin_transports();
  EnvGuard tiny("TENSORPATH_TIME_LIMIT", "1e-9");
  const auto cl = test::test_cluster(2);
  std::vector<std::pair<std::string, Error>> refused;
  auto expect_refusal = [&](const std::string& kind, auto&& result) {
    INFO(kind);
    REQUIRE_FALSE(result.ok());
    refused.emplace_back(kind, result.error());
  };
  expect_refusal("perftest", sim::run_perftest_job(cl, sim::PerftestJob{}));
  sim::CopyJob copy;
  expect_refusal("pcie-copy", sim::run_copy_jobs(cl, {copy}));
  expect_refusal("transfer", sim::run_transfer_job(cl, sim::TransferJob{}));
  for (auto mode : {sim::FabricMode::ANALYTICAL, sim::FabricMode::FLOW, sim::FabricMode::PROTOCOL}) {
    sim::AllreduceJob a;
    a.mode = mode;
    expect_refusal(std::string("allreduce ") + sim::to_string(mode), sim::run_allreduce(cl, a));
  }
  sim::TrainingJob ps;
  ps.layout.ps_tasks = 1;
  expect_refusal("training ps", sim::run_training_job(cl, toy_model(4), ps));
  for (auto mode : {sim::FabricMode::PROTOCOL, sim::FabricMode::ANALYTICAL}) {
    sim::TrainingJob ar;
    ar.layout.mode = sim::TrainingLayout::Mode::ALLREDUCE;
    ar.layout.workers = 2;
    ar.layout.ps_tasks = 0;
    ar.layout.ranks_per_host = 1;
    ar.collective_mode = mode;
    expect_refusal(std::string("training allreduce ") + sim::to_string(mode),
                   sim::run_training_job(cl, toy_model(4), ar));
  }
  for (const auto& [kind, e] : refused) {
    INFO(kind << ": " << e.message());
    CHECK(has(e.message(), "estimated"));
    CHECK(has(e.message(), "(TENSORPATH_TIME_LIMIT)"));
    CHECK(has(e.message(), "the time is driven by"));
  }
  check_no_simulation_started();
}

TEST_CASE("a job under the budget runs, the same job above a lower budget is refused", "[quick]")
{
  sim::AllreduceJob j;
  j.ranks = 64;
  const auto cl = test::test_cluster(64);
  {
    EnvGuard low("TENSORPATH_TIME_LIMIT", "1ms");
    CHECK_FALSE(sim::run_allreduce(cl, j).ok());
  }
  auto r = sim::run_allreduce(cl, j); // the default budget
  REQUIRE(r.ok());
  CHECK(r->messages == 2u * 64 * 63);
}

TEST_CASE("estimates grow with what drives them", "[quick]")
{
  sim::AllreduceJob a;
  a.ranks = 100;
  a.fold_alike_hosts = false; // message by message on every host: 2 N (N - 1) messages
  const double a100 = sim::estimate_allreduce(test::test_cluster(100), a).seconds;
  a.ranks = 3000;
  const double a3000 = sim::estimate_allreduce(test::test_cluster(3000), a).seconds;
  CHECK(a3000 > 10 * a100);
  // Three hosts' platform and the recurrence: more for more ranks, and far less than every host message by message.
  a.fold_alike_hosts = true;
  const double folded3000 = sim::estimate_allreduce(test::test_cluster(3000), a).seconds;
  a.ranks = 100;
  CHECK(folded3000 > sim::estimate_allreduce(test::test_cluster(100), a).seconds);
  CHECK(folded3000 < 0.1 * a3000);
  CHECK(sim::estimate_platform(test::test_cluster(2000)).seconds >
        sim::estimate_platform(test::test_cluster(1000)).seconds);
  sim::TransferJob t;
  const double t1 = sim::estimate_transfer(test::test_cluster(2), t).seconds;
  t.tensors_per_step = 100;
  const double t100 = sim::estimate_transfer(test::test_cluster(2), t).seconds;
  CHECK(t100 > t1);
  t.steps = 30;
  CHECK(sim::estimate_transfer(test::test_cluster(2), t).seconds > t100);
  t.materialize = true;
  t.sizes = {1ull << 30};
  CHECK(sim::estimate_transfer(test::test_cluster(2), t).bytes >= 3.0 * double(1ull << 30) * 100);
  // AR-gRPC's transfers: a quarter of the per-byte cost in chunk trains (the default), all of it chunk by chunk.
  t.transport = "ar_grpc";
  const double transfer_trains = sim::estimate_transfer(test::test_cluster(2), t).seconds;
  t.options.own<transports::ArGrpcOptions>().chunk_trains = false;
  const double transfer_by_chunk = sim::estimate_transfer(test::test_cluster(2), t).seconds;
  CHECK(transfer_by_chunk > 2 * transfer_trains);
  // From a GPU (staged block by block, a few chunks ready at a time) trains are not counted on.
  t.options.own<transports::ArGrpcOptions>().chunk_trains = true;
  t.src = Location::gpu(0);
  CHECK(sim::estimate_transfer(test::test_cluster(2), t).seconds == Approx(transfer_by_chunk));
  // A tensor of one chunk is read by one READ either way.
  t.src = Location::host(0);
  t.sizes = {4096};
  const double small_trains = sim::estimate_transfer(test::test_cluster(2), t).seconds;
  t.options.own<transports::ArGrpcOptions>().chunk_trains = false;
  CHECK(sim::estimate_transfer(test::test_cluster(2), t).seconds == Approx(small_trains));
  sim::TrainingJob tr;
  tr.layout.workers = 2;
  tr.layout.ps_tasks = 2;
  const auto m = toy_model(20);
  const auto small = sim::estimate_training(test::test_cluster(2), m, tr);
  tr.layout.workers = 8;
  const auto more = sim::estimate_training(test::test_cluster(8), m, tr);
  CHECK(more.seconds > small.seconds);
  CHECK(more.bytes > small.bytes);
  tr.steps = 30;
  CHECK(sim::estimate_training(test::test_cluster(8), m, tr).seconds > more.seconds);
  // AR-gRPC's chunk trains: fewer events per byte moved, a smaller estimate; chunk by chunk as before.
  tr.transport = "ar_grpc";
  const double trains = sim::estimate_training(test::test_cluster(8), m, tr).seconds; // the default
  tr.options.own<transports::ArGrpcOptions>().chunk_trains = false;
  const double by_chunk = sim::estimate_training(test::test_cluster(8), m, tr).seconds;
  CHECK(trains < by_chunk);
  CHECK(trains > 0);
  // Larger chunks (AR-gRPC picks them by the NIC's rate; set here) are fewer chunks for the same bytes.
  tr.options.own<transports::ArGrpcOptions>().chunk_bytes = 4 << 20;
  CHECK(sim::estimate_training(test::test_cluster(8), m, tr).seconds < by_chunk);
  // Messenger transports keep a channel with its bounce buffers per worker-PS pair: more memory than verbs v2's.
  tr.options = {};
  tr.transport = "verbs_v2";
  const double verbs_bytes = sim::estimate_training(test::test_cluster(8), m, tr).bytes;
  tr.transport = "mpi";
  CHECK(sim::estimate_training(test::test_cluster(8), m, tr).bytes > verbs_bytes);
  // mpi's transfers cost more with more GPUs per worker (its busy-polling thread beside the towers' CPU work).
  const double one_gpu = sim::estimate_training(test::test_cluster(8), m, tr).seconds;
  tr.layout.gpus_per_worker = 2;
  CHECK(sim::estimate_training(test::test_cluster(8), m, tr).seconds > one_gpu);
  // Network model roce: the roce model's run of each distinct ring counts, more with oversubscribed uplinks.
  sim::TrainingJob ring;
  ring.layout.mode = sim::TrainingLayout::Mode::ALLREDUCE;
  ring.layout.workers = 8;
  ring.layout.ps_tasks = 0;
  ring.collective_mode = sim::FabricMode::ANALYTICAL;
  const double plain = sim::estimate_training(test::test_cluster(8), m, ring).seconds;
  ring.roce_fabric = models::roce_hpcc_defaults(100e9);
  ring.roce_fabric->leaves = 2;
  const auto with_roce = sim::estimate_training(test::test_cluster(8), m, ring);
  CHECK(with_roce.seconds > plain);
  const auto* term = with_roce.driver(false);
  REQUIRE(term != nullptr);
  ring.roce_fabric->oversubscription = 8;
  CHECK(sim::estimate_training(test::test_cluster(8), m, ring).seconds > with_roce.seconds);
  sim::PerftestJob p;
  const double p1 = sim::estimate_perftest(test::test_cluster(2), p).seconds;
  p.config.iterations = 1000000;
  CHECK(sim::estimate_perftest(test::test_cluster(2), p).seconds > p1);
}

TEST_CASE("the analytical rings' estimate counts one-size rings folded where the hosts are alike", "[quick]")
{
  // 8 ranks per host: 512 hosts (four hosts' ranks divide the ring) fold a ring of one segment size onto two and four
  // hosts' ranks (analytical_ring's period); 511 hosts do not, and every rank's messages count. A gradient of 2^20
  // elements has one segment size on 4,096 ranks and two on 4,088.
  training::TrainingModel m = toy_model(1);
  for (auto& l : m.layers)
    for (auto& v : l.variables)
      v.bytes = 4 * (1 << 20);
  sim::TrainingJob ring;
  ring.layout.mode = sim::TrainingLayout::Mode::ALLREDUCE;
  ring.layout.ps_tasks = 0;
  ring.layout.ranks_per_host = 8;
  ring.collective_mode = sim::FabricMode::ANALYTICAL;
  auto rings_seconds = [&](int ranks) {
    ring.layout.workers = ranks;
    const auto e = sim::estimate_training(test::test_cluster(size_t(ranks / 8)), m, ring);
    for (const auto& t : e.terms)
      if (has(t.what, "the analytical rings")) return t.seconds;
    return -1.0;
  };
  const double folded = rings_seconds(4096), whole = rings_seconds(4088);
  REQUIRE(folded > 0);
  // 2 (N - 1) x 48 messages and the tries, against 2 N (N - 1): about 85 times fewer.
  CHECK(folded < whole / 50);
  // Ranks placed by hand: no fold assumed.
  ring.layout.workers = 4096;
  for (int r = 0; r < 4096; ++r)
    ring.layout.worker_hosts.push_back(r / 8);
  const auto by_hand = sim::estimate_training(test::test_cluster(512), m, ring);
  double by_hand_rings = -1;
  for (const auto& t : by_hand.terms)
    if (has(t.what, "the analytical rings")) by_hand_rings = t.seconds;
  CHECK(by_hand_rings > 50 * folded);
}
