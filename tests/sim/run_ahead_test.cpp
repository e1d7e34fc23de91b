// Running ahead of SimGrid's clock (sim/reactor.cpp, Reactor::set_run_ahead): timers due before anything SimGrid holds
// can end run on the reactor's own clock, without a round of SimGrid's engine. Every callback must see the times and
// the order it sees with a round per timer; SimGrid must catch up before anything starts in it, at a deadline and at
// the end.
#include "core/transports/transport.hpp"
#include "number_in_child.hpp"
#include "sim/platform.hpp"
#include "sim/reactor.hpp"
#include "sim/simulation.hpp"
#include "sim/training_job.hpp"
#include "small_job.hpp"
#include "small_models.hpp"
#include "test_cluster.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

using namespace tp;

namespace {

using Host = simgrid::s4u::Host;

/// `body` run by a reactor inside a SimGrid actor of a fresh two-machine simulation, in a child (one simulation per
/// process), running ahead or not, with a comm's end points: machine 0's first NIC reading host memory (`a`) and
/// machine 1's writing it (`b`). Returns what body pushed, then SimGrid's clock after run() minus the reactor's, the
/// timers run ahead and the rounds of SimGrid's engine waited for.
std::vector<double>
in_reactor(bool run_ahead,
           const std::function<void(sim::Reactor&, const sim::Platform&, Host* a, Host* b, std::vector<double>&)>& body)
{
  return test::numbers_in_child([&]() -> Result<std::vector<double>> {
    auto sim = sim::Simulation::create(test::test_cluster(2)).value();
    std::vector<double> out;
    simgrid::s4u::Actor::create("test", sim->platform().cpu_host(0, 0), [&] {
      sim::Reactor r;
      r.set_run_ahead(run_ahead);
      const sim::Platform& pf = sim->platform();
      body(r, pf, pf.nic_endpoint(0, 0, Location::host(0), false), pf.nic_endpoint(1, 0, Location::host(0), true), out);
      out.push_back(simgrid::s4u::Engine::get_clock() - r.now());
      out.push_back(double(r.timers_run_ahead()));
      out.push_back(double(r.simgrid_rounds()));
    });
    sim->run();
    return out;
  });
}

/// A 1 MiB comm from `a` to `b` with nothing else in flight, run to its end: how long it took.
double time_alone(sim::Reactor& r, Host* a, Host* b)
{
  const double start = r.now();
  double end = 0;
  r.start_comm(a, b, 1 << 20, [&] { end = r.now(); });
  r.run();
  return end - start;
}

/// The numbers two runs pushed, the last three (clock difference, timers run ahead, rounds) left out, side by side.
void check_same_times(const std::vector<double>& ahead, const std::vector<double>& rounds)
{
  REQUIRE(ahead.size() == rounds.size());
  REQUIRE(ahead.size() >= 3);
  for (size_t i = 0; i + 3 < ahead.size(); ++i) {
    INFO("value " << i << ": " << ahead[i] << " running ahead, " << rounds[i] << " with a round per timer");
    CHECK(std::abs(ahead[i] - rounds[i]) <= 1e-12 * std::max(1.0, std::abs(rounds[i])));
  }
}

} // namespace

TEST_CASE("run ahead: timers, short and SimGrid comms, lone and shared execs end at the times a round per timer gives",
          "[reactor][run-ahead]")
{
  // A chain of latencies (timers), each starting the next piece of work as a protocol would: a short comm, a SimGrid
  // comm started while the reactor is ahead (SimGrid catches up first), an exec alone on its host that a second exec
  // turns into a SimGrid one, and timers that fall before and after a SimGrid comm's end. Each callback pushes the time
  // and a tag, so that both the times and the order are compared.
  auto run = [](bool run_ahead) {
    return in_reactor(
        run_ahead, [](sim::Reactor& r, const sim::Platform& pf, Host* a, Host* b, std::vector<double>& out) {
          auto* cpu = pf.cpu_host(1, 0);
          auto note = [&](double tag) {
            out.push_back(tag);
            out.push_back(r.now());
          };
          r.after(1e-6, [&] {
            note(1);
            r.start_comm(a, b, 200, [&] { note(2); }); // short
            r.after(0.5e-6, [&] {
              note(3);
              r.start_comm(a, b, 1 << 20, [&] { note(4); }); // SimGrid comm, started ahead of SimGrid's clock
              for (int i = 1; i <= 40; ++i)
                r.after(i * 3e-6, [&, i] { note(100 + i); }); // some before, some after the comm's end
            });
          });
          r.after(2e-6, [&] {
            note(5);
            r.start_exec(cpu, 1e6, 1, [&] { note(6); }); // alone on its host: a timer
            r.after(1e-6, [&] {
              note(7);
              r.start_exec(cpu, 2e6, 1, [&] { note(8); }); // the first becomes a SimGrid exec of what it has left
            });
          });
          r.run();
          note(9);
        });
  };
  const auto ahead = run(true), rounds = run(false);
  check_same_times(ahead, rounds);
  REQUIRE(ahead.size() >= 3);
  const size_t n = ahead.size();
  CHECK(ahead[n - 3] == 0); // SimGrid's clock caught up when run() returned
  CHECK(rounds[n - 3] == 0);
  CHECK(ahead[n - 2] > 10); // timers run ahead
  CHECK(rounds[n - 2] == 0);
  CHECK(ahead[n - 1] < rounds[n - 1]); // fewer rounds of SimGrid's engine
}

TEST_CASE("run ahead: a timer due with a SimGrid comm's end runs first, as in a round, and none runs past that end",
          "[reactor][run-ahead]")
{
  // The comm's end is known only to SimGrid. Timers at that very time run before its callback (timers, then
  // completions, in one round); a timer a nanosecond after it runs after the callback.
  auto run = [](bool run_ahead) {
    return in_reactor(run_ahead,
                      [](sim::Reactor& r, const sim::Platform& pf, Host* a, Host* b, std::vector<double>& out) {
                        const double duration = time_alone(r, a, b); // from 0: its end
                        out.push_back(1);
                        out.push_back(duration);
                        // The same comm again, with timers before, at and after its end.
                        const double start = r.now();
                        r.start_comm(a, b, 1 << 20, [&] { out.push_back(2); });
                        for (double d : {0.25, 0.5, 0.999})
                          r.at(start + d * duration, [&, d] { out.push_back(10 + d); });
                        r.at(start + duration, [&] { out.push_back(20); });
                        r.at(start + duration + 1e-9, [&] { out.push_back(30); });
                        r.run();
                      });
  };
  const auto ahead = run(true), rounds = run(false);
  check_same_times(ahead, rounds);
  REQUIRE(rounds.size() == 2 + 6 + 3);
  CHECK(rounds[2] == 10.25);
  CHECK(rounds[4] == 10.999);
  CHECK(rounds[5] == 20); // the timer at the comm's end, then its callback
  CHECK(rounds[6] == 2);
  CHECK(rounds[7] == 30);
}

TEST_CASE("run ahead: an end within SimGrid's precision after a timer belongs to that timer's round",
          "[reactor][run-ahead]")
{
  // SimGrid ends every action due within surf/precision (1e-13 s here) of the date a round reaches. A lone exec (a
  // reactor timer) ending a few ulps before a SimGrid comm: with a round per timer both end in one round, handed on in
  // start order (the comm first); running ahead must not hand the exec on first. And a comm cancelled from a timer that
  // close to its end is let go, its callback never run, as with a round per timer.
  auto run = [](bool run_ahead) {
    return in_reactor(
        run_ahead, [](sim::Reactor& r, const sim::Platform& pf, Host* a, Host* b, std::vector<double>& out) {
          auto* cpu = pf.cpu_host(1, 0);
          const double duration = time_alone(r, a, b);
          REQUIRE(duration > 0);
          // The exec, then the comm's callback: order and times.
          double start = r.now();
          r.start_comm(a, b, 1 << 20, [&] {
            out.push_back(1);
            out.push_back(r.now());
          });
          const double exec_end = std::nextafter(std::nextafter(start + duration, 0.0), 0.0);
          r.start_exec(cpu, (exec_end - start) * cpu->get_speed(), 1, [&] {
            out.push_back(2);
            out.push_back(r.now());
          });
          r.at(start + duration / 2, [] {}); // a round between: SimGrid's dates are fresh when the exec's end comes
          r.run();
          // A cancel one ulp before the end.
          start = r.now();
          const uint64_t id = r.start_comm(a, b, 1 << 20, [&] { out.push_back(-1); });
          r.at(start + duration / 2, [] {});
          r.at(std::nextafter(start + duration, 0.0), [&, id] { r.cancel_activity(id); });
          r.at(start + 2 * duration, [&] { out.push_back(3); }); // the loop moves on
          r.run();
          out.push_back(double(r.cancelled_held()));
        });
  };
  const auto ahead = run(true), rounds = run(false);
  check_same_times(ahead, rounds);
  REQUIRE(rounds.size() == 6 + 3);
  CHECK(rounds[0] == 1); // the comm first: both ended in one round
  CHECK(rounds[2] == 2);
  CHECK(rounds[4] == 3); // the cancelled comm never called back
  CHECK(rounds[5] == 0); // and was let go
  CHECK(ahead[0] == 1);
  CHECK(ahead[5] == 0);
}

TEST_CASE("run ahead: at a deadline SimGrid catches up and the snapshot reads what its comms have left",
          "[reactor][run-ahead]")
{
  auto run = [](bool run_ahead) {
    return in_reactor(run_ahead,
                      [](sim::Reactor& r, const sim::Platform& pf, Host* a, Host* b, std::vector<double>& out) {
                        r.start_comm(a, b, 100 << 20, [&] { out.push_back(-1); }); // far longer than the deadline
                        std::function<void()> tick = [&] { r.after(1e-6, tick); };
                        r.after(1e-6, tick); // timers up to the deadline, run ahead
                        r.set_deadline(1e-3);
                        r.run();
                        out.push_back(r.deadline_hit() ? 1 : 0);
                        out.push_back(r.now());
                        REQUIRE(r.at_deadline().activities.size() == 1);
                        out.push_back(r.at_deadline().activities[0].remaining);
                      });
  };
  const auto ahead = run(true), rounds = run(false);
  check_same_times(ahead, rounds);
  REQUIRE(ahead.size() == 6);
  CHECK(ahead[0] == 1);
  CHECK(ahead[1] == Approx(1e-3));
  CHECK(ahead[2] > 0);
  CHECK(ahead[2] < double(100 << 20));
  CHECK(ahead[4] > 900); // the ticks ran ahead
}

namespace {

/// Step time and timers run ahead of a small training job over `transport`, running ahead or not.
std::vector<double> training_job(const std::string& transport, bool allreduce, bool clock_in_simgrid)
{
  return test::small_job_numbers(
      transport, allreduce, clock_in_simgrid ? "TENSORPATH_CLOCK_IN_SIMGRID" : nullptr,
      [](const sim::TrainingResult& r) {
        return std::vector<double>{r.step_time, double(r.timers_run_ahead), double(r.simgrid_rounds)};
      });
}

} // namespace

TEST_CASE("run ahead: training steps as with a round per timer, per transport, with fewer rounds",
          "[training][run-ahead]")
{
  for (const std::string t : {"grpc", "verbs_v1", "verbs_v2", "gdr", "mpi", "ar_grpc"})
    for (bool allreduce : {false, true}) {
      if (allreduce && t != "mpi") continue; // the ring runs over mpi
      const auto ahead = training_job(t, allreduce, false), rounds = training_job(t, allreduce, true);
      REQUIRE(ahead.size() == 3);
      REQUIRE(rounds.size() == 3);
      INFO(t << (allreduce ? " allreduce" : " ps") << ": step " << ahead[0] << " s running ahead (" << ahead[1]
             << " timers ahead, " << ahead[2] << " rounds), " << rounds[0] << " s with a round per timer (" << rounds[2]
             << " rounds)");
      REQUIRE(rounds[0] > 0);
      CHECK(std::abs(ahead[0] / rounds[0] - 1) <= 1e-9);
      CHECK(rounds[1] == 0);
      CHECK(ahead[1] > 0);
      CHECK(ahead[2] < rounds[2]);
    }
}
