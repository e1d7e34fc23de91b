// The CPU of a simulated process (docs/model.md "The CPU of a process"): a stream message's work at each end runs on
// the process's gRPC threads and the machine's cores; the delivery says how long the CPU held it; a parameter server
// whose cores are busy makes the step grow with its workers and shrink with more cores.
#include "core/common/isolated_run.hpp"
#include "core/transports/transport.hpp"
#include "sim/simulation.hpp"
#include "sim/training_job.hpp"
#include "test_cluster.hpp"

#include <catch2/catch.hpp>

#include <cstdio>

using namespace tp;

namespace {

constexpr double RATE = 1e9;          // one gRPC thread's bytes per second (the tcp profile's cap)
constexpr double PER_MESSAGE = 10e-6; // CPU per message at each end
constexpr uint64_t BIG = 100'000'000; // 0.1 s of one thread's work, 8 ms on the 12.5 GB/s wire

models::HostProfile cpu_bound_host(int cores = 4)
{
  auto h = test::test_host();
  h.tcp.rpc_connection_bandwidth = RATE;
  h.tcp.rpc_message_cpu = PER_MESSAGE;
  for (auto& s : h.sockets)
    s.cpu.cores = cores;
  return h;
}

struct Delivery {
  double at = -1;
  double cpu = -1;
};

/// Process "a" on node0 connects to "b" (node1) and "c" (node2), `peers` of them; each peer sends one BIG message
/// back on the connection it accepted. Returns when each arrived at a (time since the peer's send) and its CPU share.
std::vector<Delivery> fan_in(int peers, models::RpcThreading threads, int cores, uint32_t receiver_copies = 1,
                             uint32_t sender_copies = 1)
{
  sim::SimOptions so;
  so.rpc_threads = threads;
  auto s = sim::Simulation::create(test::test_cluster(1 + peers, cpu_bound_host(cores)), so).value();
  auto* a = s->add_process("node0", "a").value();
  std::vector<Delivery> got(static_cast<size_t>(peers));
  std::vector<double> sent(static_cast<size_t>(peers), -1.0);
  std::vector<StreamPtr> keep;
  for (int k = 0; k < peers; ++k) {
    auto* p = s->add_process("node" + std::to_string(k + 1), "p" + std::to_string(k)).value();
    REQUIRE(p->streams()
                .listen(80,
                        [&, p, k](StreamPtr c) {
                          keep.push_back(c);
                          Message m;
                          m.extra_wire_bytes = BIG;
                          m.receiver_copies = receiver_copies;
                          m.sender_copies = sender_copies;
                          sent[size_t(k)] = p->runtime().now();
                          c->send(m);
                        })
                .ok());
    a->streams().connect("p" + std::to_string(k), 80, [&, k](Result<StreamPtr> r) {
      REQUIRE(r.ok());
      keep.push_back(r.value());
      r.value()->set_receive_handler([&, k](Message m) {
        got[size_t(k)] = {a->runtime().now() - sent[size_t(k)], m.cpu_seconds};
      });
    });
  }
  s->run();
  return got;
}

} // namespace

TEST_CASE("cpu: one connection's message costs each end's per-byte work, and says how long the CPU held it", "[quick]")
{
  const auto got = fan_in(1, models::RpcThreading{}, 4);
  REQUIRE(got[0].at > 0);
  // Both ends' threads work on the bytes as they flow: the message takes one thread's time, not two, and far longer
  // than the wire's 8 ms.
  const double work = PER_MESSAGE + double(BIG) / RATE;
  CHECK(got[0].at >= work);
  CHECK(got[0].at < work * 1.05);
  const double wire = double(BIG) / test::test_host().nics[0].nic.wire_goodput();
  CHECK(got[0].cpu == Approx(got[0].at - wire).epsilon(0.03));
}

TEST_CASE("cpu: one client thread (TF 1.3) takes its peers' responses one after the other", "[quick]")
{
  const auto got = fan_in(2, models::tf_rpc_threading("1.3").value(), 4);
  const double work = double(BIG) / RATE;
  const double last = std::max(got[0].at, got[1].at), first = std::min(got[0].at, got[1].at);
  CHECK(first == Approx(work).epsilon(0.05));
  CHECK(last == Approx(2 * work).epsilon(0.05));
  CHECK(std::max(got[0].cpu, got[1].cpu) > 0.9 * work); // the second waited a whole message for the thread
}

TEST_CASE("cpu: eight client threads (TF 1.6) take two peers' responses at once", "[quick]")
{
  const auto got = fan_in(2, models::tf_rpc_threading("1.6").value(), 4);
  const double work = double(BIG) / RATE;
  CHECK(got[0].at == Approx(work).epsilon(0.05));
  CHECK(got[1].at == Approx(work).epsilon(0.05));
}

TEST_CASE("cpu: a message standing for others costs its end's threads each copy (symmetric ranks)", "[quick]")
{
  // Message::receiver_copies / sender_copies: that end works on every copy, each on the thread of a connection of its
  // own, and the message is in (or out) once its own copy's work is done; the other end works once. One thread: the
  // copies one after the other; eight threads on four cores: side by side.
  const double work = double(BIG) / RATE;
  const auto one_thread = models::tf_rpc_threading("1.3").value();
  // One simulation per process: each in a child.
  auto arrival = [](models::RpcThreading threads, uint32_t receiver_copies, uint32_t sender_copies) {
    auto r = run_isolated([&]() -> Result<std::string> {
      return std::to_string(fan_in(1, threads, 4, receiver_copies, sender_copies)[0].at);
    });
    REQUIRE(r.ok());
    return std::stod(r.value());
  };
  CHECK(arrival(one_thread, 3, 1) == Approx(3 * work).epsilon(0.05));
  CHECK(arrival(one_thread, 1, 3) == Approx(3 * work).epsilon(0.05));
  CHECK(arrival(models::tf_rpc_threading("1.6").value(), 3, 1) == Approx(work).epsilon(0.05));
  CHECK(arrival(one_thread, 1, 1) == Approx(work).epsilon(0.05));
}

TEST_CASE("cpu: threads share the machine's cores: eight threads on one core take two responses in twice the time",
          "[quick]")
{
  const auto got = fan_in(2, models::tf_rpc_threading("1.6").value(), 1);
  const double work = double(BIG) / RATE;
  // Both run at once on the one core, at half speed each.
  CHECK(got[0].at == Approx(2 * work).epsilon(0.05));
  CHECK(got[1].at == Approx(2 * work).epsilon(0.05));
}

namespace {

/// A PS-mode step on `workers` one-GPU worker hosts and one PS host of `ps_cores` cores (TF 1.15's threads): every
/// worker pulls 32 MiB of variables and pushes their gradients through the PS's gRPC threads.
sim::TrainingResult ps_step(int workers, int ps_cores, const std::string& transport = "grpc")
{
  transports::register_builtin_transports();
  models::ClusterProfile cl;
  cl.name = "cpu-test";
  cl.groups.push_back({"w", workers, cpu_bound_host(8)});
  cl.groups.push_back({"p", 1, cpu_bound_host(ps_cores)});
  cl.network_switch = {"test-switch", 100e-9, {}};
  training::TrainingModel m;
  m.name = "two-layers";
  m.batch = 16;
  m.layers = {{"l0", 1e-3, 2e-3, {{"l0/w", 16 << 20, true}}}, {"l1", 1e-3, 2e-3, {{"l1/w", 16 << 20, true}}}};
  sim::TrainingJob j;
  j.transport = transport;
  j.layout.workers = workers;
  j.layout.gpus_per_worker = 1;
  j.layout.ps_tasks = 1;
  for (int w = 0; w < workers; ++w)
    j.layout.worker_hosts.push_back(w);
  j.layout.ps_hosts = {workers};
  j.steps = 2;
  auto r = run_isolated([&]() -> Result<std::string> {
    auto res = sim::run_training_job(cl, m, j);
    if (!res.ok()) return res.error();
    double ps_cpu = 0;
    int ps_pollers = -1, worker_pollers = -1;
    for (const auto& c : res->cpu_use)
      if (c.process.find("/job:ps/") != std::string::npos) {
        ps_cpu = c.rpc_cpu_seconds;
        ps_pollers = c.busy_pollers;
      } else if (worker_pollers < 0 || c.busy_pollers != worker_pollers) {
        worker_pollers = worker_pollers < 0 ? c.busy_pollers : -2; // -2: the workers differ
      }
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.17g %.17g %.17g %d %d", res->step_time, res->breakdown.cpu, ps_cpu, ps_pollers,
                  worker_pollers);
    return std::string(buf);
  });
  REQUIRE(r.ok());
  sim::TrainingResult out;
  double ps_cpu = 0;
  int ps_pollers = -1, worker_pollers = -1;
  REQUIRE(std::sscanf(r.value().c_str(), "%lf %lf %lf %d %d", &out.step_time, &out.breakdown.cpu, &ps_cpu, &ps_pollers,
                      &worker_pollers) == 5);
  out.cpu_use.push_back({"ps", "p0", 0, ps_cpu, 0, 0, 0, ps_pollers});
  out.cpu_use.push_back({"worker", "w0", 0, 0, 0, 0, 0, worker_pollers});
  return out;
}

} // namespace

TEST_CASE("cpu: a PS whose cores are busy: the step grows with its workers and shrinks with more cores", "[ps]")
{
  const auto two = ps_step(2, 1), eight = ps_step(8, 1), eight_more_cores = ps_step(8, 8);
  INFO("step: 2 workers / 1 core " << two.step_time << " s, 8 / 1 core " << eight.step_time << " s, 8 / 8 cores "
                                   << eight_more_cores.step_time << " s");
  // The PS's gRPC threads work on every worker's 32 MiB twice (variables out, gradients in): 64 ms of one core per
  // worker. On one core that work is serial: four times the workers, about four times the step.
  const double per_worker = 2 * double(32 << 20) / RATE;
  CHECK(two.cpu_use[0].rpc_cpu_seconds == Approx(2 * per_worker).epsilon(0.02));
  CHECK(eight.cpu_use[0].rpc_cpu_seconds == Approx(8 * per_worker).epsilon(0.02));
  CHECK(eight.step_time > 3 * two.step_time);
  CHECK(eight.step_time >= 8 * per_worker);
  // Eight cores run the eight client and eight server threads side by side.
  CHECK(eight_more_cores.step_time < 0.4 * eight.step_time);
  // The step waited for the PS's threads, and the critical path says so.
  CHECK(eight.breakdown.cpu > 0.5 * eight.step_time);
}

TEST_CASE("cpu: a sum over every core holds them: two at once take twice as long as one", "[quick]")
{
  auto s = sim::Simulation::create(test::test_cluster(1, cpu_bound_host(4))).value();
  auto* p = s->add_process("node0", "ps").value();
  AllocAttr host;
  host.location = Location::host(0);
  const uint64_t n = 64 << 20;
  const Buffer a = p->memory().allocate(n, host).value(), b = p->memory().allocate(n, host).value();
  Work sum = Work::reduce(a, b, n);
  sum.threads = 0; // TF's intra-op pool: every core of the socket
  double alone = -1, t0 = -1;
  std::vector<double> together;
  p->runtime().execute(sum, [&](Status st) {
    REQUIRE(st.ok());
    alone = p->runtime().now();
    t0 = alone;
    for (int k = 0; k < 2; ++k)
      p->runtime().execute(sum, [&](Status st2) {
        REQUIRE(st2.ok());
        together.push_back(p->runtime().now() - t0);
      });
  });
  s->run();
  REQUIRE(alone > 0);
  REQUIRE(together.size() == 2);
  CHECK(together[0] == Approx(2 * alone).epsilon(0.01));
  CHECK(together[1] == Approx(2 * alone).epsilon(0.01));
  // The process's CPU counts the cores it held: three sums, four cores each.
  CHECK(s->cpu_use()[0].work_cpu_seconds == Approx(3 * 4 * alone).epsilon(0.01));
}

namespace {

/// Seconds that `work` takes on process "a" of a one-machine cluster of `cores` cores per socket, with `pollers`
/// busy-polling threads started first; the work runs in two simulation runs, so the pollers must come back in the
/// second (and must not keep either run from ending). In a child process (one simulation per process).
std::vector<double> beside_pollers(Work work, int cores, int pollers)
{
  auto r = run_isolated([&]() -> Result<std::string> {
    auto s = sim::Simulation::create(test::test_cluster(1, cpu_bound_host(cores))).value();
    auto* p = s->add_process("node0", "a").value();
    for (int k = 0; k < pollers; ++k)
      p->runtime().start_busy_poller(0);
    if (work.kind == WorkKind::REDUCE) {
      AllocAttr host;
      host.location = Location::host(0);
      work.src = p->memory().allocate(work.bytes, host).value();
      work.dst = p->memory().allocate(work.bytes, host).value();
    }
    std::vector<double> took;
    for (int run = 0; run < 2; ++run) {
      const double t0 = s->now();
      p->runtime().execute(work, [&](Status st) {
        if (st.ok()) took.push_back(p->runtime().now() - t0);
      });
      s->run();
    }
    if (took.size() != 2) return Error::msg("the work did not finish in each run");
    char buf[128];
    std::snprintf(buf, sizeof buf, "%.17g %.17g %d", took[0], took[1], s->cpu_use()[0].busy_pollers);
    return std::string(buf);
  });
  REQUIRE(r.ok());
  std::vector<double> took(2);
  int counted = -1;
  REQUIRE(std::sscanf(r.value().c_str(), "%lf %lf %d", &took[0], &took[1], &counted) == 3);
  CHECK(counted == pollers);
  return took;
}

} // namespace

TEST_CASE("cpu: a busy-polling thread holds a core: work beside it on a one-core socket takes twice as long", "[quick]")
{
  const Work ten_ms = Work::cpu(0, 10e-3);
  const auto alone = beside_pollers(ten_ms, 1, 0);
  const auto one_core = beside_pollers(ten_ms, 1, 1);
  const auto two_cores = beside_pollers(ten_ms, 2, 1);
  const auto two_pollers_two_cores = beside_pollers(ten_ms, 2, 2);
  INFO("alone " << alone[0] << " s; one core + poller " << one_core[0] << " s; two cores + poller " << two_cores[0]
                << " s; two cores + two pollers " << two_pollers_two_cores[0] << " s");
  for (int run = 0; run < 2; ++run) {
    CHECK(one_core[size_t(run)] == Approx(2 * alone[size_t(run)]).epsilon(0.01));
    CHECK(two_cores[size_t(run)] == Approx(alone[size_t(run)]).epsilon(0.01));
    CHECK(two_pollers_two_cores[size_t(run)] == Approx(1.5 * alone[size_t(run)]).epsilon(0.01));
  }
}

TEST_CASE("cpu: a sum over every core shares them with a busy poller", "[quick]")
{
  Work sum;
  sum.kind = WorkKind::REDUCE;
  sum.bytes = 64 << 20;
  sum.threads = 0; // every core of the socket
  const auto alone = beside_pollers(sum, 4, 0);
  const auto with_poller = beside_pollers(sum, 4, 1);
  INFO("sum alone " << alone[0] << " s, beside a poller " << with_poller[0] << " s");
  // Five threads on four cores: the sum keeps between 3 and 3.2 of its 4 cores (a fair share per thread gives 4/5
  // of each core to each of the five; a fair share per exec gives the poller its one core).
  CHECK(with_poller[0] >= 1.24 * alone[0]);
  CHECK(with_poller[0] <= 1.34 * alone[0]);
  CHECK(with_poller[1] == Approx(with_poller[0]).epsilon(1e-6));
}

TEST_CASE("cpu: the transports whose original busy-polls hold a core in every process of a PS job, the others none",
          "[ps]")
{
  // TF contrib MPI's MPI thread, GDR's server loop and AR-gRPC's poller spin; gRPC's completion-queue threads and
  // verbs' CQ thread block until there is work.
  for (const auto& [transport, pollers] :
       std::vector<std::pair<std::string, int>>{{"grpc", 0}, {"verbs_v2", 0}, {"mpi", 1}, {"gdr", 1}, {"ar_grpc", 1}}) {
    INFO(transport);
    const auto r = ps_step(2, 2, transport);
    CHECK(r.cpu_use[0].busy_pollers == pollers);
    CHECK(r.cpu_use[1].busy_pollers == pollers);
  }
}

TEST_CASE("cpu: the mpi transport carrying a collective library's ring (allreduce mode) starts no MPI thread",
          "[training]")
{
  transports::register_builtin_transports();
  training::TrainingModel m;
  m.name = "one-layer";
  m.batch = 16;
  m.layers = {{"l0", 1e-3, 2e-3, {{"l0/w", 1 << 20, true}}}};
  sim::TrainingJob j;
  j.transport = "mpi";
  j.layout.mode = sim::TrainingLayout::Mode::ALLREDUCE;
  j.layout.workers = 2;
  j.layout.ps_tasks = 0;
  j.layout.ranks_per_host = 1;
  j.steps = 2;
  auto r = run_isolated([&]() -> Result<std::string> {
    auto res = sim::run_training_job(test::test_cluster(2, cpu_bound_host(2)), m, j);
    if (!res.ok()) return res.error();
    int pollers = 0;
    for (const auto& c : res->cpu_use)
      pollers += c.busy_pollers;
    return std::to_string(res->cpu_use.size()) + " " + std::to_string(pollers);
  });
  REQUIRE(r.ok());
  CHECK(r.value() == "2 0");
}
