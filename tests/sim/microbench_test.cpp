// perftest and the copy benchmark on the simulator: complete runs with plausible numbers and bounds.
#include "models/catalog.hpp"
#include "sim/microbench_jobs.hpp"
#include "test_cluster.hpp"

using namespace tp;

TEST_CASE("perftest write bandwidth approaches the bottleneck and never exceeds it", "[quick]")
{
  sim::PerftestJob job;
  job.config.sizes = {4096, 1 << 20};
  job.config.iterations = 300;
  auto r = sim::run_perftest_job(test::test_cluster(2), job);
  REQUIRE(r.ok());
  REQUIRE(r->result.bw.size() == 2);
  const auto h = test::test_host();
  const double bottleneck = std::min(h.nics[0].nic.wire_goodput(),
                                     h.nics[0].pcie.read_completion_bandwidth(h.sockets[0].cpu.read_completion_size));
  for (const auto& row : r->result.bw) {
    CHECK(row.bw_average <= bottleneck * 1.0001);
    CHECK(row.bw_peak >= row.bw_average);
  }
  CHECK(r->result.bw[1].bw_average > 0.97 * bottleneck);
  CHECK(r->result.operations == 600);
}

namespace {
void check_latency_run(microbench::Verb verb)
{
  sim::PerftestJob job;
  job.config.metric = microbench::Metric::LAT;
  job.config.verb = verb;
  job.config.sizes = {2, 65536};
  job.config.iterations = 50;
  auto r = sim::run_perftest_job(test::test_cluster(2), job);
  REQUIRE(r.ok());
  REQUIRE(r->result.lat.size() == 2);
  CHECK(r->result.lat[0].t_typical > 0.5e-6);
  CHECK(r->result.lat[1].t_typical > r->result.lat[0].t_typical);
  CHECK(r->result.lat[0].iterations == 50);
}
} // namespace

TEST_CASE("perftest send latency gives one row per size", "[quick]")
{
  check_latency_run(microbench::Verb::SEND);
}
TEST_CASE("perftest read latency gives one row per size", "[quick]")
{
  check_latency_run(microbench::Verb::READ);
}
TEST_CASE("perftest write latency gives one row per size", "[quick]")
{
  check_latency_run(microbench::Verb::WRITE);
}

TEST_CASE("perftest SEND bandwidth with several QPs keeps receives posted", "[quick]")
{
  sim::PerftestJob job;
  job.config.verb = microbench::Verb::SEND;
  job.config.qps = 4;
  job.config.sizes = {8192};
  job.config.iterations = 200;
  auto r = sim::run_perftest_job(test::test_cluster(2), job);
  REQUIRE(r.ok());
  CHECK(r->result.operations == 800);
  CHECK(r->result.bw.at(0).bw_average > 0);
}

TEST_CASE("perftest buffer placement follows the flags or explains why it cannot", "[quick]")
{
  const auto h = test::test_host();
  CHECK(sim::perftest_buffer_location(h, 0, false, false).value() == Location::host(0));
  CHECK(sim::perftest_buffer_location(h, 0, true, false).value() == Location::host(1));
  CHECK(sim::perftest_buffer_location(h, 0, false, true).value() == Location::gpu(0));
  CHECK(sim::perftest_buffer_location(h, 0, true, true).value() == Location::gpu(1));
  auto one = h;
  one.sockets.resize(1);
  one.gpus.clear();
  CHECK_FALSE(sim::perftest_buffer_location(one, 0, true, false).ok());
  CHECK_FALSE(sim::perftest_buffer_location(one, 0, false, true).ok());
  CHECK_FALSE(sim::perftest_buffer_location(h, 3, false, false).ok());
}

TEST_CASE("A peer copy between GPUs runs at NVLink's data rate on an HGX H100", "[quick]")
{
  models::Catalog cat;
  auto host = cat.host("hgx-h100-8gpu");
  REQUIRE(host.ok());
  sim::CopyJob j;
  j.config.gpu = 0;
  j.config.peer_gpu = 5; // across the sockets: NVLink does not care
  j.config.bytes = 160'000'000;
  auto r = sim::run_copy_jobs(models::make_cluster(*host, 1, {"sw", 0, {}}, "node"), {j});
  REQUIRE(r.ok());
  const double nvlink = host->nvlink->goodput();
  CHECK(r.value()[0].p2p_bandwidth <= nvlink);
  CHECK(r.value()[0].p2p_bandwidth >= 0.99 * nvlink); // the copies are in flight together: no gap between them
  // Host to GPU goes through the GPU's PCIe switch and its Gen5 uplink: never above PCIe's read completion rate.
  const auto& uplink = host->pcie_switches[0].uplink;
  CHECK(r.value()[0].h2d_bandwidth <= uplink.read_completion_bandwidth(host->sockets[0].cpu.read_completion_size));
  CHECK(r.value()[0].h2d_bandwidth < 0.2 * r.value()[0].p2p_bandwidth);
}

TEST_CASE("Without NVLink a peer copy across the sockets is staged through host memory over the socket link", "[quick]")
{
  sim::CopyJob j;
  j.config.gpu = 0;
  j.config.peer_gpu = 1; // test_host: GPU 0 on socket 0, GPU 1 on socket 1
  j.config.bytes = 32 << 20;
  const auto host = test::test_host();
  auto r = sim::run_copy_jobs(test::test_cluster(1), {j});
  REQUIRE(r.ok());
  CHECK(r.value()[0].p2p_bandwidth > 0);
  CHECK(r.value()[0].p2p_bandwidth <= host.socket_link.bandwidth * 1.0001);
}

TEST_CASE("A peer copy to the same GPU is refused, naming peer_gpu", "[quick]")
{
  sim::CopyJob j;
  j.config.gpu = 1;
  j.config.peer_gpu = 1;
  auto bad = sim::run_copy_jobs(test::test_cluster(1), {j});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().field == "peer_gpu");
}
