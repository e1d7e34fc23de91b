// A step that does not finish says why (docs/faults.md, "Stalled or too slow"): a hang (nothing left to happen, or
// only retries at stall_timeout) against slowness (a transfer or computation still in progress at stall_timeout,
// named with the resource that makes it slow). A compute time the simulated clock cannot hold is refused up front.
// Issue 13: a 1 b/s link or a compute of 1e308 ms was reported "protocol stalled".
#include "apps/lib/spec_files.hpp"
#include "core/common/isolated_run.hpp"
#include "core/transports/transport.hpp"
#include "sim/training_job.hpp"
#include "test_cluster.hpp"

#include <catch2/catch.hpp>

#include <cstdio>

using namespace tp;

namespace {

/// Three layers; variables of 4 MiB, 256 KiB and 1 KiB; `forward` seconds per layer (backward twice that).
training::TrainingModel toy(double forward = 1e-3)
{
  training::TrainingModel m;
  m.name = "toy";
  m.batch = 16;
  m.layers = {{"l0", forward, 2 * forward, {{"l0/w", 4 << 20, true}}},
              {"l1", forward, 2 * forward, {{"l1/w", 256 << 10, true}}},
              {"l2", forward, 2 * forward, {{"l2/w", 1024, true}}}};
  return m;
}

sim::TrainingJob job(const std::string& transport, double stall_timeout)
{
  sim::TrainingJob j;
  j.transport = transport;
  j.layout.workers = 2;
  j.layout.gpus_per_worker = 1;
  j.layout.ps_tasks = 1;
  j.layout.ps_hosts = {0};
  j.steps = 3;
  j.stall_timeout = stall_timeout;
  return j;
}

/// Two test hosts whose NICs run at `bytes_per_second`.
models::ClusterProfile slow_cluster(double bytes_per_second)
{
  auto h = test::test_host();
  h.nics[0].nic.line_rate = bytes_per_second;
  return test::test_cluster(2, h);
}

bool has(const std::string& s, const std::string& part)
{
  return s.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("a 1 B/s link is reported as too slow, naming the link and the time it would need, not as stalled", "[stall]")
{
  transports::register_builtin_transports();
  // gRPC over NICs at 8 b/s, stall_timeout 100 s: even the connection set-up's messages are still on the wire.
  auto r = sim::run_training_job(slow_cluster(1.0), toy(), job("grpc", 100));
  REQUIRE_FALSE(r.ok());
  const std::string m = r.error().message();
  INFO(m);
  CHECK(has(m, "training step 1"));
  CHECK(has(m, "too slow, not hung"));
  CHECK_FALSE(has(m, "protocol stalled"));
  CHECK(has(m, "transfer(s)"));
  CHECK(has(m, "nic0")); // the slowest link is the NIC's port
  CHECK(has(m, " b/s needs at least "));
  // "with B bytes left: its slowest link L at R b/s needs at least T s more": R is the NIC's 8 b/s less the packet
  // headers, and T = 8 B / R.
  const auto p = m.find(" bytes left: its slowest link ");
  REQUIRE(p != std::string::npos);
  const auto q = m.rfind(" with ", p), at = m.find(" at ", p + 30);
  double bytes = 0, rate = 0, more = 0;
  REQUIRE(std::sscanf(m.c_str() + q + 6, "%lf", &bytes) == 1);
  REQUIRE(std::sscanf(m.c_str() + at + 4, "%lf b/s needs at least %lf", &rate, &more) == 2);
  CHECK(rate <= 8);
  CHECK(rate > 6);
  CHECK(bytes > 0);
  CHECK(more == Approx(8 * bytes / rate).epsilon(1e-3));
}

TEST_CASE("a link slow under faults: the failure is marked slow, not a hang", "[stall]")
{
  transports::register_builtin_transports();
  auto j = job("grpc", 100);
  sim::Fault late; // never fires: only turns on the fault report (TrainingResult::failure instead of an error)
  late.kind = sim::FaultKind::QP_ERROR;
  late.process = "worker1";
  late.step = 3;
  late.at = 1e6;
  j.faults.faults = {late};
  auto r = sim::run_training_job(slow_cluster(1.0), toy(), j);
  REQUIRE(r.ok());
  REQUIRE(r->failure);
  INFO(r->failure->error);
  CHECK(r->failure->stalled);
  CHECK(r->failure->slow);
  CHECK(r->failure->step == 1);
  CHECK(r->failure->at == Approx(100).margin(1e-6));
  CHECK(has(r->failure->error, "too slow"));
  CHECK(has(r->failure->error, "b/s"));
}

TEST_CASE("a computation longer than stall_timeout is named with its time left", "[stall]")
{
  transports::register_builtin_transports();
  // 50 s forward per layer, stall_timeout 20 s: the first forward is still running at the deadline.
  auto r = sim::run_training_job(test::test_cluster(2), toy(50), job("grpc", 20));
  REQUIRE_FALSE(r.ok());
  const std::string m = r.error().message();
  INFO(m);
  CHECK(has(m, "too slow, not hung"));
  CHECK((has(m, "1 computation(s)") || has(m, "2 computation(s)")));
  CHECK(has(m, "a computation on "));
  const auto p = m.find(" s of work left");
  REQUIRE(p != std::string::npos);
  // 50 s of forward, 20 s done: 30 s left (at full speed: the GPU runs one kernel).
  const auto q = m.rfind(" with ", p);
  double left = 0;
  REQUIRE(std::sscanf(m.c_str() + q + 6, "%lf", &left) == 1);
  CHECK(left == Approx(30).epsilon(1e-3));
}

TEST_CASE("a compute time the simulated clock cannot hold (1e308 ms) is refused up front, naming the layer", "[stall]")
{
  transports::register_builtin_transports();
  auto r = sim::run_training_job(test::test_cluster(2), toy(1e305), job("grpc", 1000));
  REQUIRE_FALSE(r.ok());
  INFO(r.error().message());
  CHECK(has(r.error().field, "layer l0"));
  CHECK(has(r.error().message(), "52 days"));
  CHECK_FALSE(has(r.error().message(), "stalled"));
  // Each layer within the range, but the steps together beyond it: refused too.
  auto total = sim::run_training_job(test::test_cluster(2), toy(sim::MAX_SIMULATED_SECONDS / 4), job("grpc", 1000));
  REQUIRE_FALSE(total.ok());
  CHECK(has(total.error().message(), "s per step"));
}

TEST_CASE("a scenario's compute_ms of 1e308 and a stall_timeout of 1e300 are refused when the file loads", "[stall]")
{
  auto job = [](const std::string& fields) {
    return frontend::parse_job_text(R"({"kind": "training", "hw": "hkust-4node", "model": "synthetic",
                                        "transport": "grpc", "parameters": 1000, "layers": 2, )" +
                                        fields + "}",
                                    "f.json", "job");
  };
  REQUIRE(job(R"("compute_ms": 630)").ok());
  auto compute = job(R"("compute_ms": 1e308)");
  REQUIRE_FALSE(compute.ok());
  CHECK(compute.error().field == "job.compute_ms");
  CHECK(has(compute.error().message(), "got 1e+308"));
  auto timeout = job(R"("compute_ms": 630, "stall_timeout": 1e300)");
  REQUIRE_FALSE(timeout.ok());
  CHECK(timeout.error().field == "job.stall_timeout");
}

TEST_CASE("a stall_timeout beyond the simulated clock's range is refused", "[stall]")
{
  transports::register_builtin_transports();
  auto r = sim::run_training_job(test::test_cluster(2), toy(), job("grpc", 1e300));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().field == "stall_timeout");
}

TEST_CASE("a receiver that never posts again is a livelock at stall_timeout, not slowness", "[stall]")
{
  // RNR NAKs every 0.64 ms for ever (rnr_retry 7): events keep happening, but no transfer or computation is long.
  transports::register_builtin_transports();
  auto j = job("verbs_v2", 2.0);
  sim::Fault f;
  f.kind = sim::FaultKind::NO_RECEIVE;
  f.process = "ps0";
  f.step = 2;
  j.faults.faults = {f};
  auto r = sim::run_training_job(test::test_cluster(2), toy(), j);
  REQUIRE(r.ok());
  REQUIRE(r->failure);
  INFO(r->failure->error);
  CHECK(r->failure->stalled);
  CHECK_FALSE(r->failure->slow);
  CHECK(has(r->failure->error, "livelock or a hang"));
}
