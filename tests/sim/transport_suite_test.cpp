// Correctness of every transport on the simulated backend with materialized bytes: the bytes that arrive are
// the bytes sent, on first use, in steady state, across shape changes, from and to GPUs, for dead tensors,
// for tensors larger than any pre-allocated buffer, for many concurrent tensors and in both directions.
// Each TEST_CASE is one simulation (one process), instantiated per transport by TRANSPORT_SUITE.
#include "transport_fixture.hpp"

using namespace tp;
using rendezvous::RecvOutcome;
using tp::test::PS;
using tp::test::TransportFixture;
using tp::test::WORKER;

namespace {

/// Send `t` from the worker under `edge` in `step` and receive it at the PS; return what arrived.
struct Exchange {
  Result<RecvOutcome> got = Error::msg("not received");
};

std::shared_ptr<Exchange> send_recv(TransportFixture& f, int64_t step, const std::string& edge, const Tensor& t,
                                    Location dst = Location::host(0), const std::string& src_dev = "CPU:0",
                                    const std::string& dst_dev = "CPU:0", bool dead = false)
{
  auto ex = std::make_shared<Exchange>();
  const std::string k = TransportFixture::key(edge, WORKER, src_dev, PS, dst_dev);
  auto parsed = rendezvous::parse_key(k).value();
  REQUIRE(f.worker->rendezvous().send(step, parsed, t, dead).ok());
  rendezvous::RecvArgs args;
  args.dst_location = dst;
  args.alloc_attrs.nic_compatible = true;
  f.ps->rendezvous().recv_async(step, parsed, args, [ex](Result<RecvOutcome> r) { ex->got = std::move(r); });
  return ex;
}

void first_use_and_steady_state(const std::string& transport)
{
  TransportFixture f(transport);
  std::vector<std::pair<Tensor, std::shared_ptr<Exchange>>> runs;
  for (int step = 1; step <= 3; ++step) {
    Tensor t = TransportFixture::make(*f.worker, 100000, Location::host(0), uint32_t(step));
    runs.emplace_back(t, send_recv(f, step, "w/grad", t));
    f.sim->run(); // one step after the other, as training does
  }
  for (auto& [t, ex] : runs) {
    REQUIRE(ex->got.ok());
    CHECK_FALSE(ex->got->is_dead);
    CHECK(TransportFixture::same_bytes(t, ex->got->tensor));
  }
}

void shape_change(const std::string& transport)
{
  TransportFixture f(transport);
  int step = 1;
  for (int64_t n : {1000, 50000, 10, 3000000}) {
    Tensor t = TransportFixture::make(*f.worker, n, Location::host(0), uint32_t(n));
    auto ex = send_recv(f, step++, "var", t);
    f.sim->run();
    REQUIRE(ex->got.ok());
    CHECK(ex->got->tensor.shape == t.shape);
    CHECK(TransportFixture::same_bytes(t, ex->got->tensor));
  }
}

void gpu_source_and_destination(const std::string& transport)
{
  TransportFixture f(transport);
  // GPU0 shares the NIC's socket (GPUDirect-capable), GPU1 does not.
  Tensor a = TransportFixture::make(*f.worker, 300000, Location::gpu(0), 11);
  Tensor b = TransportFixture::make(*f.worker, 200000, Location::gpu(1), 12);
  Tensor c = TransportFixture::make(*f.worker, 100000, Location::host(1), 13);
  auto ea = send_recv(f, 1, "a", a, Location::gpu(1), "GPU:0", "GPU:1");
  auto eb = send_recv(f, 1, "b", b, Location::gpu(0), "GPU:1", "GPU:0");
  auto ec = send_recv(f, 1, "c", c, Location::gpu(0), "CPU:0", "GPU:0");
  f.sim->run();
  for (auto* e : {&ea, &eb, &ec})
    REQUIRE((*e)->got.ok());
  CHECK(ea->got->tensor.location() == Location::gpu(1));
  CHECK(eb->got->tensor.location() == Location::gpu(0));
  CHECK(TransportFixture::same_bytes(a, ea->got->tensor));
  CHECK(TransportFixture::same_bytes(b, eb->got->tensor));
  CHECK(TransportFixture::same_bytes(c, ec->got->tensor));
}

void dead_tensor(const std::string& transport)
{
  TransportFixture f(transport);
  Tensor meta;
  meta.dtype = DataType::FLOAT;
  meta.shape.dims = {16};
  auto ex = send_recv(f, 1, "dead", meta, Location::host(0), "CPU:0", "CPU:0", true);
  f.sim->run();
  REQUIRE(ex->got.ok());
  CHECK(ex->got->is_dead);
}

void larger_than_any_buffer(const std::string& transport)
{
  TransportFixture f(transport);
  Tensor small = TransportFixture::make(*f.worker, 1000, Location::host(0), 1);
  auto e1 = send_recv(f, 1, "grows", small);
  f.sim->run();
  Tensor big = TransportFixture::make(*f.worker, 16 << 20, Location::host(0), 2); // 64 MiB
  auto e2 = send_recv(f, 2, "grows", big);
  f.sim->run();
  REQUIRE(e1->got.ok());
  REQUIRE(e2->got.ok());
  CHECK(TransportFixture::same_bytes(small, e1->got->tensor));
  CHECK(TransportFixture::same_bytes(big, e2->got->tensor));
}

void many_concurrent(const std::string& transport)
{
  TransportFixture f(transport);
  std::vector<std::pair<Tensor, std::shared_ptr<Exchange>>> runs;
  for (int i = 0; i < 40; ++i) {
    Tensor t = TransportFixture::make(*f.worker, 1 + (i * 7919) % 200000, Location::host(0), uint32_t(i));
    runs.emplace_back(t, send_recv(f, 1, "t" + std::to_string(i), t));
  }
  f.sim->run();
  for (auto& [t, ex] : runs) {
    REQUIRE(ex->got.ok());
    CHECK(TransportFixture::same_bytes(t, ex->got->tensor));
  }
}

void both_directions(const std::string& transport)
{
  TransportFixture f(transport);
  Tensor up = TransportFixture::make(*f.worker, 500000, Location::host(0), 5);
  Tensor down = TransportFixture::make(*f.ps, 400000, Location::host(0), 6);
  auto e1 = send_recv(f, 1, "grad", up);
  auto ex = std::make_shared<Exchange>();
  const auto k = rendezvous::parse_key(TransportFixture::key("var", PS, "CPU:0", WORKER, "CPU:0")).value();
  REQUIRE(f.ps->rendezvous().send(1, k, down, false).ok());
  rendezvous::RecvArgs args;
  f.worker->rendezvous().recv_async(1, k, args, [ex](Result<RecvOutcome> r) { ex->got = std::move(r); });
  f.sim->run();
  REQUIRE(e1->got.ok());
  REQUIRE(ex->got.ok());
  CHECK(TransportFixture::same_bytes(up, e1->got->tensor));
  CHECK(TransportFixture::same_bytes(down, ex->got->tensor));
}

void request_before_send(const std::string& transport)
{
  TransportFixture f(transport);
  Tensor t = TransportFixture::make(*f.worker, 4096, Location::host(0), 9);
  const auto k = rendezvous::parse_key(TransportFixture::key("late")).value();
  auto ex = std::make_shared<Exchange>();
  double got_at = -1;
  f.ps->rendezvous().recv_async(1, k, rendezvous::RecvArgs{}, [&, ex](Result<RecvOutcome> r) {
    ex->got = std::move(r);
    got_at = f.pp->runtime().now();
  });
  f.wp->runtime().after(2e-3, [&] { REQUIRE(f.worker->rendezvous().send(1, k, t, false).ok()); });
  f.sim->run();
  REQUIRE(ex->got.ok());
  CHECK(got_at > 2e-3);
  CHECK(TransportFixture::same_bytes(t, ex->got->tensor));
}

void small_and_string_tensors(const std::string& transport)
{
  TransportFixture f(transport);
  Tensor tiny = TransportFixture::make(*f.worker, 8, Location::host(0), 3); // 32 B: inline paths
  auto s = f.worker->make_tensor(DataType::STRING, TensorShape{{4}}, Location::host(0), {}, 5000);
  REQUIRE(s.ok());
  Tensor str = s.value();
  for (uint64_t i = 0; i < 5000; ++i)
    str.buffer()->data[i] = uint8_t(i * 31);
  auto e1 = send_recv(f, 1, "tiny", tiny);
  auto e2 = send_recv(f, 1, "str", str);
  f.sim->run();
  REQUIRE(e1->got.ok());
  REQUIRE(e2->got.ok());
  CHECK(TransportFixture::same_bytes(tiny, e1->got->tensor));
  CHECK(e2->got->tensor.dtype == DataType::STRING);
  CHECK(TransportFixture::same_bytes(str, e2->got->tensor));
}

void restarted_worker_is_aborted(const std::string& transport)
{
  TransportFixture f(transport);
  // The consumer asks with an incarnation the producer does not have (the worker was restarted).
  const auto k = rendezvous::parse_key(TransportFixture::key("x", WORKER, "CPU:0", PS, "CPU:0", 77)).value();
  std::string code;
  f.ps->rendezvous().recv_async(1, k, rendezvous::RecvArgs{},
                                [&](Result<RecvOutcome> r) { code = r.ok() ? "ok" : r.error().code; });
  f.sim->run();
  CHECK(code == "Aborted");
}

} // namespace

#define TRANSPORT_SUITE(NAME)                                                                                          \
  TEST_CASE(NAME ": first use then steady state", "[quick][transport]")                                                \
  {                                                                                                                    \
    first_use_and_steady_state(NAME);                                                                                  \
  }                                                                                                                    \
  TEST_CASE(NAME ": shape changes between steps", "[quick][transport]")                                                \
  {                                                                                                                    \
    shape_change(NAME);                                                                                                \
  }                                                                                                                    \
  TEST_CASE(NAME ": GPU sources and destinations", "[quick][transport]")                                               \
  {                                                                                                                    \
    gpu_source_and_destination(NAME);                                                                                  \
  }                                                                                                                    \
  TEST_CASE(NAME ": dead tensor", "[quick][transport]")                                                                \
  {                                                                                                                    \
    dead_tensor(NAME);                                                                                                 \
  }                                                                                                                    \
  TEST_CASE(NAME ": tensor larger than any earlier buffer", "[quick][transport]")                                      \
  {                                                                                                                    \
    larger_than_any_buffer(NAME);                                                                                      \
  }                                                                                                                    \
  TEST_CASE(NAME ": many concurrent tensors", "[quick][transport]")                                                    \
  {                                                                                                                    \
    many_concurrent(NAME);                                                                                             \
  }                                                                                                                    \
  TEST_CASE(NAME ": both directions at once", "[quick][transport]")                                                    \
  {                                                                                                                    \
    both_directions(NAME);                                                                                             \
  }                                                                                                                    \
  TEST_CASE(NAME ": the request arrives before the Send", "[quick][transport]")                                        \
  {                                                                                                                    \
    request_before_send(NAME);                                                                                         \
  }                                                                                                                    \
  TEST_CASE(NAME ": small and string tensors", "[quick][transport]")                                                   \
  {                                                                                                                    \
    small_and_string_tensors(NAME);                                                                                    \
  }                                                                                                                    \
  TEST_CASE(NAME ": a restarted producer is Aborted", "[quick][transport]")                                            \
  {                                                                                                                    \
    restarted_worker_is_aborted(NAME);                                                                                 \
  }

TRANSPORT_SUITE("grpc")
TRANSPORT_SUITE("verbs_v1")
TRANSPORT_SUITE("verbs_v2")
TRANSPORT_SUITE("gdr")
TRANSPORT_SUITE("mpi")
TRANSPORT_SUITE("ar_grpc")

namespace {
void abort_reaches_remote_receive(const std::string& transport)
{
  TransportFixture f(transport);
  const auto k = rendezvous::parse_key(TransportFixture::key("never")).value();
  std::string code;
  double at = -1;
  f.ps->rendezvous().recv_async(1, k, rendezvous::RecvArgs{}, [&](Result<RecvOutcome> r) {
    code = r.ok() ? "ok" : r.error().code;
    at = f.pp->runtime().now();
  });
  // The producer never sends; the consumer's step is aborted after 1 ms.
  f.pp->runtime().after(1e-3,
                        [&] { f.ps->rendezvous().abort_step(1, Error::status("Aborted", "step failed elsewhere")); });
  f.wp->runtime().after(2e-3, [&] { f.worker->rendezvous().cleanup(1); }); // the producer's side goes away too
  f.sim->run();
  CHECK(code == "Aborted");
  CHECK(at == Approx(1e-3).epsilon(0.01));
}
} // namespace

TEST_CASE("grpc: aborting a step fails its pending remote receive", "[quick][transport]")
{
  abort_reaches_remote_receive("grpc");
}
TEST_CASE("verbs_v2: aborting a step fails its pending remote receive", "[quick][transport]")
{
  abort_reaches_remote_receive("verbs_v2");
}
TEST_CASE("ar_grpc: aborting a step fails its pending remote receive", "[quick][transport]")
{
  abort_reaches_remote_receive("ar_grpc");
}
