// When a fault acts (docs/faults.md): a fault whose time falls after the job's work has ended changes nothing (the
// step results are byte-identical to the run without it, and the report says it never fired); a fault timed into a
// later step acts on that step; a fault due while a step still waits keeps the step going (it may end a hang).
// Issue 13: a link_down 5 s into a 0.63 s step made the step last 2965 ms; a QP error 5 s into an ended step failed
// it (the fault's timers kept the simulation going, and the step's end was taken after them).
#include "core/common/isolated_run.hpp"
#include "core/transports/transport.hpp"
#include "sim/training_job.hpp"
#include "test_cluster.hpp"

#include <catch2/catch.hpp>

#include <cstdio>

using namespace tp;

namespace {

/// Three layers; variables of 4 MiB, 256 KiB and 1 KiB; 1 ms forward per layer: a step of about 10 ms.
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

/// worker0 and ps0 on node0, worker1 on node1; 3 steps.
sim::TrainingJob job(const std::string& transport, std::vector<sim::Fault> faults)
{
  sim::TrainingJob j;
  j.transport = transport;
  j.layout.workers = 2;
  j.layout.gpus_per_worker = 1;
  j.layout.ps_tasks = 1;
  j.layout.ps_hosts = {0};
  j.steps = 3;
  j.faults.faults = std::move(faults);
  return j;
}

const sim::FaultKind ALL_KINDS[] = {sim::FaultKind::LINK_DOWN,     sim::FaultKind::PACKET_LOSS,
                                    sim::FaultKind::NO_RECEIVE,    sim::FaultKind::QP_ERROR,
                                    sim::FaultKind::PROCESS_DEATH, sim::FaultKind::HOST_DEATH};

/// A fault of `kind` that hits worker1 / node1 as hard as it can (for good, every packet), `at` after `step` starts.
sim::Fault fault(sim::FaultKind kind, int step, double at)
{
  sim::Fault f;
  f.kind = kind;
  f.step = step;
  f.at = at;
  f.host = "node1";
  f.process = "worker1";
  f.probability = 1.0;
  return f;
}

/// Everything a run reports about its steps, printed exactly (%.17g): two runs with the same text gave
/// byte-identical step results.
std::string step_results(const sim::TrainingResult& r)
{
  std::string s;
  char b[64];
  auto put = [&](const char* name, double v) {
    std::snprintf(b, sizeof b, "%s=%.17g ", name, v);
    s += b;
  };
  for (double t : r.step_seconds)
    put("step", t);
  put("mean", r.step_time);
  put("images_per_second", r.images_per_second);
  const auto& x = r.breakdown;
  for (auto [n, v] : {std::pair{"compute", x.compute},
                      {"copy", x.copy},
                      {"registration", x.registration},
                      {"pcie", x.pcie},
                      {"network", x.network},
                      {"aggregate_apply", x.aggregate_apply},
                      {"waiting", x.waiting},
                      {"retry", x.retry},
                      {"gpu_busy", x.gpu_busy}})
    put(n, v);
  put("remote_bytes", double(r.remote_bytes_per_step));
  s += r.failure ? "FAILED: " + r.failure->error : "completed";
  return s;
}

/// What the faults did, for the runs with faults: counters and whether the report says "never fired".
struct Outcome {
  std::string results;
  std::string counters;
  std::string events;
};

Outcome run_in_child(const std::string& transport, std::vector<sim::Fault> faults)
{
  auto out = run_isolated([&]() -> Result<std::string> {
    transports::register_builtin_transports();
    auto r = sim::run_training_job(test::test_cluster(2), toy(), job(transport, faults));
    if (!r.ok()) return r.error();
    const auto& f = r->fault_stats;
    std::string ev;
    for (const auto& e : f.events)
      ev += e + "\n";
    return step_results(r.value()) + "\x1f" + std::to_string(f.packets_lost) + " " +
           std::to_string(f.rc_retransmissions) + " " + std::to_string(f.rnr_naks) + " " +
           std::to_string(f.tcp_retransmissions) + " " + std::to_string(f.qps_failed) + "\x1f" + ev;
  });
  INFO((out.ok() ? std::string() : out.error().message()));
  REQUIRE(out.ok());
  const std::string& s = out.value();
  const auto a = s.find('\x1f'), b = s.find('\x1f', a + 1);
  return {s.substr(0, a), s.substr(a + 1, b - a - 1), s.substr(b + 1)};
}

/// The job's total simulated time without faults (each step about 10 ms): faults are placed well beyond it.
double job_seconds(const std::string& results)
{
  double total = 0, v = 0;
  for (size_t p = results.find("step="); p != std::string::npos; p = results.find("step=", p + 1))
    if (std::sscanf(results.c_str() + p + 5, "%lf", &v) == 1) total += v;
  return total;
}

/// Issue 13's instance for one fault type: a fault 5 s into step 2 of a job that ends long before.
void check_after_the_end(sim::FaultKind kind, const std::string& transport)
{
  const Outcome clean = run_in_child(transport, {});
  REQUIRE(clean.results.find("completed") != std::string::npos);
  REQUIRE(job_seconds(clean.results) < 1.0);
  const Outcome late = run_in_child(transport, {fault(kind, 2, 5.0)});
  INFO(sim::to_string(kind) << " under " << transport << "\nwithout: " << clean.results << "\nwith:    " << late.results
                            << "\n"
                            << late.events);
  CHECK(late.results == clean.results);
  CHECK(late.counters == "0 0 0 0 0");
  CHECK(late.events.find("never fired: " + std::string(sim::to_string(kind))) != std::string::npos);
  CHECK(late.events.find("work had ended") != std::string::npos);
}

} // namespace

TEST_CASE("a link_down due after the job's work has ended changes nothing and never fires", "[faults][timing]")
{
  check_after_the_end(sim::FaultKind::LINK_DOWN, "verbs_v2");
}

TEST_CASE("a packet_loss due after the job's work has ended changes nothing and never fires", "[faults][timing]")
{
  check_after_the_end(sim::FaultKind::PACKET_LOSS, "verbs_v2");
}

TEST_CASE("a no_receive due after the job's work has ended changes nothing and never fires", "[faults][timing]")
{
  check_after_the_end(sim::FaultKind::NO_RECEIVE, "verbs_v2");
}

TEST_CASE("a qp_error due after the job's work has ended changes nothing and never fires", "[faults][timing]")
{
  check_after_the_end(sim::FaultKind::QP_ERROR, "verbs_v2");
}

TEST_CASE("a process_death due after the job's work has ended changes nothing and never fires", "[faults][timing]")
{
  check_after_the_end(sim::FaultKind::PROCESS_DEATH, "grpc");
}

TEST_CASE("a host_death due after the job's work has ended changes nothing and never fires", "[faults][timing]")
{
  check_after_the_end(sim::FaultKind::HOST_DEATH, "grpc");
}

TEST_CASE("class: for every fault type and transport, a fault after the last step's end gives byte-identical step "
          "results",
          "[faults][timing]")
{
  // Every transport (RC and TCP paths, READ and WRITE based, collectives' control RPCs) and every fault type, each
  // at its worst (for good, every packet lost), due 1 ms after the job's last step ended and 1 s into the last step.
  for (const std::string& t : transports::transport_names()) { // every registered transport
    const Outcome clean = run_in_child(t, {});
    REQUIRE(clean.results.find("completed") != std::string::npos);
    const double end = job_seconds(clean.results);
    std::vector<sim::Fault> all;
    for (auto kind : ALL_KINDS) {
      all.push_back(fault(kind, 1, end + 1e-3));
      all.push_back(fault(kind, 3, 1.0));
    }
    const Outcome late = run_in_child(t, all);
    INFO(t << "\nwithout: " << clean.results << "\nwith:    " << late.results << "\n" << late.events);
    CHECK(late.results == clean.results);
    CHECK(late.counters == "0 0 0 0 0");
    size_t never = 0;
    for (size_t p = late.events.find("never fired"); p != std::string::npos; p = late.events.find("never fired", p + 1))
      ++never;
    CHECK(never == all.size());
  }
}

TEST_CASE("a fault timed into a later step acts on that step", "[faults][timing]")
{
  // The time counts from the start of `step`; where it falls in a later step, that step pays (the fabric does not
  // know about steps). A 200 ms link flap that starts 1 ms into step 2, given as step 1 + (step 1's time + 1 ms).
  const Outcome clean = run_in_child("verbs_v2", {});
  double step1 = 0;
  REQUIRE(std::sscanf(clean.results.c_str(), "step=%lf", &step1) == 1);
  sim::Fault f = fault(sim::FaultKind::LINK_DOWN, 1, step1 + 1e-3);
  f.duration = 0.2;
  const Outcome flap = run_in_child("verbs_v2", {f});
  INFO(flap.results << "\n" << flap.events);
  double s1 = 0, s2 = 0;
  REQUIRE(std::sscanf(flap.results.c_str(), "step=%lf step=%lf", &s1, &s2) == 2);
  CHECK(s1 == step1);      // step 1 ended before the fault: untouched
  CHECK(s2 >= 1e-3 + 0.2); // step 2 waited for the port to come back
  CHECK(flap.events.find("never fired") == std::string::npos);
  CHECK(flap.events.find("down until") != std::string::npos);
}

TEST_CASE("a fault due while a step still waits fires: a process death ends a hang", "[faults][timing]")
{
  // node1 loses power 0.1 ms into step 2: GDR's peers get no FIN, have nothing in flight and wait: nothing is left
  // to happen but the fault timer. ps0 is killed 10 s later: the master's RunGraph to it closes, so the step fails
  // then (not stalled at once, nor at stall_timeout), as it would on a real cluster.
  sim::Fault power = fault(sim::FaultKind::HOST_DEATH, 2, 1e-4);
  {
    // Without the second fault the step is a true hang, reported at once.
    auto out = run_isolated([&]() -> Result<std::string> {
      transports::register_builtin_transports();
      auto r = sim::run_training_job(test::test_cluster(2), toy(), job("gdr", {power}));
      if (!r.ok()) return r.error();
      if (!r->failure) return std::string("completed");
      return std::string(r->failure->stalled ? "stalled " : "failed ") + std::to_string(r->failure->at) + " " +
             r->failure->error;
    });
    REQUIRE(out.ok());
    INFO(out.value());
    CHECK(out.value().rfind("stalled 0.0", 0) == 0);
    CHECK(out.value().find("nothing is left to happen") != std::string::npos);
  }
  sim::Fault kill = fault(sim::FaultKind::PROCESS_DEATH, 2, 10.0);
  kill.process = "ps0";
  auto j = job("gdr", {power, kill});
  j.stall_timeout = 30;
  transports::register_builtin_transports();
  auto r = sim::run_training_job(test::test_cluster(2), toy(), j);
  REQUIRE(r.ok());
  REQUIRE(r->failure);
  INFO(r->failure->error);
  CHECK_FALSE(r->failure->stalled);
  CHECK(r->failure->step == 2);
  CHECK(r->failure->at == Approx(10.0).margin(0.01));
  CHECK(r->failure->error.find("ps0") != std::string::npos);
}
