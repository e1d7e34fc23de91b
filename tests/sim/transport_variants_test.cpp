// Transports under every memory strategy (bytes still right; registrations and copies as the strategy says),
// the MPI optimal path, and injected faults (bad rkey, a QP forced into error) reaching the Recv callback as
// errors instead of crashes or hangs.
#include "core/common/isolated_run.hpp"
#include "core/transports/mpi/mpi.hpp"
#include "sim/sim_device.hpp"
#include "transport_fixture.hpp"

using namespace tp;
using rendezvous::RecvOutcome;
using tp::test::PS;
using tp::test::TransportFixture;
using tp::test::WORKER;

namespace {

struct Got {
  Result<RecvOutcome> r = Error::msg("not received");
};

std::shared_ptr<Got> exchange(TransportFixture& f, int64_t step, const std::string& edge, const Tensor& t, Location dst,
                              const std::string& src_dev, const std::string& dst_dev)
{
  auto g = std::make_shared<Got>();
  auto k = rendezvous::parse_key(TransportFixture::key(edge, WORKER, src_dev, PS, dst_dev)).value();
  REQUIRE(f.worker->rendezvous().send(step, k, t, false).ok());
  rendezvous::RecvArgs a;
  a.dst_location = dst;
  a.alloc_attrs.nic_compatible = true;
  f.ps->rendezvous().recv_async(step, k, a, [g](Result<RecvOutcome> r) { g->r = std::move(r); });
  return g;
}

struct StepCounts {
  uint32_t registrations = 0;
  uint32_t copies = 0;
};

StepCounts counts(TransportFixture& f, int64_t step)
{
  StepCounts c;
  for (auto* log : {&f.worker->log(), &f.ps->log()})
    for (const auto& r : log->records())
      if (r.step == step) {
        c.registrations += r.registrations;
        c.copies += r.copies;
      }
  return c;
}

void strategy_roundtrip(const std::string& transport, memory::StrategyKind kind)
{
  TransportFixture f(transport, kind);
  for (int step = 1; step <= 3; ++step) {
    // Each step's tensors are released before the next step, so allocators hand out the same memory again,
    // as in training.
    Tensor h = TransportFixture::make(*f.worker, 250000, Location::host(0), uint32_t(step)); // 1 MB
    Tensor g = TransportFixture::make(*f.worker, 50000, Location::gpu(0), uint32_t(step + 10));
    auto eh = exchange(f, step, "h", h, Location::host(0), "CPU:0", "CPU:0");
    auto eg = exchange(f, step, "g", g, Location::gpu(1), "GPU:0", "GPU:1");
    f.sim->run();
    REQUIRE(eh->r.ok());
    REQUIRE(eg->r.ok());
    CHECK(TransportFixture::same_bytes(h, eh->r->tensor));
    CHECK(TransportFixture::same_bytes(g, eg->r->tensor));
  }
  const StepCounts steady = counts(f, 3);
  const StepCounts first = counts(f, 1);
  switch (kind) {
  case memory::StrategyKind::ON_DEMAND:
    CHECK(steady.registrations > 0); // registration on the critical path of every transfer
    break;
  case memory::StrategyKind::ON_DEMAND_CACHED:
  case memory::StrategyKind::POOL_VISITOR:
  case memory::StrategyKind::GRAPH_AWARE:
    CHECK(steady.registrations == 0); // paid once, at first use
    CHECK(first.registrations + f.worker->memory().stats().registrations > 0);
    break;
  case memory::StrategyKind::STAGING_COPY:
    CHECK(steady.registrations == 0);
    CHECK(steady.copies >= 2); // in at the producer, out at the consumer
    break;
  }
}

} // namespace

#define STRATEGY_CASES(T)                                                                                              \
  TEST_CASE(T " with on_demand registration", "[quick][transport]")                                                    \
  {                                                                                                                    \
    strategy_roundtrip(T, memory::StrategyKind::ON_DEMAND);                                                            \
  }                                                                                                                    \
  TEST_CASE(T " with a registration cache", "[quick][transport]")                                                      \
  {                                                                                                                    \
    strategy_roundtrip(T, memory::StrategyKind::ON_DEMAND_CACHED);                                                     \
  }                                                                                                                    \
  TEST_CASE(T " with staging copies", "[quick][transport]")                                                            \
  {                                                                                                                    \
    strategy_roundtrip(T, memory::StrategyKind::STAGING_COPY);                                                         \
  }                                                                                                                    \
  TEST_CASE(T " with visitor-registered pools", "[quick][transport]")                                                  \
  {                                                                                                                    \
    strategy_roundtrip(T, memory::StrategyKind::POOL_VISITOR);                                                         \
  }                                                                                                                    \
  TEST_CASE(T " with the graph-aware allocator", "[quick][transport]")                                                 \
  {                                                                                                                    \
    strategy_roundtrip(T, memory::StrategyKind::GRAPH_AWARE);                                                          \
  }

STRATEGY_CASES("verbs_v2")
STRATEGY_CASES("gdr")
STRATEGY_CASES("ar_grpc")

TEST_CASE("The pool strategy makes verbs_v2 zero-copy for host tensors in steady state", "[quick][transport]")
{
  TransportFixture f("verbs_v2", memory::StrategyKind::POOL_VISITOR);
  for (int step = 1; step <= 2; ++step) {
    Tensor h = TransportFixture::make(*f.worker, 250000, Location::host(0), uint32_t(step));
    auto g = exchange(f, step, "h", h, Location::host(0), "CPU:0", "CPU:0");
    f.sim->run();
    REQUIRE(g->r.ok());
  }
  CHECK(counts(f, 2).copies == 0);
  CHECK(counts(f, 2).registrations == 0);
}

TEST_CASE("MPI optimal path sends metadata on 2020 and the payload from the tensor buffer on 3030",
          "[quick][transport]")
{
  transports::TransportOptions o;
  o.own<transports::MpiOptions>().optimal_path = true;
  TransportFixture f("mpi", memory::StrategyKind::POOL_VISITOR, o);
  std::vector<std::pair<Tensor, std::shared_ptr<Got>>> runs;
  for (int i = 0; i < 6; ++i) { // all above the MPI library's eager limit: no bounce-buffer copies either
    Tensor t = TransportFixture::make(*f.worker, 10000 + 300000 * i, Location::host(0), uint32_t(i));
    runs.emplace_back(t, exchange(f, 1, "t" + std::to_string(i), t, Location::host(0), "CPU:0", "CPU:0"));
  }
  f.sim->run();
  for (auto& [t, g] : runs) {
    REQUIRE(g->r.ok());
    CHECK(TransportFixture::same_bytes(t, g->r->tensor));
  }
  uint32_t producer_copies = 0;
  for (const auto& r : f.worker->log().records())
    producer_copies += r.copies;
  CHECK(producer_copies == 0); // no proto copy at the sender on the optimal path
}

namespace {

void bad_rkey_is_an_error(const std::string& transport)
{
  transports::TransportOptions o;
  o.inject_bad_rkey = true;
  TransportFixture f(transport, memory::StrategyKind::POOL_VISITOR, o);
  Tensor t = TransportFixture::make(*f.worker, 1 << 20, Location::host(0), 1); // large: every design uses RDMA for it
  auto g = exchange(f, 1, "x", t, Location::host(0), "CPU:0", "CPU:0");
  f.sim->run();
  REQUIRE_FALSE(g->r.ok());
  // The side that issued the RDMA operation sees the remote access error; the other side sees its QP fail
  // (its receives flushed), which is all a real consumer learns too.
  const std::string m = g->r.error().message();
  INFO(m);
  CHECK((m.find("remote access error") != std::string::npos || m.find("Flushed") != std::string::npos));
}

/// Step 1: one tensor of `elements` floats moved, so that the channel is set up before a fault.
void warm_up(TransportFixture& f, int64_t elements)
{
  Tensor a = TransportFixture::make(*f.worker, elements, Location::host(0), 1);
  auto g = exchange(f, 1, "a", a, Location::host(0), "CPU:0", "CPU:0");
  f.sim->run();
  REQUIRE(g->r.ok());
}

void qp_error_is_an_error(const std::string& transport)
{
  TransportFixture f(transport);
  warm_up(f, 100000);
  static_cast<sim::SimDevice&>(f.pp->device()).force_error_all_qps();
  Tensor b = TransportFixture::make(*f.worker, 100000, Location::host(0), 2);
  auto g2 = exchange(f, 2, "b", b, Location::host(0), "CPU:0", "CPU:0");
  f.sim->run();
  REQUIRE_FALSE(g2->r.ok());
  CHECK_FALSE(g2->r.error().message().empty());
  // A Recv posted after the failure is known (the channel to the producer already failed, nothing in flight to fail
  // with it) is answered with an error too, not left waiting (mpi's request send failed silently: a consumer whose
  // producer process had died waited for ever).
  Tensor c = TransportFixture::make(*f.worker, 100000, Location::host(0), 3);
  auto g3 = exchange(f, 3, "c", c, Location::host(0), "CPU:0", "CPU:0");
  f.sim->run();
  REQUIRE_FALSE(g3->r.ok());
  CHECK(g3->r.error().message() != "not received");
}

void many_in_flight_when_qp_errs(const std::string& transport)
{
  // The producer's QPs in error before 150 requests (more than its 64 send bounce buffers) reach it: each Recv still
  // gets an answer, none waits for ever.
  TransportFixture f(transport);
  warm_up(f, 100);
  static_cast<sim::SimDevice&>(f.wp->device()).force_error_all_qps();
  std::vector<std::shared_ptr<Got>> got;
  for (int i = 0; i < 150; ++i) {
    Tensor t = TransportFixture::make(*f.worker, 100 + i, Location::host(0), uint32_t(i));
    got.push_back(exchange(f, 2, "t" + std::to_string(i), t, Location::host(0), "CPU:0", "CPU:0"));
  }
  f.sim->run();
  size_t answered = 0;
  for (const auto& g : got)
    answered += g->r.ok() || g->r.error().message() != "not received";
  CHECK(answered == got.size());
}

void failed_response_is_logged_failed(const std::string& transport)
{
  // The producer's QPs err just after a request reached it: its response's send fails, and the producer's record says
  // so (mpi logged it as a transfer that succeeded). Steps 1 and 2 warm up (first use: tuning, registration) and time
  // the request's arrival at the producer in steady state; step 3 errs the QPs 1 ns after it. 200 floats: an eager
  // response in both.
  TransportFixture f(transport);
  double served = -1;
  for (int step = 1; step <= 2; ++step) {
    Tensor a = TransportFixture::make(*f.worker, 200, Location::host(0), uint32_t(step));
    const double t0 = f.sim->now();
    auto g = exchange(f, step, "a", a, Location::host(0), "CPU:0", "CPU:0");
    f.sim->run();
    REQUIRE(g->r.ok());
    for (const auto& r : f.worker->log().records())
      if (r.side == transports::Side::PRODUCER && r.step == step) served = r.t_start - t0;
  }
  REQUIRE(served > 0);
  Tensor b = TransportFixture::make(*f.worker, 200, Location::host(0), 3);
  auto g = exchange(f, 3, "b", b, Location::host(0), "CPU:0", "CPU:0");
  f.wp->runtime().after(served + 1e-9, [&f] { static_cast<sim::SimDevice&>(f.wp->device()).force_error_all_qps(); });
  f.sim->run();
  size_t logged = 0;
  for (const auto& r : f.worker->log().records())
    if (r.side == transports::Side::PRODUCER && r.step == 3) {
      ++logged;
      INFO("producer record: ok " << r.ok << ", error " << r.error);
      CHECK_FALSE(r.ok);
    }
  CHECK(logged == 1);
}

} // namespace

#define FAULT_CASES(T)                                                                                                 \
  TEST_CASE(T ": a bad rkey reaches the Recv callback as an error", "[quick][transport][fault]")                       \
  {                                                                                                                    \
    bad_rkey_is_an_error(T);                                                                                           \
  }                                                                                                                    \
  TEST_CASE(T ": a QP forced into error fails the next Recv", "[quick][transport][fault]")                             \
  {                                                                                                                    \
    qp_error_is_an_error(T);                                                                                           \
  }                                                                                                                    \
  TEST_CASE(T ": every Recv in flight is answered when the producer's QP errs", "[quick][transport][fault]")           \
  {                                                                                                                    \
    many_in_flight_when_qp_errs(T);                                                                                    \
  }

FAULT_CASES("verbs_v1")
FAULT_CASES("verbs_v2")
FAULT_CASES("gdr")
FAULT_CASES("mpi")
FAULT_CASES("ar_grpc")

TEST_CASE("mpi: a response whose send fails when the QP errs is logged as failed", "[quick][transport][fault]")
{
  failed_response_is_logged_failed("mpi");
}

TEST_CASE("ar_grpc: a response whose send fails when the QP errs is logged as failed", "[quick][transport][fault]")
{
  failed_response_is_logged_failed("ar_grpc");
}

namespace {

/// Simulated seconds until one 64 KiB tensor sent over mpi has arrived, on hosts whose CPU profile sets
/// mpi_call_overhead to `call_seconds`. In a child process of its own (one simulation per process); negative when the
/// bytes did not arrive intact.
double mpi_exchange_seconds(double call_seconds)
{
  auto r = run_isolated([call_seconds]() -> Result<std::string> {
    models::HostProfile h = test::test_host();
    for (auto& s : h.sockets)
      s.cpu.mpi_call_overhead = call_seconds;
    TransportFixture f("mpi", memory::StrategyKind::POOL_VISITOR, {}, true, test::test_cluster(2, h));
    f.sim->run();
    const double t0 = f.sim->now();
    Tensor t = TransportFixture::make(*f.worker, 16384, Location::host(0), 7);
    auto g = exchange(f, 1, "cost", t, Location::host(0), "CPU:0", "CPU:0");
    f.sim->run();
    if (!g->r.ok() || !TransportFixture::same_bytes(t, g->r->tensor)) return std::string("-1");
    return std::to_string(f.sim->now() - t0);
  });
  REQUIRE(r.ok());
  return std::stod(r.value());
}

} // namespace

TEST_CASE("The MPI thread's call cost is the host CPU profile's mpi_call_overhead", "[quick][transport]")
{
  const double fast = mpi_exchange_seconds(models::CpuProfile{}.mpi_call_overhead);
  const double slow = mpi_exchange_seconds(1e-3);
  REQUIRE(fast > 0);
  REQUIRE(slow > 0);
  // The request is taken by the producer's MPI thread and the response by the consumer's: at least two calls, each
  // 1 ms instead of 1 us.
  CHECK(slow - fast >= 2 * (1e-3 - 1e-6));
  CHECK(slow - fast < 20e-3);
}

TEST_CASE("An mpi task whose backend gave no MPI call cost refuses to start, naming the field", "[quick][transport]")
{
  transports::register_builtin_transports();
  sim::SimOptions so;
  auto sim = sim::Simulation::create(test::test_cluster(2), so).value();
  auto* p = sim->add_process("node0", "worker").value();
  transports::TaskSpec spec;
  spec.task = WORKER;
  spec.transport = "mpi";
  transports::ClusterSpec cluster{{WORKER, "worker"}};
  auto t = transports::TaskRuntime::create(spec, p->name(), p->runtime(), &p->device(), p->streams(), cluster);
  REQUIRE(t.ok());
  std::optional<Status> started;
  t.value()->transport().start([&](Status st) { started = st; });
  sim->run();
  REQUIRE(started.has_value());
  REQUIRE_FALSE(started->ok());
  CHECK_THAT(started->error().message(), Catch::Matchers::Contains("library_call_seconds"));
}
