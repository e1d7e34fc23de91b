// Fabric modes of a ring allreduce: the analytical fabric agrees with SimGrid's flow model within 1 % where no
// link is shared, both match the alpha-beta ring formula there, the protocol mode moves the same schedule through
// a transport (slower, never faster), and the analytical fabric serves a shared link one message after the other.
#include "core/collectives/ring_schedule.hpp"
#include "core/common/isolated_run.hpp"
#include "core/transports/mpi/mpi.hpp"
#include "models/catalog.hpp"
#include "sim/analytical_fabric.hpp"
#include "sim/fabric_modes.hpp"
#include "test_cluster.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <limits>

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

TEST_CASE("analytical fabric serves a shared link one message after the other", "[fabric]")
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

TEST_CASE("the ring recurrence equals the event-driven ring wherever no link is shared", "[fabric][recurrence]")
{
  // Random routes, one link of its own per rank (never shared), random latencies, size-dependent delays and local
  // work, segment counts that do and do not divide the tensor: the recurrence and the analytical fabric's events give
  // the same time to the last bit, and the same message count.
  uint64_t seed = 12345;
  auto uniform = [&seed](double lo, double hi) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * double(seed >> 11) / double(1ULL << 53);
  };
  for (int n : {2, 3, 5, 8, 13}) {
    for (double bytes : {4.0 * 1024, 4.0 * 1001, 64e6, 4.0 * 3}) {
      std::vector<sim::AnalyticalLink> links;
      std::vector<sim::AnalyticalRoute> routes;
      for (int r = 0; r < n; ++r) {
        links.push_back({"l" + std::to_string(r), uniform(1e9, 1e10), true});
        const double per_byte = uniform(0, 1e-10);
        routes.push_back({{r}, uniform(1e-6, 5e-6), [per_byte](double b) { return per_byte * b; }});
      }
      collectives::RingScheduleOptions opt;
      const double red = uniform(1e-11, 1e-10), cp = uniform(1e-11, 1e-10);
      opt.reduce_time = [red](double b) { return 1e-6 + red * b; };
      opt.copy_time = [cp](double b) { return 2e-6 + cp * b; };
      sim::AnalyticalFabric f(
          links, [&routes](int src, int, double) -> const sim::AnalyticalRoute& { return routes[size_t(src)]; });
      const auto events = collectives::run_ring_allreduce(f, n, bytes, opt);
      sim::RingRoutes rr;
      rr.links = links;
      for (auto& k : rr.routes)
        k = routes;
      REQUIRE(sim::ring_links_unshared(rr, bytes));
      const auto closed = collectives::ring_allreduce_uncontended(
          n, bytes, [&rr](int r, double b) { return sim::ring_hop_time(rr, r, b); }, opt);
      INFO("ranks " << n << ", bytes " << bytes);
      CHECK(closed.seconds == events.seconds);
      CHECK(closed.messages == events.messages);
    }
  }
}

TEST_CASE("a ring whose routes share a link is timed message by message", "[fabric][recurrence]")
{
  // Two ranks' routes through one link: not unshared (the analytical fabric then runs message by message), and the
  // events are slower than the recurrence would say (the link serves one message at a time).
  std::vector<sim::AnalyticalLink> links{{"own0", 1e9, true}, {"common", 1e9, true}, {"own2", 1e9, true}};
  std::vector<sim::AnalyticalRoute> routes{{{0, 1}, 1e-6, {}}, {{1}, 1e-6, {}}, {{2}, 1e-6, {}}};
  sim::RingRoutes rr;
  rr.links = links;
  for (auto& k : rr.routes)
    k = routes;
  CHECK_FALSE(sim::ring_links_unshared(rr, 3e6));
  bool closed_form = true;
  const double shared = sim::analytical_ring(rr, 3e6, {}, &closed_form).seconds;
  CHECK_FALSE(closed_form);
  const double unserialized = collectives::ring_allreduce_uncontended(3, 3e6, [&rr](int r, double b) {
                                return sim::ring_hop_time(rr, r, b);
                              }).seconds;
  CHECK(shared > unserialized);
  // A fat pipe is never held: shared by name only.
  rr.links[1].shared = false;
  CHECK(sim::ring_links_unshared(rr, 3e6));
}

namespace {

/// run_allreduce in a child: seconds, alpha, beta, closed form, machines of the platform.
std::string allreduce_row(const models::ClusterProfile& cl, const sim::AllreduceJob& job)
{
  auto r = run_isolated([&]() -> Result<std::string> {
    auto x = sim::run_allreduce(cl, job);
    if (!x.ok()) return x.error();
    char buf[256];
    std::snprintf(buf, sizeof buf, "%.17g %.17g %.17g %d %d %s", x->seconds, x->alpha, x->beta, int(x->closed_form),
                  x->platform_machines, x->beta_link.c_str());
    return std::string(buf);
  });
  REQUIRE(r.ok());
  return r.value();
}

} // namespace

TEST_CASE("an analytical ring read from three identical hosts equals the ring on every host", "[fabric][fold]")
{
  // Host memory, one rank per host (a NIC hop per rank), and GPUs two per host (a GPU-to-GPU hop and a NIC hop):
  // folded (routes from 3 hosts) and unfolded (every host built) agree to the bit, on tensors whose segments have one
  // size and two (one rank per host and one size: every rank alike, the lock-step shortcut).
  struct Case {
    int ranks, per_host;
    bool gpu;
    double bytes;
  };
  for (const Case c : {Case{7, 1, false, 4.0 * 7 * 1000}, Case{7, 1, false, 4.0 * 1000003},
                       Case{10, 2, true, 4.0 * 10 * 100000}, Case{10, 2, true, 4.0 * 1000003}}) {
    sim::AllreduceJob job;
    job.ranks = c.ranks;
    job.ranks_per_host = c.per_host;
    job.gpu = c.gpu;
    job.bytes = c.bytes;
    const auto cl = test::test_cluster(c.ranks / c.per_host);
    const std::string folded = allreduce_row(cl, job);
    job.fold_alike_hosts = false;
    const std::string every = allreduce_row(cl, job);
    INFO(c.ranks << " ranks, " << c.per_host << " per host, bytes " << c.bytes << "\nfolded: " << folded
                 << "\nevery host: " << every);
    double fs = 0, es = 0, fa = 0, ea = 0, fb = 0, eb = 0;
    int fc = 0, ec = 0, fm = 0, em = 0;
    REQUIRE(std::sscanf(folded.c_str(), "%lf %lf %lf %d %d", &fs, &fa, &fb, &fc, &fm) == 5);
    REQUIRE(std::sscanf(every.c_str(), "%lf %lf %lf %d %d", &es, &ea, &eb, &ec, &em) == 5);
    CHECK(fm == 3);
    CHECK(em == c.ranks / c.per_host);
    CHECK(fc == 1);
    CHECK(fs == es);
    CHECK(fa == ea);
    CHECK(fb == eb);
  }
}

TEST_CASE("a ring whose hops share a link is not folded", "[fabric][fold]")
{
  // DGX A100 (GPUs and NICs in pairs behind PCIe switches): on the mpi transport's path some of its ranks' hops cross
  // the same link (`tensorpath allreduce --hw dgx-a100-8gpu --gpu --ranks-per-host 8` says so). The folded probe sees
  // the sharing and the ring is run on every host, message by message.
  sim::AllreduceJob job;
  job.ranks = 32;
  job.ranks_per_host = 8;
  job.gpu = true;
  job.bytes = 16 << 20;
  auto host = models::Catalog().host("dgx-a100-8gpu");
  REQUIRE(host.ok());
  const std::string row = allreduce_row(test::test_cluster(4, host.value()), job);
  int closed = -1, machines = -1;
  double s = 0, a = 0, b = 0;
  REQUIRE(std::sscanf(row.c_str(), "%lf %lf %lf %d %d", &s, &a, &b, &closed, &machines) == 5);
  CHECK(closed == 0);
  CHECK(machines == 4);
  CHECK(s > 0);
  // At a size whose message-by-message ring is beyond the budget, the fall-back is refused under its own estimate
  // (the folded estimate let it start): a tensor of two segment sizes, which no fold onto two hosts' ranks takes
  // either, so its every message counts.
  job.ranks = 65536;
  job.ranks_per_host = 2;
  job.bytes = (16 << 20) + 4;
  auto big = run_isolated([&]() -> Result<std::string> {
    auto x = sim::run_allreduce(test::test_cluster(32768, host.value()), job);
    if (!x.ok()) return x.error();
    return std::string("ran");
  });
  REQUIRE_FALSE(big.ok());
  INFO(big.error().message());
  CHECK(big.error().message().find("share links") != std::string::npos);
  CHECK(big.error().message().find("messages at most") != std::string::npos); // the rings drive it
}

TEST_CASE("an allreduce result goes through its text form field for field", "[fabric]")
{
  sim::AllreduceResult r;
  r.seconds = 0.1234567890123;
  r.messages = 33538048;
  r.wall_seconds = 1.5;
  r.setup_wall_seconds = 0.25;
  r.alpha = 3.5e-6;
  r.beta = std::numeric_limits<double>::infinity();
  r.beta_link = "host0.nic0.port.tx (and more)";
  r.closed_form = false;
  r.contention_bound = 2e-5;
  r.folded_ranks = 16;
  r.simulated_messages = 393120;
  r.platform_machines = 512;
  auto back = sim::allreduce_result_from_text(sim::to_text(r));
  REQUIRE(back.ok());
  CHECK(back->seconds == r.seconds);
  CHECK(back->messages == r.messages);
  CHECK(back->wall_seconds == r.wall_seconds);
  CHECK(back->setup_wall_seconds == r.setup_wall_seconds);
  CHECK(back->alpha == r.alpha);
  CHECK(std::isinf(back->beta));
  CHECK(back->beta_link == r.beta_link);
  CHECK(back->closed_form == r.closed_form);
  CHECK(back->contention_bound == r.contention_bound);
  CHECK(back->folded_ranks == 16);
  CHECK(back->simulated_messages == 393120);
  CHECK(back->platform_machines == 512);
  CHECK_FALSE(sim::allreduce_result_from_text("0.1 12 x").ok());
}

TEST_CASE("the ring recurrence's lock step equals the events when every rank is alike", "[fabric][recurrence]")
{
  // Identical routes (one own link each), one segment size: the shortcut of one rank's steps, to the bit.
  for (int n : {2, 4, 7, 16}) {
    const double bytes = 4.0 * n * 12345;
    std::vector<sim::AnalyticalLink> links;
    std::vector<sim::AnalyticalRoute> routes;
    for (int r = 0; r < n; ++r) {
      links.push_back({"l" + std::to_string(r), 3e9, true});
      routes.push_back({{r}, 2.5e-6, [](double b) { return 1e-11 * b; }});
    }
    collectives::RingScheduleOptions opt;
    opt.reduce_time = [](double b) { return 1e-6 + 3e-11 * b; };
    opt.copy_time = [](double b) { return 2e-6 + 1e-11 * b; };
    sim::AnalyticalFabric f(
        links, [&routes](int src, int, double) -> const sim::AnalyticalRoute& { return routes[size_t(src)]; });
    const auto events = collectives::run_ring_allreduce(f, n, bytes, opt);
    sim::RingRoutes rr;
    rr.links = links;
    for (auto& k : rr.routes)
      k = routes;
    const auto closed = collectives::ring_allreduce_uncontended(
        n, bytes, [&rr](int r, double b) { return sim::ring_hop_time(rr, r, b); }, opt);
    INFO("ranks " << n);
    CHECK(closed.seconds == events.seconds);
    CHECK(closed.seconds > 0);
  }
}

TEST_CASE("the analytical fabric holds no link idle for a message that waits for another of its links", "[fabric]")
{
  // Links A and B at 1 GB/s, messages of 1 MB (1 ms on either). m1 holds B from 0 to 1 ms; m2 needs A and B, so it
  // holds both from 1 to 2 ms; m3, sent after m2 but needing A only, takes A while m2 waits for B: 0 to 1 ms. A longer
  // m4 (1.5 ms on A) does not fit that gap and goes after m2.
  std::vector<sim::AnalyticalLink> links{{"A", 1e9, true}, {"B", 1e9, true}};
  std::vector<sim::AnalyticalRoute> routes{{{1}, 0, {}}, {{0, 1}, 0, {}}, {{0}, 0, {}}};
  auto run = [&](const std::vector<std::pair<int, double>>& sends) {
    sim::AnalyticalFabric f(links,
                            [&](int src, int, double) -> const sim::AnalyticalRoute& { return routes[size_t(src)]; });
    std::vector<double> landed(sends.size(), -1);
    for (size_t k = 0; k < sends.size(); ++k)
      f.send(sends[k].first, 9, sends[k].second, [&f, &landed, k] { landed[k] = f.now(); });
    f.run();
    return landed;
  };
  const auto gap = run({{0, 1e6}, {1, 1e6}, {2, 1e6}});
  CHECK(gap[0] == Approx(1e-3));
  CHECK(gap[1] == Approx(2e-3));
  CHECK(gap[2] == Approx(1e-3)); // in the gap (it landed at 3 ms when A was held from m2's call)
  const auto no_fit = run({{0, 1e6}, {1, 1e6}, {2, 1.5e6}});
  CHECK(no_fit[2] == Approx(3.5e-3));
}

TEST_CASE("the analytical fabric finds a time every link of a route is free, a link's gap moving another's", "[fabric]")
{
  // Links A, B, C at 1 GB/s. B is held 0-1.5 ms, C 0-1 ms, so a message over C and A holds A 1-2 ms. A message over A
  // and B: B is free from 1.5 ms, but then A is not until 2 ms: it holds both 2-3 ms (a search that looked at each
  // link once would have it from 1.5 ms, over A's 1-2 ms).
  std::vector<sim::AnalyticalLink> links{{"A", 1e9, true}, {"B", 1e9, true}, {"C", 1e9, true}};
  std::vector<sim::AnalyticalRoute> routes{{{1}, 0, {}}, {{2}, 0, {}}, {{2, 0}, 0, {}}, {{0, 1}, 0, {}}};
  sim::AnalyticalFabric f(links,
                          [&](int src, int, double) -> const sim::AnalyticalRoute& { return routes[size_t(src)]; });
  std::vector<double> landed(4, -1);
  const double bytes[4] = {1.5e6, 1e6, 1e6, 1e6};
  for (int k = 0; k < 4; ++k)
    f.send(k, 9, bytes[k], [&f, &landed, k] { landed[size_t(k)] = f.now(); });
  f.run();
  CHECK(landed[0] == Approx(1.5e-3));
  CHECK(landed[1] == Approx(1e-3));
  CHECK(landed[2] == Approx(2e-3));
  CHECK(landed[3] == Approx(3e-3));
}

TEST_CASE("analytical rings on DGX A100 hosts, whose routes share links, stay near the flow model as they grow",
          "[fabric]")
{
  // Eight GPUs per host behind four PCIe switches with their NICs: ranks' routes share links. Before the analytical
  // fabric let a message use a link's idle gaps, a link waited for a message's other links stood idle, and the ring
  // fell behind the flow model by 5.3x at 64 ranks x 256 MiB and 2.6x at 256 ranks x 16 MiB. Now within 0.75-1.4x of
  // it (the remaining gap: one message after the other on a shared link against max-min's side by side).
  auto host = models::Catalog().host("dgx-a100-8gpu");
  REQUIRE(host.ok());
  for (const auto& [ranks, bytes] : std::vector<std::pair<int, double>>{{64, 268435456.0}, {128, 67108864.0}}) {
    sim::AllreduceJob job;
    job.ranks = ranks;
    job.ranks_per_host = 8;
    job.gpu = true;
    job.bytes = bytes;
    const auto cl = test::test_cluster(size_t(ranks / 8), host.value());
    job.mode = sim::FabricMode::ANALYTICAL;
    const std::string analytical = allreduce_row(cl, job);
    job.mode = sim::FabricMode::FLOW;
    const std::string flow = allreduce_row(cl, job);
    INFO(ranks << " ranks, " << bytes << " bytes\nanalytical: " << analytical << "\nflow: " << flow);
    const double a = std::stod(analytical), f = std::stod(flow);
    CHECK(a >= 0.75 * f);
    CHECK(a <= 1.4 * f);
  }
}
