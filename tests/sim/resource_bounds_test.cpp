// Jobs the machine cannot hold are refused before they start, with the estimate: a million allreduce ranks, a
// materialized terabyte transfer. The refusal is immediate (nothing is built first).
#include "core/transports/transport.hpp"
#include "sim/training_job.hpp"
#include "sim/transfer_job.hpp"
#include "test_cluster.hpp"

#include <catch2/catch.hpp>

#include <chrono>

using namespace tp;

TEST_CASE("a million allreduce ranks are refused up front with an estimate", "[quick]")
{
  transports::register_builtin_transports();
  training::TrainingModel m;
  m.name = "toy";
  m.batch = 16;
  for (int l = 0; l < 50; ++l)
    m.layers.push_back({"l" + std::to_string(l), 1e-3, 2e-3, {{"l" + std::to_string(l) + "/w", 4096, true}}});
  sim::TrainingJob j;
  j.transport = "grpc";
  j.layout.mode = sim::TrainingLayout::Mode::ALLREDUCE;
  j.layout.workers = 1000000;
  j.layout.ps_tasks = 0;
  j.collective_mode = sim::FabricMode::ANALYTICAL;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = sim::run_training_job(test::test_cluster(2), m, j);
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE_FALSE(r.ok());
  const std::string msg = r.error().message();
  INFO(msg);
  CHECK(msg.find("1000000 workers") != std::string::npos);
  CHECK(msg.find("estimated") != std::string::npos);
  CHECK(msg.find("step-graph ops") != std::string::npos);
  CHECK(dt < 5.0); // refused before anything is built (generous bound for a loaded CI machine)
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
  CHECK(r.error().message().find("materialized transfer") != std::string::npos);
  CHECK(r.error().message().find("TB") != std::string::npos);
}
