// Fabric modes of a ring allreduce: the analytical fabric agrees with SimGrid's flow model within 1 % where no
// link is shared, both match the alpha-beta ring formula there, the protocol mode moves the same schedule through
// a transport (slower, never faster), and the analytical fabric serializes a shared link first come first served.
#include "core/collectives/ring_schedule.hpp"
#include "core/common/isolated_run.hpp"
#include "core/transports/mpi/mpi.hpp"
#include "models/catalog.hpp"
#include "sim/analytical_fabric.hpp"
#include "sim/fabric_modes.hpp"
#include "test_cluster.hpp"

#include <catch2/catch.hpp>

#include <cstdio>

using namespace tp;

namespace {

/// Run one allreduce in a child (one simulation per process); returns simulated seconds, alpha, beta.
std::array<double, 3> in_child(const models::ClusterProfile& cl, const sim::AllreduceJob& job)
{
  auto r = run_isolated([&]() -> Result<std::string> {
    auto x = sim::run_allreduce(cl, job);
    if (!x.ok()) return x.error();
    char buf[128];
    std::snprintf(buf, sizeof buf, "%.17g %.17g %.17g", x->seconds, x->alpha, x->beta);
    return std::string(buf);
  });
  REQUIRE(r.ok());
  std::array<double, 3> v{};
  REQUIRE(std::sscanf(r.value().c_str(), "%lf %lf %lf", &v[0], &v[1], &v[2]) == 3);
  return v;
}

} // namespace

TEST_CASE("analytical fabric agrees with the flow model within 1 percent on an unshared ring", "[fabric]")
{
  sim::AllreduceJob job;
  job.ranks = 8;
  job.bytes = 64 << 20;
  job.mode = sim::FabricMode::FLOW;
  const auto flow = in_child(test::test_cluster(8), job);
  job.mode = sim::FabricMode::ANALYTICAL;
  const auto ana = in_child(test::test_cluster(8), job);
  CHECK(ana[0] == Approx(flow[0]).epsilon(0.01));
  // And both are the alpha-beta formula with the path's fixed costs and slowest link, plus the protocol ring's local
  // work on every rank in step: N - 1 one-thread reductions of a segment and N copies of one into the result.
  const auto host = test::test_host();
  const auto& cpu = host.sockets[0].cpu;
  const double seg = double(64 << 20) / 8;
  const double adds =
      7 * (cpu.reduce_time(seg, 1) + cpu.work_handoff_latency) + 8 * (cpu.memcpy_time(seg) + cpu.work_handoff_latency);
  CHECK(ana[0] == Approx(collectives::ring_allreduce_alpha_beta(8, 64 << 20, ana[1], ana[2]) + adds).epsilon(1e-6));
  // The path is the NIC's: host memory to host memory at the slower of PCIe and the port's goodput.
  const auto& nic = host.nics[0];
  const double bottleneck =
      std::min({nic.pcie.posted_write_bandwidth(), nic.pcie.read_completion_bandwidth(cpu.read_completion_size),
                nic.nic.wire_goodput()});
  CHECK(ana[2] == Approx(bottleneck).epsilon(1e-9));
}

TEST_CASE("analytical and flow agree for GPU ranks sharing hosts", "[fabric]")
{
  sim::AllreduceJob job;
  job.ranks = 4;
  job.ranks_per_host = 2;
  job.gpu = true;
  job.bytes = 16 << 20;
  job.mode = sim::FabricMode::FLOW;
  const auto flow = in_child(test::test_cluster(2), job);
  job.mode = sim::FabricMode::ANALYTICAL;
  const auto ana = in_child(test::test_cluster(2), job);
  CHECK(ana[0] == Approx(flow[0]).epsilon(0.01));
}

TEST_CASE("protocol mode is never faster than the bare message schedule", "[fabric]")
{
  sim::AllreduceJob job;
  job.ranks = 4;
  job.bytes = 8 << 20;
  job.mode = sim::FabricMode::ANALYTICAL;
  const auto ana = in_child(test::test_cluster(4), job);
  job.mode = sim::FabricMode::PROTOCOL;
  job.options.own<transports::MpiOptions>().optimal_path = true;
  job.options.own<transports::MpiOptions>().nonblocking_recv = true;
  const auto proto = in_child(test::test_cluster(4), job);
  CHECK(proto[0] > ana[0]);
}

TEST_CASE("analytical fabric serves a shared link first come first served", "[fabric]")
{
  // Two messages of 1 MB over one 1 GB/s link with 1 us latency: the second waits for the first.
  sim::AnalyticalRoute route{{0}, 1e-6, {}};
  sim::AnalyticalFabric f({{"link", 1e9, true}},
                          [&route](int, int, double) -> const sim::AnalyticalRoute& { return route; });
  std::vector<double> landed;
  f.send(0, 1, 1e6, [&] { landed.push_back(f.now()); });
  f.send(0, 1, 1e6, [&] { landed.push_back(f.now()); });
  f.run();
  REQUIRE(landed.size() == 2);
  CHECK(landed[0] == Approx(1e-3 + 1e-6));
  CHECK(landed[1] == Approx(2e-3 + 1e-6));
  // A fat pipe does not serialize.
  sim::AnalyticalFabric g({{"fat", 1e9, false}},
                          [&route](int, int, double) -> const sim::AnalyticalRoute& { return route; });
  std::vector<double> l2;
  g.send(0, 1, 1e6, [&] { l2.push_back(g.now()); });
  g.send(0, 1, 1e6, [&] { l2.push_back(g.now()); });
  g.run();
  CHECK(l2[1] == Approx(1e-3 + 1e-6));
}

TEST_CASE("ring schedule sends 2 (N-1) N messages", "[fabric]")
{
  sim::AnalyticalRoute route{{}, 0, {}};
  sim::AnalyticalFabric f({}, [&route](int, int, double) -> const sim::AnalyticalRoute& { return route; });
  auto r = collectives::run_ring_allreduce(f, 5, 1e6);
  CHECK(r.messages == 2 * 4 * 5);
  CHECK(r.seconds == 0);
}

TEST_CASE("no ring path crosses the sockets at the GPU peer limit", "[fabric]")
{
  // 2 hosts x 8 GPUs, 4 per socket: ring hops between GPUs of different sockets and from GPUs of the NIC's other
  // socket. The mpi transport stages both through host memory (protocol mode never meets the peer limit); the
  // fabric modes must not either: their times do not move with socket_link.gpu_p2p_bandwidth.
  auto cluster = [](double gpu_p2p) {
    models::HostProfile h = test::test_host_8_gpus_two_sockets();
    h.socket_link.gpu_p2p_bandwidth = gpu_p2p;
    return test::test_cluster(2, h);
  };
  sim::AllreduceJob job;
  job.ranks = 16;
  job.ranks_per_host = 8;
  job.gpu = true;
  job.bytes = 16 << 20;
  for (auto mode : {sim::FabricMode::FLOW, sim::FabricMode::ANALYTICAL}) {
    job.mode = mode;
    CHECK(in_child(cluster(0.2e9), job)[0] == Approx(in_child(cluster(1e12), job)[0]).epsilon(1e-12));
  }
}

TEST_CASE("a training job's collective mode is protocol or analytical, and a wrong word names the field", "[fabric]")
{
  auto p = sim::parse_collective_mode("protocol");
  REQUIRE(p.ok());
  CHECK(p.value() == sim::FabricMode::PROTOCOL);
  auto a = sim::parse_collective_mode(sim::to_string(sim::FabricMode::ANALYTICAL));
  REQUIRE(a.ok());
  CHECK(a.value() == sim::FabricMode::ANALYTICAL);
  auto flow = sim::parse_collective_mode("flow"); // the flow model times a lone allreduce, not a training step
  REQUIRE_FALSE(flow.ok());
  CHECK(flow.error().field == "collective_mode");
  CHECK(flow.error().expected == "protocol or analytical");
  CHECK(flow.error().got == "\"flow\"");
}
