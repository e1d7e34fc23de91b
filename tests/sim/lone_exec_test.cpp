// Lone execs (sim/reactor.cpp): one-thread work on a host with a core for it runs as a timer instead of a SimGrid exec,
// and becomes one, with the flops it has left, when work arrives that leaves the host more threads than cores. The same
// completion times as with every exec in SimGrid, for the reactor's own cases and for whole training jobs.
#include "core/common/isolated_run.hpp"
#include "core/transports/mpi/mpi.hpp"
#include "core/transports/transport.hpp"
#include "sim/platform.hpp"
#include "sim/reactor.hpp"
#include "sim/simulation.hpp"
#include "sim/training_job.hpp"
#include "small_models.hpp"
#include "test_cluster.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Host.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

using namespace tp;

namespace {

/// `body` run by a reactor inside a SimGrid actor of a fresh two-machine simulation (in a child: one simulation per
/// process), lone execs as timers or not; what it writes to its stream (17 digits) is returned.
std::string in_reactor(bool lone,
                       const std::function<void(sim::Reactor&, const sim::Platform&, std::ostringstream&)>& body)
{
  auto r = run_isolated([&]() -> Result<std::string> {
    auto sim = sim::Simulation::create(test::test_cluster(2)).value();
    std::ostringstream o;
    o.precision(17);
    simgrid::s4u::Actor::create("test", sim->platform().cpu_host(0, 0), [&] {
      sim::Reactor r;
      r.set_lone_execs_as_timers(lone);
      body(r, sim->platform(), o);
    });
    sim->run();
    return o.str();
  });
  REQUIRE(r.ok());
  return r.value();
}

/// in_reactor, then the line completions() reads at the end: the count of lone execs and the activities completed.
std::string
counted_in_reactor(bool lone, const std::function<void(sim::Reactor&, const sim::Platform&, std::ostringstream&)>& body)
{
  return in_reactor(lone, [&body](sim::Reactor& r, const sim::Platform& pf, std::ostringstream& o) {
    body(r, pf, o);
    o << "lone " << r.lone_execs() << " completed " << r.activities_completed() << '\n';
  });
}

/// Execs on machine 0's first GPU (one core, so that two execs share it) and a comm beside them; "<name> <time>" per
/// completion in order, then the count of lone execs and the activities completed. `lone`: lone execs as timers.
std::string gpu_work(bool lone)
{
  return counted_in_reactor(lone, [](sim::Reactor& r, const sim::Platform& pf, std::ostringstream& o) {
    auto* gpu = pf.gpu_host(0, 0);
    auto* other_gpu = pf.gpu_host(0, 1);
    auto* a = pf.nic_endpoint(0, 0, Location::host(0), false);
    auto* b = pf.nic_endpoint(1, 0, Location::host(0), true);
    const double speed = gpu->get_speed();
    auto log = [&](const char* name) { return [&o, &r, name] { o << name << ' ' << r.now() << '\n'; }; };
    r.start_exec(gpu, 3e-3 * speed, 1, log("first"));       // alone: 3 ms
    r.start_exec(other_gpu, 2e-3 * speed, 1, log("other")); // alone on its own GPU
    r.start_comm(a, b, 1 << 20, log("comm"));
    r.after(1e-3, [&, speed] { // shares the GPU with the first from 1 ms
      r.start_exec(gpu, 1e-3 * speed, 1, log("second"));
    });
    r.after(10e-3, [&, speed] { // alone again, then cancelled
      const uint64_t id = r.start_exec(gpu, 5e-3 * speed, 1, log("cancelled"));
      r.after(1e-3, [&r, id] { CHECK(r.cancel_activity(id)); });
      r.start_exec(other_gpu, 0.5e-3 * speed, 1, log("last"));
    });
    r.run();
  });
}

struct Completion {
  std::string name;
  double t = 0;
};
std::vector<Completion> completions(const std::string& text, uint64_t& lone, uint64_t& completed)
{
  std::vector<Completion> out;
  std::istringstream in(text);
  for (std::string name; in >> name;) {
    if (name == "lone") {
      std::string word;
      in >> lone >> word >> completed;
      break;
    }
    Completion c{name};
    in >> c.t;
    out.push_back(c);
  }
  return out;
}

/// The completions of a run with lone execs as timers (`on_text`) against every exec in SimGrid: the same names in the
/// same order at the same times; returns SimGrid's, and the lone execs counted into `lone_on`.
std::vector<Completion> check_same(const std::string& on_text, const std::string& off_text, uint64_t& lone_on)
{
  uint64_t lone_off = 0, done_on = 0, done_off = 0;
  const auto on = completions(on_text, lone_on, done_on);
  const auto off = completions(off_text, lone_off, done_off);
  REQUIRE(on.size() == off.size());
  for (size_t i = 0; i < on.size(); ++i) {
    INFO(on[i].name << " at " << on[i].t << " s as a timer, " << off[i].name << " at " << off[i].t << " s in SimGrid");
    CHECK(on[i].name == off[i].name);
    CHECK(std::abs(on[i].t - off[i].t) <= 1e-12 * std::max(1.0, off[i].t));
  }
  CHECK(lone_off == 0);
  CHECK(done_on == done_off);
  return off;
}

} // namespace

TEST_CASE("lone execs: alone a timer, sharing a SimGrid exec of the work left, the times as in SimGrid",
          "[reactor][lone]")
{
  uint64_t lone_on = 0;
  const auto off = check_same(gpu_work(true), gpu_work(false), lone_on);
  REQUIRE(off.size() == 5); // first, other, comm, second, last: the cancelled one never calls back
  // The first and the second share one core from 1 ms: 2 ms of the first left, 1 ms of the second, at half speed
  // each: the second ends at 3 ms, the first at 4 ms.
  for (const auto& c : off) {
    if (c.name == "second") CHECK(c.t == Approx(3e-3));
    if (c.name == "first") CHECK(c.t == Approx(4e-3));
  }
  CHECK(lone_on == 4); // first, other, cancelled, last; the second arrived on a busy GPU
}

namespace {

/// On machine 0's CPU host (4 cores): one-thread execs while the threads do not outnumber the cores, then a two-thread
/// exec that makes them outnumber them, then four at once and a fifth; "<name> <time>" per completion in order, then
/// the count of lone execs and the activities completed.
std::string cpu_work(bool lone)
{
  return counted_in_reactor(lone, [](sim::Reactor& r, const sim::Platform& pf, std::ostringstream& o) {
    auto* cpu = pf.cpu_host(0, 0);
    REQUIRE(cpu->get_core_count() == 4);
    const double speed = cpu->get_speed();
    auto log = [&](const char* name) { return [&o, &r, name] { o << name << ' ' << r.now() << '\n'; }; };
    r.start_exec(cpu, 3e-3 * speed, 1, log("a")); // three threads on four cores: each at one core's speed
    r.start_exec(cpu, 2e-3 * speed, 1, log("b"));
    r.start_exec(cpu, 1e-3 * speed, 1, log("c"));
    r.after(0.5e-3, [&, speed] { r.start_exec(cpu, 1e-3 * speed, 2, log("d")); }); // five threads: all shared
    r.run();
    const double t = r.now();
    for (const char* name : {"f", "g", "h", "i"}) // four on four cores
      r.start_exec(cpu, 2e-3 * speed, 1, log(name));
    r.at(t + 1e-3, [&, speed] { r.start_exec(cpu, 1e-3 * speed, 1, log("j")); }); // the fifth
    r.run();
  });
}

} // namespace

TEST_CASE("lone execs: on a host of several cores, timers while the threads do not outnumber the cores",
          "[reactor][lone]")
{
  uint64_t lone_on = 0;
  const auto off = check_same(cpu_work(true), cpu_work(false), lone_on);
  REQUIRE(off.size() == 9);
  // Before d, each of a, b, c ran at one core's speed: c (1 ms) ends at 1 ms only if d left it a core, which five
  // threads on four cores do not: it ends later.
  for (const auto& c : off)
    if (c.name == "c") CHECK(c.t > 1e-3);
  CHECK(lone_on == 7); // a, b, c, f, g, h, i; d has two threads, j came fifth
}

namespace {

/// On machine 0's CPU host (4 cores), the thread counting in three phases: a three-thread exec and a one-thread one
/// beside it (a timer), then a fifth thread; two spinners and two lone execs, then a fifth thread; four lone execs,
/// then a spinner. Completions as in cpu_work, spinners removed at the end of each phase.
std::string counted_threads(bool lone)
{
  return counted_in_reactor(lone, [](sim::Reactor& r, const sim::Platform& pf, std::ostringstream& o) {
    auto* cpu = pf.cpu_host(0, 0);
    const double speed = cpu->get_speed();
    auto log = [&](const char* name) { return [&o, &r, name] { o << name << ' ' << r.now() << '\n'; }; };
    r.start_exec(cpu, 2e-3 * speed, 3, log("x3"));
    r.after(0.5e-3, [&, speed] { r.start_exec(cpu, 2e-3 * speed, 1, log("y")); });
    r.after(1e-3, [&, speed] { r.start_exec(cpu, 1e-3 * speed, 1, log("z")); });
    r.run();
    double t = r.now();
    uint64_t s1 = 0, s2 = 0;
    r.at(t, [&] {
      s1 = r.add_spinner(cpu);
      s2 = r.add_spinner(cpu);
      r.start_exec(cpu, 2e-3 * speed, 1, log("p"));
      r.start_exec(cpu, 3e-3 * speed, 1, log("q"));
    });
    r.at(t + 1e-3, [&, speed] { r.start_exec(cpu, 1e-3 * speed, 1, log("fifth")); });
    r.at(t + 5e-3, [&] {
      r.remove_spinner(s1);
      r.remove_spinner(s2);
    });
    r.run();
    t = r.now();
    for (const char* name : {"k", "l", "m", "n"})
      r.start_exec(cpu, 2e-3 * speed, 1, log(name));
    uint64_t s3 = 0;
    r.at(t + 0.5e-3, [&] { s3 = r.add_spinner(cpu); });
    r.at(t + 4e-3, [&] { r.remove_spinner(s3); });
    r.run();
  });
}

/// A seeded mix on machine 0's CPU host (4 cores) and first GPU (one core): execs of one to four threads at times on a
/// 0.5 ms grid (so that ends and arrivals meet), spinners added and removed while the loop runs, execs cancelled.
std::string random_work(bool lone, unsigned seed)
{
  return counted_in_reactor(lone, [seed](sim::Reactor& r, const sim::Platform& pf, std::ostringstream& o) {
    auto* cpu = pf.cpu_host(0, 0);
    auto* gpu = pf.gpu_host(0, 0);
    uint64_t state = 0x9E3779B97F4A7C15ull * (seed + 1);
    auto draw = [&state](uint64_t n) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return (state >> 33) % n;
    };
    std::vector<std::string> names;
    for (int k = 0; k < 14; ++k)
      names.push_back("e" + std::to_string(k));
    for (int k = 0; k < 14; ++k) {
      const double at = 0.5e-3 * double(draw(8));
      const uint64_t kind = draw(10);
      auto* host = draw(4) == 0 ? gpu : cpu;
      const int threads = host == gpu ? 1 : (draw(2) ? 1 : 1 + int(draw(4)));
      const double seconds = 0.5e-3 * double(1 + draw(6));
      const std::string* name = &names[size_t(k)];
      r.at(at, [&r, &o, host, kind, threads, seconds, name] {
        auto log = [&o, &r, name] { o << *name << ' ' << r.now() << '\n'; };
        if (kind == 0) { // a spinner for a while
          const uint64_t id = r.add_spinner(host);
          r.after(seconds, [&r, id] { r.remove_spinner(id); });
        } else if (kind == 1) { // cancelled half-way
          const uint64_t id = r.start_exec(host, seconds * host->get_speed(), threads, log);
          r.after(seconds / 2, [&r, id] { r.cancel_activity(id); });
        } else {
          r.start_exec(host, seconds * host->get_speed(), threads, log);
        }
      });
    }
    r.run();
  });
}

} // namespace

TEST_CASE("lone execs: threads counted by SimGrid execs' thread counts and spinners, as SimGrid shares the cores",
          "[reactor][lone]")
{
  uint64_t lone = 0;
  check_same(counted_threads(true), counted_threads(false), lone);
  CHECK(lone == 7); // y; p and q beside two spinners; k, l, m, n until the spinner
}

TEST_CASE("lone execs: random mixes of threads, spinners and cancels end as with every exec in SimGrid",
          "[reactor][lone]")
{
  uint64_t lone_total = 0;
  for (unsigned seed = 0; seed < 40; ++seed) {
    INFO("seed " << seed);
    uint64_t lone = 0;
    check_same(random_work(true, seed), random_work(false, seed), lone);
    lone_total += lone;
  }
  CHECK(lone_total > 40); // the mixes do run execs as timers
}

namespace {

/// The job's step time and images/s, every exec in SimGrid or not (in a child: one simulation per process).
std::string job_row(const models::ClusterProfile& cl, const sim::TrainingJob& j, bool execs_in_simgrid)
{
  auto r = run_isolated([&]() -> Result<std::string> {
    if (execs_in_simgrid) setenv("TENSORPATH_EXECS_IN_SIMGRID", "1", 1); // this child only
    transports::register_builtin_transports();
    auto res = sim::run_training_job(cl, test::conv_fc_model(4 << 20, true), j);
    if (!res.ok()) return res.error();
    char buf[100];
    std::snprintf(buf, sizeof buf, "%.17g %.17g", res->step_time, res->images_per_second);
    return std::string(buf);
  });
  REQUIRE(r.ok());
  return r.value();
}

} // namespace

TEST_CASE("lone execs: training jobs take the same step with every exec in SimGrid", "[training][lone]")
{
  // Protocol rings on GPUs (each rank's adds share its GPU with the backward kernels), and parameter servers over
  // gRPC (the PS's sums and the gRPC threads on the CPUs beside the workers' kernels).
  sim::TrainingJob ring;
  ring.transport = "mpi";
  ring.options.own<transports::MpiOptions>().optimal_path = true;
  ring.layout.mode = sim::TrainingLayout::Mode::ALLREDUCE;
  ring.layout.workers = 4;
  ring.layout.ps_tasks = 0;
  ring.steps = 2;
  sim::TrainingJob ps;
  ps.transport = "grpc";
  ps.layout.mode = sim::TrainingLayout::Mode::PARAMETER_SERVER;
  ps.layout.workers = 2;
  ps.layout.ps_tasks = 1;
  ps.steps = 2;
  for (const auto* j : {&ring, &ps}) {
    const auto cl = test::test_cluster(4);
    double step_on = 0, images_on = 0, step_off = 0, images_off = 0;
    const std::string on = job_row(cl, *j, false), off = job_row(cl, *j, true);
    INFO(j->transport << ": lone execs as timers " << on << ", every exec in SimGrid " << off);
    REQUIRE(std::sscanf(on.c_str(), "%lf %lf", &step_on, &images_on) == 2);
    REQUIRE(std::sscanf(off.c_str(), "%lf %lf", &step_off, &images_off) == 2);
    REQUIRE(step_off > 0);
    CHECK(std::abs(step_on / step_off - 1) <= 1e-9);
    CHECK(std::abs(images_on / images_off - 1) <= 1e-9);
  }
}

namespace {

/// On machine 0's first GPU: an exec of 1 ms started at 0 and a timer at 1 ms created after it; then an exec of 3 ms
/// and another arriving at 2 ms, stopped by a deadline at 3 ms. "<order> <started of each exec in flight>".
std::string order_and_snapshot(bool lone)
{
  return in_reactor(lone, [](sim::Reactor& r, const sim::Platform& pf, std::ostringstream& o) {
    auto* gpu = pf.gpu_host(0, 0);
    const double speed = gpu->get_speed();
    r.start_exec(gpu, 1e-3 * speed, 1, [&] { o << "exec "; });
    r.at(1e-3, [&] { o << "timer "; });
    r.run();
    r.start_exec(gpu, 3e-3 * speed, 1, [&] { o << "never "; });
    r.after(1e-3, [&r, gpu, speed] { r.start_exec(gpu, 1e-3 * speed, 1, [] {}); });
    r.set_deadline(3e-3);
    r.run();
    o << (r.deadline_hit() ? "deadline" : "no deadline");
    std::vector<double> started;
    for (const auto& a : r.at_deadline().activities)
      started.push_back(a.started);
    std::sort(started.begin(), started.end());
    for (double t : started)
      o << ' ' << t;
  });
}

} // namespace

TEST_CASE("lone execs: an end at a timer's instant comes after it, and a deadline reports when the work began",
          "[reactor][lone]")
{
  // As in SimGrid: the timers due at an instant run before the completions of that instant. The exec made a SimGrid
  // exec at 2 ms began at 1 ms (the second run's start), not when it was made one.
  const std::string off = order_and_snapshot(false);
  CHECK(off == "timer exec deadline 0.001 0.002");
  CHECK(order_and_snapshot(true) == off);
}
