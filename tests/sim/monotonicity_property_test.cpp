// Property: more hardware does not make the simulator slower. Over random valid inputs (a fixed seed, reproducible),
// a faster NIC line rate, more PCIe lanes or more CPU cores must not lengthen a single steady-state transfer or a
// parameter-server step, for every registered transport (issue 13). Where a real mechanism can make more hardware
// slower (docs/model.md, "Monotonicity"), the point is named with that mechanism and a slowdown is reported, not
// failed. One ctest entry per transport and knob; every simulation runs in a forked child (run_isolated: SimGrid
// allows one simulation per process). A failure prints the seed and the point; TP_MONOTONIC_SEED and
// TP_MONOTONIC_POINTS (environment) explore other seeds and more points.
#include "core/common/isolated_run.hpp"
#include "core/transports/transport.hpp"
#include "models/workload/workload.hpp"
#include "sim/training_job.hpp"
#include "sim/transfer_job.hpp"
#include "test_cluster.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>

using namespace tp;

namespace {

enum class Knob { LINE_RATE, PCIE_LANES, CORES };

const char* knob_name(Knob k)
{
  switch (k) {
  case Knob::LINE_RATE:
    return "line rate";
  case Knob::PCIE_LANES:
    return "PCIe lanes";
  case Knob::CORES:
    return "CPU cores";
  }
  return "?";
}

/// The documented mechanisms by which more hardware can make a step slower (docs/model.md, "Monotonicity").
enum class Mechanism {
  NONE,             ///< none applies: the property must hold
  FAIR_SHARING,     ///< concurrent transfers share links and a QP fairly (max-min, round-robin chunks)
  GREEDY_DISPATCH,  ///< ops take a GPU stream or CPU thread in the order they become ready (Graham's anomaly)
  COORDINATOR_TICK, ///< the collective engine's loop sleeps a tick after each cycle (negotiation phase)
  POLLER_SHARE,     ///< a busy-polling thread shares the cores fairly: work that overlaps takes more of them
};

const char* mechanism_name(Mechanism m)
{
  switch (m) {
  case Mechanism::NONE:
    return "none";
  case Mechanism::FAIR_SHARING:
    return "fair sharing of concurrent transfers";
  case Mechanism::GREEDY_DISPATCH:
    return "greedy dispatch of ready ops";
  case Mechanism::COORDINATOR_TICK:
    return "coordinator tick phase";
  case Mechanism::POLLER_SHARE:
    return "a busy poller's fair share of the cores";
  }
  return "?";
}

/// Relative slack for the property: pipelined stages of one transfer that overlap on a shared link move by a few
/// nanoseconds when a latency term shrinks (measured: at most 2e-6 of a step). A modelling error of the kind this
/// test was written for (issue 13: AR-gRPC 40 -> 50 Gb/s, +5.6 %) is orders of magnitude above it.
constexpr double SLACK = 1e-5;

/// One random valid input: the base hardware, the job, and how much more of the knob the faster run gets.
struct Point {
  // Hardware of every host (the test host's round numbers otherwise).
  double line_rate = 12.5e9; ///< B/s
  int nic_lanes = 8;
  int gpu_lanes = 16;
  int cores = 2;
  // The knob's step.
  double rate_factor = 2;     ///< line rate x this
  bool more_nic_lanes = true; ///< PCIe: double the NIC's lanes, the GPUs' lanes, or both
  bool more_gpu_lanes = false;
  int extra_cores = 2;
  // The job.
  enum class Kind { TRANSFER, PS, ALLREDUCE } kind = Kind::PS;
  uint64_t size = 1 << 20; ///< transfer: bytes per tensor
  int tensors = 1;         ///< transfer: concurrent tensors
  bool src_gpu = false, dst_gpu = false;
  training::TrainingModel model;
  int workers = 1, ps = 1;  ///< PS: workers (one GPU each) and parameter servers; allreduce: ranks in `workers`
  bool dedicated_ps = true; ///< PS: parameter servers on hosts of their own (else PS s shares host s mod H)
  int ranks_per_host = 1;   ///< allreduce
  bool coordinator = true;  ///< allreduce: negotiate every tick (TF contrib, Horovod) or not (MaTEx)

  std::string describe() const
  {
    std::ostringstream o;
    o << "hosts: line rate " << line_rate * 8 / 1e9 << " Gb/s, NIC PCIe x" << nic_lanes << ", GPU PCIe x" << gpu_lanes
      << ", " << cores << " cores/socket; more: rate x" << rate_factor << ", lanes x2 on"
      << (more_nic_lanes ? " NIC" : "") << (more_gpu_lanes ? " GPUs" : "") << ", +" << extra_cores << " cores; ";
    if (kind == Kind::TRANSFER) {
      o << "transfer of " << tensors << " x " << size << " B, " << (src_gpu ? "gpu0" : "cpu") << " -> "
        << (dst_gpu ? "gpu0" : "cpu");
      return o.str();
    }
    if (kind == Kind::PS)
      o << "PS step, " << workers << " worker(s), " << ps << " PS "
        << (dedicated_ps ? "on hosts of their own" : "sharing the workers' hosts");
    else
      o << "allreduce step, " << workers << " ranks, " << ranks_per_host << " per host, "
        << (coordinator ? "coordinator" : "no coordinator");
    o << "; layers (forward ms: variable bytes):";
    for (const auto& l : model.layers) {
      o << " [" << l.forward_seconds * 1e3 << ":";
      for (const auto& v : l.variables)
        o << " " << v.bytes;
      o << "]";
    }
    return o.str();
  }
};

/// Whether `transport` busy-polls a core in every process (Runtime::start_busy_poller; mpi not in allreduce mode, whose
/// points are under a mechanism anyway).
bool busy_polls(const std::string& transport)
{
  return transport == "mpi" || transport == "gdr" || transport == "ar_grpc";
}

/// Cores per socket from which a process's busy poller leaves its CPU work a core for each item that can overlap
/// in the covered domain (one process per host; a few tensors' copies and (de)serializations at once).
constexpr int POLLER_FREE_CORES = 4;

/// Which documented mechanism can make `p` slower with more of `knob` (docs/model.md, "Monotonicity").
Mechanism mechanism_for(const Point& p, Knob knob, const std::string& transport)
{
  if (busy_polls(transport) && p.kind != Point::Kind::ALLREDUCE && p.cores < POLLER_FREE_CORES)
    return Mechanism::POLLER_SHARE;
  switch (p.kind) {
  case Point::Kind::TRANSFER:
    return p.tensors == 1 ? Mechanism::NONE : Mechanism::FAIR_SHARING;
  case Point::Kind::PS:
    // One worker and one PS on separate hosts, one variable: its pull and its push run on one route each. Several
    // variables' pulls (and pushes) share their route (found with TP_MONOTONIC_SEED=7: two variables, GPU lanes x2,
    // the gradients' sends overlapped more and the step took 4.6 % longer); more cores, too, let the PS prepare
    // several tensors at once that then share the wire instead of leaving one after another.
    if (p.workers == 1 && p.ps == 1 && p.dedicated_ps && knob != Knob::CORES && p.model.layers.size() == 1 &&
        p.model.layers[0].variables.size() == 1)
      return Mechanism::NONE;
    return Mechanism::FAIR_SHARING;
  case Point::Kind::ALLREDUCE:
    return p.coordinator ? Mechanism::COORDINATOR_TICK : Mechanism::GREEDY_DISPATCH;
  }
  return Mechanism::FAIR_SHARING;
}

uint64_t fnv1a(const std::string& s)
{
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s)
    h = (h ^ c) * 1099511628211ull;
  return h;
}

/// A random valid point; `covered`: one that no documented mechanism covers for `knob` (the property must hold).
Point draw(std::mt19937_64& rng, Knob knob, bool covered, const std::string& transport)
{
  auto uniform = [&](double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); };
  auto pick = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); };
  auto log_uniform = [&](double a, double b) { return std::exp(uniform(std::log(a), std::log(b))); };
  for (;;) {
    Point p;
    p.line_rate = log_uniform(10, 400) * 1e9 / 8;
    p.nic_lanes = pick(0, 1) ? 8 : 4;
    p.gpu_lanes = pick(0, 1) ? 16 : 8;
    p.cores = pick(1, 4);
    p.rate_factor = log_uniform(1.1, 4);
    const int lanes = pick(0, 2);
    p.more_nic_lanes = lanes != 1;
    p.more_gpu_lanes = lanes != 0;
    p.extra_cores = pick(1, 8);
    const int kind = pick(0, 2);
    p.kind = kind == 0 ? Point::Kind::TRANSFER : kind == 1 ? Point::Kind::PS : Point::Kind::ALLREDUCE;
    p.size = uint64_t(log_uniform(64, 16 << 20));
    p.tensors = pick(1, 4);
    p.src_gpu = pick(0, 1);
    p.dst_gpu = pick(0, 1);
    p.model.name = "random";
    p.model.batch = 16;
    const int layers = pick(1, 4);
    for (int l = 0; l < layers; ++l) {
      training::ModelLayer layer;
      layer.name = "l" + std::to_string(l);
      layer.forward_seconds = log_uniform(20e-6, 2e-3);
      layer.backward_seconds = 2 * layer.forward_seconds;
      const int vars = pick(1, 2);
      for (int v = 0; v < vars; ++v)
        layer.variables.push_back(
            {layer.name + "/v" + std::to_string(v), uint64_t(log_uniform(256, 8 << 20)) & ~uint64_t(3)});
      p.model.layers.push_back(layer);
    }
    p.workers = p.kind == Point::Kind::ALLREDUCE ? pick(2, 4) : pick(1, 3);
    p.ps = pick(1, 2);
    p.dedicated_ps = pick(0, 1);
    p.ranks_per_host = pick(1, 2);
    p.coordinator = pick(0, 1);
    if (covered) { // narrow the draw to the covered domain
      if (p.kind == Point::Kind::ALLREDUCE) p.kind = Point::Kind::PS;
      if (knob == Knob::CORES) p.kind = Point::Kind::TRANSFER;
      p.tensors = 1;
      p.workers = p.ps = 1;
      p.dedicated_ps = true;
      p.model.layers.resize(1);
      p.model.layers[0].variables.resize(1);
      if (busy_polls(transport)) p.cores = std::max(p.cores, POLLER_FREE_CORES);
    } else if (mechanism_for(p, knob, transport) == Mechanism::NONE) {
      continue;
    }
    return p;
  }
}

models::HostProfile host_for(const Point& p, Knob knob, bool more)
{
  models::HostProfile h = test::test_host();
  int nic_lanes = p.nic_lanes, gpu_lanes = p.gpu_lanes, cores = p.cores;
  double rate = p.line_rate;
  if (more && knob == Knob::LINE_RATE) rate *= p.rate_factor;
  if (more && knob == Knob::PCIE_LANES) {
    if (p.more_nic_lanes) nic_lanes *= 2;
    if (p.more_gpu_lanes) gpu_lanes *= 2;
  }
  if (more && knob == Knob::CORES) cores += p.extra_cores;
  for (auto& s : h.sockets)
    s.cpu.cores = cores;
  for (auto& g : h.gpus)
    g.pcie.lanes = gpu_lanes;
  for (auto& n : h.nics) {
    n.nic.line_rate = rate;
    n.pcie.lanes = nic_lanes;
  }
  return h;
}

/// The steady-state latency (transfer) or the step time (training) of `p` on hosts built for `knob`, in a child.
Result<double> measure(const std::string& transport, const Point& p, Knob knob, bool more)
{
  auto r = run_isolated(
      [&]() -> Result<std::string> {
        transports::register_builtin_transports();
        const models::HostProfile h = host_for(p, knob, more);
        double t = 0;
        if (p.kind == Point::Kind::TRANSFER) {
          sim::TransferJob j;
          j.transport = transport;
          j.sizes = {p.size};
          j.steps = 2;
          j.tensors_per_step = p.tensors;
          j.src = p.src_gpu ? Location::gpu(0) : Location::host(0);
          j.dst = p.dst_gpu ? Location::gpu(0) : Location::host(0);
          auto res = sim::run_transfer_job(test::test_cluster(2, h), j);
          if (!res.ok()) return res.error();
          t = res->points.at(0).steady_latency;
        } else {
          sim::TrainingJob j;
          j.transport = transport;
          j.steps = 2;
          int hosts = 2;
          if (p.kind == Point::Kind::PS) {
            j.layout.workers = p.workers;
            j.layout.gpus_per_worker = 1;
            j.layout.ps_tasks = p.ps;
            hosts = std::max({2, p.workers, p.ps});
            if (p.dedicated_ps) {
              hosts = p.ps + p.workers;
              for (int s = 0; s < p.ps; ++s)
                j.layout.ps_hosts.push_back(s);
              for (int w = 0; w < p.workers; ++w)
                j.layout.worker_hosts.push_back(p.ps + w);
            }
          } else {
            j.layout.mode = sim::TrainingLayout::Mode::ALLREDUCE;
            j.layout.workers = p.workers;
            j.layout.ps_tasks = 0;
            j.layout.ranks_per_host = p.ranks_per_host;
            j.collective_mode = sim::FabricMode::PROTOCOL; // (the analytical mode's cross-socket hop is issue 13's own)
            j.collectives.coordinator = p.coordinator;
            hosts = std::max(2, (p.workers + p.ranks_per_host - 1) / p.ranks_per_host);
          }
          auto res = sim::run_training_job(test::test_cluster(hosts, h), p.model, j);
          if (!res.ok()) return res.error();
          if (res->failure) return Error::msg("step failed: " + res->failure->error);
          t = res->step_time;
        }
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.17g", t);
        return std::string(buf);
      },
      120);
  if (!r.ok()) return r.error();
  return std::stod(r.value());
}

uint64_t seed_from_env()
{
  if (const char* s = std::getenv("TP_MONOTONIC_SEED")) return std::strtoull(s, nullptr, 10);
  return 20261201;
}

int points_from_env(int dflt)
{
  if (const char* s = std::getenv("TP_MONOTONIC_POINTS")) return std::max(1, std::atoi(s));
  return dflt;
}

void check_monotonic(const std::string& transport, Knob knob)
{
  const uint64_t seed = seed_from_env();
  // Each case draws its own stream, so that a case reproduces alone (ctest -R).
  std::mt19937_64 rng(seed ^ fnv1a(transport + "/" + knob_name(knob)));
  // Mostly points the property covers; a few under a documented mechanism (they must still run).
  const int covered = points_from_env(20);
  const int total = covered + std::max(1, covered / 4);
  for (int i = 0; i < total; ++i) {
    const Point p = draw(rng, knob, i < covered, transport);
    const Mechanism m = mechanism_for(p, knob, transport);
    INFO("transport " << transport << ", more " << knob_name(knob) << ", seed " << seed
                      << " (TP_MONOTONIC_SEED), point " << i << ": " << p.describe());
    auto base = measure(transport, p, knob, false);
    auto more = measure(transport, p, knob, true);
    if (!base.ok() || !more.ok()) {
      FAIL_CHECK("a run failed: " << (base.ok() ? more.error().message() : base.error().message()));
      continue;
    }
    INFO("base " << *base * 1e3 << " ms, with more " << knob_name(knob) << " " << *more * 1e3 << " ms");
    CHECK(std::isfinite(*base));
    CHECK(*base > 0);
    if (m == Mechanism::NONE) {
      CHECK(*more <= *base * (1 + SLACK));
    } else if (*more > *base * (1 + SLACK)) {
      WARN("slower with more " << knob_name(knob) << " by " << (*more / *base - 1) * 100
                               << " %, under the documented mechanism: " << mechanism_name(m));
    }
  }
}

/// The step of AlexNet (K40m compute, batch 32) on two test hosts with `gbps` NICs, each with a worker (2 GPUs) and a
/// PS.
double alexnet_ps_step(double gbps)
{
  auto r = run_isolated([&]() -> Result<std::string> {
    transports::register_builtin_transports();
    auto w = models::WorkloadLibrary().make("alexnet", "k40m", 32);
    if (!w.ok()) return w.error();
    models::HostProfile h = test::test_host();
    h.nics[0].nic.line_rate = gbps * 1e9 / 8;
    sim::TrainingJob j;
    j.transport = "ar_grpc";
    j.steps = 2;
    j.layout.workers = 2; // tf_cnn_benchmarks' parameter-server layout: a PS on every worker's host
    j.layout.gpus_per_worker = 2;
    j.layout.ps_tasks = 2;
    auto res = sim::run_training_job(test::test_cluster(2, h), models::to_training_model(w.value()), j);
    if (!res.ok()) return res.error();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", res->step_time);
    return std::string(buf);
  });
  if (!r.ok()) FAIL(r.error().message());
  return std::stod(r.value());
}

} // namespace

// Issue 13's report: AR-gRPC AlexNet, 40 -> 50 Gb/s and 200 -> 400 Gb/s made the step slower. The cause: the
// simulated NIC streamed the RDMA READ responses of one QP in parallel, so a tensor read in more chunks at once took
// more of the link; AR-gRPC's chunk size grows with the line rate, which reshuffled the shares. Responses of a QP are
// now streamed one after the other, in request order, as RC requires.
TEST_CASE("ar_grpc: a faster NIC does not slow an AlexNet parameter-server step (issue 13)", "[property]")
{
  const double s40 = alexnet_ps_step(40), s50 = alexnet_ps_step(50);
  const double s200 = alexnet_ps_step(200), s400 = alexnet_ps_step(400);
  INFO("step at 40 / 50 / 200 / 400 Gb/s: " << s40 * 1e3 << " / " << s50 * 1e3 << " / " << s200 * 1e3 << " / "
                                            << s400 * 1e3 << " ms");
  CHECK(s50 <= s40 * (1 + SLACK));
  CHECK(s400 <= s200 * (1 + SLACK));
  CHECK(s200 < s40); // (the test host's PCIe Gen3 x16 caps the gain above ~100 Gb/s)
  // Before the fix: 278.2 / 220.0 / 181.2 / 207.9 ms (400 Gb/s 15 % slower than 200 Gb/s).
}

#define MONOTONIC_CASES(NAME)                                                                                          \
  TEST_CASE(NAME ": a faster NIC line rate never slows a transfer or a step", "[property]")                            \
  {                                                                                                                    \
    check_monotonic(NAME, Knob::LINE_RATE);                                                                            \
  }                                                                                                                    \
  TEST_CASE(NAME ": more PCIe lanes never slow a transfer or a step", "[property]")                                    \
  {                                                                                                                    \
    check_monotonic(NAME, Knob::PCIE_LANES);                                                                           \
  }                                                                                                                    \
  TEST_CASE(NAME ": more CPU cores never slow a transfer", "[property]")                                               \
  {                                                                                                                    \
    check_monotonic(NAME, Knob::CORES);                                                                                \
  }

MONOTONIC_CASES("grpc")
MONOTONIC_CASES("verbs_v1")
MONOTONIC_CASES("verbs_v2")
MONOTONIC_CASES("gdr")
MONOTONIC_CASES("mpi")
MONOTONIC_CASES("ar_grpc")
