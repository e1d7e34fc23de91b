// Faults injected into the simulated fabric (docs/faults.md): each fault type on a small training job, with the
// outcome the transport's design implies: RC retransmissions after the ACK time-out and RETRY_EXC_ERR when a link
// stays down, go-back-N on packet loss (same seed, same run), RNR retries, flushed WRs after a QP error, closed
// connections after a process death, a hang (stall report) for gRPC after a power loss, and retry time on the
// critical path.
#include "core/common/isolated_run.hpp"
#include "core/transports/transport.hpp"
#include "models/network_models.hpp"
#include "sim/training_job.hpp"
#include "test_cluster.hpp"

#include <catch2/catch.hpp>

#include <cstdio>

using namespace tp;

namespace {

/// Three layers; variables of 4 MiB, 256 KiB and 1 KiB; 1 ms forward per layer.
training::TrainingModel toy()
{
  training::TrainingModel m;
  m.name = "toy";
  m.batch = 16;
  m.layers = {{"l0", 1e-3, 2e-3, {{"l0/w", 4 << 20, true}}},
              {"l1", 1e-3, 2e-3, {{"l1/w", 256 << 10, true}}},
              {"l2", 1e-3, 2e-3, {{"l2/w", 1024, true}}}};
  return m;
}

/// worker0 and ps0 on node0, worker1 on node1.
sim::TrainingJob job(const std::string& transport, std::vector<sim::Fault> faults, uint64_t seed = 1)
{
  sim::TrainingJob j;
  j.transport = transport;
  j.layout.workers = 2;
  j.layout.gpus_per_worker = 1;
  j.layout.ps_tasks = 1;
  j.layout.ps_hosts = {0};
  j.steps = 3;
  j.faults.faults = std::move(faults);
  j.faults.seed = seed;
  return j;
}

sim::Fault link_down(double at, double duration)
{
  sim::Fault f;
  f.kind = sim::FaultKind::LINK_DOWN;
  f.host = "node1";
  f.step = 2;
  f.at = at;
  f.duration = duration;
  return f;
}

sim::Fault on_process(sim::FaultKind kind, const std::string& process, double at, double duration = 1e300)
{
  sim::Fault f;
  f.kind = kind;
  f.process = process;
  f.step = 2;
  f.at = at;
  f.duration = duration;
  return f;
}

sim::TrainingResult run(const sim::TrainingJob& j)
{
  transports::register_builtin_transports();
  auto r = sim::run_training_job(test::test_cluster(2), toy(), j);
  INFO((r.ok() ? std::string() : r.error().message()));
  REQUIRE(r.ok());
  REQUIRE(r->faults_injected);
  return r.value();
}

double parts(const sim::StepBreakdown& b)
{
  return b.compute + b.copy + b.registration + b.pcie + b.network + b.aggregate_apply + b.waiting + b.retry;
}

double ack_timeout()
{
  return verbs::ack_timeout_seconds(verbs::QpAttr{}.timeout); // the transports' default, 14: 67 ms
}

} // namespace

TEST_CASE("link flap: RC resends after each ACK time-out until the port is back, and the step completes", "[faults]")
{
  const double down = 0.2;
  auto r = run(job("verbs_v2", {link_down(1e-3, down)}));
  REQUIRE_FALSE(r.failure);
  REQUIRE(r.step_seconds.size() == 3);
  const auto& f = r.fault_stats;
  CHECK(f.packets_lost > 0);
  CHECK(f.rc_timeouts >= 2); // 200 ms down, 67 ms per time-out
  CHECK(f.rc_retransmissions >= f.rc_timeouts);
  // Step 2's gradients cross the link after it went down: the step waits for the link, then for the next
  // time-out to expire (at most one more), then does what step 3 does.
  CHECK(r.step_seconds[1] >= 1e-3 + down);
  CHECK(r.step_seconds[1] <= 1e-3 + down + ack_timeout() + r.step_seconds[2]);
  // The breakdown charges the wait to retries (averaged over steps 2 and 3), and still adds up to the step.
  CHECK(r.breakdown.retry >= 0.4 * down / 2);
  CHECK(parts(r.breakdown) == Approx(r.step_time).epsilon(1e-6));
  CHECK_FALSE(f.events.empty());
}

TEST_CASE("link down for good: RC gives up after retry_cnt resends (RETRY_EXC_ERR), the report names step and "
          "transfer",
          "[faults]")
{
  auto r = run(job("verbs_v2", {link_down(1e-3, 1e300)}));
  REQUIRE(r.failure);
  const auto& x = *r.failure;
  CHECK(x.step == 2);
  CHECK_FALSE(x.stalled);
  CHECK(x.error.find("retry counter exceeded") != std::string::npos);
  // retry_cnt 7: the first attempt and 7 resends, each waiting one ACK time-out.
  CHECK(x.at >= 1e-3 + 8 * ack_timeout());
  CHECK(x.at <= 1e-3 + 8 * ack_timeout() + 0.02);
  CHECK_FALSE(x.task.empty());
  INFO("task " << x.task << " error " << x.error);
  CHECK(x.op_kind == training::OpKind::RECV);
  CHECK(x.transfer.find(";") != std::string::npos); // a rendezvous key
  CHECK(x.original == transports::find_transport("verbs_v2")->on_failure);
  CHECK(r.step_seconds.size() == 1); // the warm-up completed, step 2 did not
}

TEST_CASE("link flap under gRPC: the wait for resends is retry, never CPU, where gRPC's CPU costs nothing", "[faults]")
{
  // The test host's tcp profile has no per-byte or per-message CPU: every delay a message meets is the wire's or a
  // resend's, and messages queued behind a resent one on its connection must not count it as CPU.
  auto r = run(job("grpc", {link_down(1e-3, 0.3)}));
  REQUIRE_FALSE(r.failure);
  CHECK(r.breakdown.retry > 0.25); // of the 0.6 s step-2 delay, averaged over the two measured steps
  CHECK(r.breakdown.cpu < 1e-3);
}

TEST_CASE("link flap under gRPC: TCP backs off (RTO 200 ms, then 400 ms) and the step completes", "[faults]")
{
  auto r = run(job("grpc", {link_down(1e-3, 0.3)}));
  REQUIRE_FALSE(r.failure);
  CHECK(r.fault_stats.tcp_retransmissions >= 2);
  // Resends at +0.2 s (still down) and +0.6 s (up): step 2 is about 0.6 s longer than step 3.
  CHECK(r.step_seconds[1] - r.step_seconds[2] >= 0.6 - 0.01);
  CHECK(r.step_seconds[1] - r.step_seconds[2] <= 0.6 + 0.05);
  CHECK(r.breakdown.retry > 0);
}

namespace {
/// Step times and fault counters of a run with packet loss, in a child process (one simulation per process).
std::string lossy_run(uint64_t seed, double p)
{
  auto out = run_isolated([&]() -> Result<std::string> {
    sim::Fault f;
    f.kind = sim::FaultKind::PACKET_LOSS;
    f.host = "node1";
    f.probability = p;
    auto r = sim::run_training_job(test::test_cluster(2), toy(), job("verbs_v2", {f}, seed));
    if (!r.ok()) return r.error();
    std::string s;
    char b[64];
    for (double t : r->step_seconds) {
      std::snprintf(b, sizeof b, "%.17g ", t);
      s += b;
    }
    s += "| " + std::to_string(r->fault_stats.packets_lost) + " " + std::to_string(r->fault_stats.rc_retransmissions) +
         (r->failure ? " failed: " + r->failure->error : "");
    return s;
  });
  REQUIRE(out.ok());
  return out.value();
}
} // namespace

TEST_CASE("packet loss: go-back-N resends, the same seed gives the same run, another seed another", "[faults]")
{
  transports::register_builtin_transports();
  const std::string a = lossy_run(7, 2e-3), b = lossy_run(7, 2e-3), c = lossy_run(8, 2e-3);
  INFO(a << "\n" << c);
  CHECK(a == b);
  CHECK(a != c);
  CHECK(a.find("failed") == std::string::npos);
  // Packets were lost and resent.
  const auto bar = a.find("| ");
  unsigned long lost = 0, resent = 0;
  REQUIRE(std::sscanf(a.c_str() + bar + 2, "%lu %lu", &lost, &resent) == 2);
  CHECK(lost > 0);
  CHECK(resent >= lost / 2);
}

TEST_CASE("packet loss 1: no attempt gets through, RETRY_EXC_ERR", "[faults]")
{
  sim::Fault f;
  f.kind = sim::FaultKind::PACKET_LOSS;
  f.host = "node1";
  f.step = 2;
  f.probability = 1.0;
  auto r = run(job("verbs_v1", {f}));
  REQUIRE(r.failure);
  CHECK(r.failure->step == 2);
  CHECK(r.failure->error.find("retry counter exceeded") != std::string::npos);
}

TEST_CASE("no receive WRs: RNR NAKs hold the sender back until the receiver posts again", "[faults]")
{
  const double gap = 0.03;
  auto r = run(job("verbs_v2", {on_process(sim::FaultKind::NO_RECEIVE, "ps0", 0, gap)}));
  REQUIRE_FALSE(r.failure);
  CHECK(r.fault_stats.rnr_naks > 0);
  CHECK(r.step_seconds[1] >= gap); // the PS cannot take the gradients before it posts receives again
  CHECK(r.breakdown.retry > 0);
  CHECK(parts(r.breakdown) == Approx(r.step_time).epsilon(1e-6));
}

TEST_CASE("no receive WRs for good with rnr_retry 7 (infinite): the step is reported as stalled", "[faults]")
{
  auto j = job("verbs_v2", {on_process(sim::FaultKind::NO_RECEIVE, "ps0", 0)});
  j.stall_timeout = 2.0;
  auto r = run(j);
  REQUIRE(r.failure);
  CHECK(r.failure->stalled);
  CHECK(r.failure->step == 2);
  CHECK(r.failure->at == Approx(2.0).margin(0.01));
  CHECK_FALSE(r.failure->unfinished.empty());
  CHECK(r.fault_stats.rnr_naks > 1000); // 0.64 ms apart for 2 s
}

TEST_CASE("QP forced into error: a fatal CHECK at the flushed WRs (verbs v1), the peer times out (GDR)", "[faults]")
{
  // One simulation per process: each transport in a child.
  auto outcome = [](const char* t) {
    auto out = run_isolated([&]() -> Result<std::string> {
      auto r = run(job(t, {on_process(sim::FaultKind::QP_ERROR, "worker1", 2e-3)}));
      if (!r.failure) return std::string("no failure");
      return std::to_string(r.failure->step) + "|" + std::to_string(r.failure->at) + "|" + r.failure->error + "|" +
             std::to_string(r.fault_stats.qps_failed);
    });
    REQUIRE(out.ok());
    return out.value();
  };
  // verbs v1: worker1's posted receives are flushed; TF CHECK-fails on that completion at once.
  const std::string v1 = outcome("verbs_v1");
  INFO(v1);
  CHECK(v1.rfind("2|", 0) == 0);
  CHECK(v1.find("Flushed") != std::string::npos);
  CHECK(std::stod(v1.substr(2)) >= 2e-3);
  CHECK(std::stod(v1.substr(2)) < 2e-3 + 1e-4);
  CHECK(v1.substr(v1.rfind('|') + 1) != "0");
  // GDR posts no receives on worker1; a QP in the error state answers nothing, so the PS's READ of worker1's
  // gradient times out (retry_cnt + 1 ACK time-outs) and fails with RETRY_EXC_ERR, as on hardware.
  const std::string gdr = outcome("gdr");
  INFO(gdr);
  CHECK(gdr.rfind("2|", 0) == 0);
  CHECK(gdr.find("retry counter exceeded") != std::string::npos);
  CHECK(std::stod(gdr.substr(2)) >= 2e-3 + 8 * ack_timeout());
}

TEST_CASE("process death: the kernel closes its sockets, peers fail at once", "[faults]")
{
  auto r = run(job("grpc", {on_process(sim::FaultKind::PROCESS_DEATH, "ps0", 2e-3)}));
  REQUIRE(r.failure);
  CHECK(r.failure->step == 2);
  CHECK_FALSE(r.failure->stalled);
  CHECK(r.failure->error.find("closed") != std::string::npos);
  CHECK(r.failure->at < 2e-3 + 1e-3);
}

namespace {
sim::Fault power_loss()
{
  sim::Fault f;
  f.kind = sim::FaultKind::HOST_DEATH;
  f.host = "node1";
  f.step = 2;
  f.at = 1e-4; // while ps0 writes worker1's variables (4 MiB) to it
  return f;
}
} // namespace

TEST_CASE("host death: RC peers with work in flight time out (RETRY_EXC_ERR after retry_cnt + 1 time-outs)", "[faults]")
{
  auto r = run(job("verbs_v2", {power_loss()}));
  REQUIRE(r.failure);
  CHECK_FALSE(r.failure->stalled);
  CHECK(r.failure->error.find("retry counter exceeded") != std::string::npos);
  CHECK(r.failure->at >= 1e-4 + 8 * ack_timeout());
  CHECK(r.failure->at <= 1e-4 + 8 * ack_timeout() + 0.01);
}

TEST_CASE("host death: gRPC peers get no FIN and wait for ever, reported as stalled", "[faults]")
{
  auto j = job("grpc", {power_loss()});
  j.stall_timeout = 30;
  auto r = run(j);
  REQUIRE(r.failure);
  CHECK(r.failure->stalled);
  CHECK_FALSE(r.failure->unfinished.empty());
}

TEST_CASE("faults are checked: an unknown host is an error naming the field", "[faults]")
{
  transports::register_builtin_transports();
  sim::Fault f = link_down(0, 1);
  f.host = "node9";
  f.where = "jobs[0].faults[0]";
  auto r = sim::run_training_job(test::test_cluster(2), toy(), job("grpc", {f}));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("jobs[0].faults[0].host") != std::string::npos);
}

TEST_CASE("faults are checked: an unknown process is an error listing the job's processes", "[faults]")
{
  transports::register_builtin_transports();
  auto r = sim::run_training_job(test::test_cluster(2), toy(),
                                 job("grpc", {on_process(sim::FaultKind::QP_ERROR, "ps7", 0)}));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("ps7") != std::string::npos);
  CHECK(r.error().message().find("worker0") != std::string::npos);
}

TEST_CASE("faults are checked: a fault in a step the job never reaches is reported as never fired", "[faults]")
{
  sim::Fault f = link_down(0, 1);
  f.step = 9;
  auto r = run(job("grpc", {f}));
  CHECK_FALSE(r.failure);
  REQUIRE_FALSE(r.fault_stats.events.empty());
  CHECK(r.fault_stats.events.back().find("never fired") != std::string::npos);
}

TEST_CASE("faults are checked: analytical rings bypass the NICs, so faults need protocol collectives", "[faults]")
{
  transports::register_builtin_transports();
  auto j = job("grpc", {link_down(0, 1)});
  j.layout.mode = sim::TrainingLayout::Mode::ALLREDUCE;
  j.layout.ps_tasks = 0;
  j.layout.ps_hosts.clear();
  j.collective_mode = sim::FabricMode::ANALYTICAL;
  auto r = sim::run_training_job(test::test_cluster(2), toy(), j);
  REQUIRE_FALSE(r.ok());
  // The registry's words (models::check_faults_supported), as the scenario parser gives them.
  CHECK(r.error().field == "faults[0].type");
  CHECK(r.error().message().find("\"link_down\" on network model \"analytical\"") != std::string::npos);
  CHECK(r.error().message().find("collective_mode \"protocol\"") != std::string::npos);
}

TEST_CASE("faults are checked: the fault types the network models list are the simulator's, in its order", "[faults]")
{
  const auto& names = models::fault_type_names();
  const sim::FaultKind kinds[] = {sim::FaultKind::LINK_DOWN, sim::FaultKind::PACKET_LOSS,   sim::FaultKind::NO_RECEIVE,
                                  sim::FaultKind::QP_ERROR,  sim::FaultKind::PROCESS_DEATH, sim::FaultKind::HOST_DEATH};
  REQUIRE(names.size() == std::size(kinds));
  for (size_t i = 0; i < names.size(); ++i)
    CHECK(names[i] == sim::to_string(kinds[i]));
}

TEST_CASE("a link flap in a ring allreduce: the job completes and the collective's wait counts as retry", "[faults]")
{
  auto j = job("verbs_v2", {link_down(1e-3, 0.2)});
  j.layout.mode = sim::TrainingLayout::Mode::ALLREDUCE;
  j.layout.ps_tasks = 0;
  j.layout.ps_hosts.clear();
  j.layout.ranks_per_host = 1;
  auto r = run(j);
  REQUIRE_FALSE(r.failure);
  CHECK(r.step_seconds[1] >= 0.2);
  CHECK(r.breakdown.retry > 0);
  CHECK(parts(r.breakdown) == Approx(r.step_time).epsilon(1e-6));
}
