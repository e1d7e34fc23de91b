// The reactor's event core (sim/reactor.cpp): activities started in SimGrid's kernel context report their ends
// through SimGrid's completion signal; a cancelled one never runs its callback and is let go once SimGrid has reported
// its end; completions of one instant go on in start order; stop() drops what is in flight.
#include "sim/platform.hpp"
#include "sim/reactor.hpp"
#include "sim/simulation.hpp"
#include "test_cluster.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Host.hpp>

#include <catch2/catch.hpp>

#include <limits>
#include <string>
#include <vector>

using namespace tp;

namespace {

/// Run `body` inside a SimGrid actor of a fresh two-machine simulation: `a` -> `b` a route between the machines'
/// NICs, `cpu` machine 0's first socket.
void in_actor(const std::function<void(sim::Reactor&, simgrid::s4u::Host* a, simgrid::s4u::Host* b,
                                       simgrid::s4u::Host* cpu)>& body)
{
  auto sim = sim::Simulation::create(test::test_cluster(2)).value();
  auto* a = sim->platform().nic_endpoint(0, 0, Location::host(0), false);
  auto* b = sim->platform().nic_endpoint(1, 0, Location::host(0), true);
  auto* cpu = sim->platform().cpu_host(0, 0);
  simgrid::s4u::Actor::create("test", cpu, [&] {
    sim::Reactor r;
    body(r, a, b, cpu);
  });
  sim->run();
}

} // namespace

TEST_CASE("reactor: comms and execs complete through SimGrid's signal, one instant's in start order", "[reactor]")
{
  std::vector<std::string> order;
  size_t held = 1;
  uint64_t completed = 0;
  in_actor([&](sim::Reactor& r, simgrid::s4u::Host* a, simgrid::s4u::Host* b, simgrid::s4u::Host* cpu) {
    // Two equal comms on the same route finish at the same instant; the exec later.
    r.start_comm(a, b, 1 << 20, [&] { order.push_back("comm1"); });
    r.start_comm(a, b, 1 << 20, [&] { order.push_back("comm2"); });
    r.start_exec(cpu, cpu->get_speed() * 1.0, 1, [&] { order.push_back("exec"); });
    r.run();
    held = r.cancelled_held();
    completed = r.activities_completed();
  });
  CHECK(order == std::vector<std::string>{"comm1", "comm2", "exec"});
  CHECK(completed == 3);
  CHECK(held == 0);
}

TEST_CASE("reactor: a cancelled activity never calls back and is let go once SimGrid reports its end", "[reactor]")
{
  std::vector<std::string> order;
  size_t held_after = 1;
  bool second_cancel = true;
  in_actor([&](sim::Reactor& r, simgrid::s4u::Host* a, simgrid::s4u::Host* b, simgrid::s4u::Host* cpu) {
    const uint64_t big = r.start_comm(a, b, 1ull << 34, [&] { order.push_back("big"); });
    const uint64_t work = r.start_exec(cpu, cpu->get_speed() * 100.0, 1, [&] { order.push_back("work"); });
    r.start_comm(a, b, 1 << 20, [&] { order.push_back("small"); });
    // Mid-flight, from a timer: cancel the big comm and the exec; a second cancel finds nothing.
    r.after(1e-3, [&, big, work] {
      CHECK(r.cancel_activity(big));
      CHECK(r.cancel_activity(work));
      second_cancel = r.cancel_activity(big);
    });
    r.after(2e-3, [&] { order.push_back("timer"); }); // the loop goes on after the cancels
    r.run();
    held_after = r.cancelled_held();
  });
  CHECK(order == std::vector<std::string>{"small", "timer"});
  CHECK_FALSE(second_cancel);
  CHECK(held_after == 0);
}

TEST_CASE("reactor: stop() drops the activities in flight and lets them go", "[reactor]")
{
  bool called = false;
  size_t held_after = 1;
  size_t pending_after = 1;
  in_actor([&](sim::Reactor& r, simgrid::s4u::Host* a, simgrid::s4u::Host* b, simgrid::s4u::Host* cpu) {
    r.start_comm(a, b, 1ull << 34, [&] { called = true; });
    r.start_exec(cpu, cpu->get_speed() * 100.0, 1, [&] { called = true; });
    r.after(1e-3, [&] { r.stop(); });
    r.run();
    pending_after = r.pending();
    // One more run: SimGrid reports the cancelled activities' ends on the way.
    r.after(1e-3, [] {});
    r.run();
    held_after = r.cancelled_held();
  });
  CHECK_FALSE(called);
  CHECK(pending_after == 0);
  CHECK(held_after == 0);
}

TEST_CASE("reactor: a spinner shares the cores only while run() goes, can join a running loop, and is let go on "
          "every exit",
          "[reactor]")
{
  double alone = -1, added = -1, removed = -1, idle = -1;
  size_t held = 1, spinners = 9;
  int cores = 0;
  in_actor([&](sim::Reactor& r, simgrid::s4u::Host*, simgrid::s4u::Host*, simgrid::s4u::Host* cpu) {
    cores = cpu->get_core_count();
    const double work = cpu->get_speed() * 1.0; // one second per thread
    // Every core for one second.
    double t0 = r.now();
    r.start_exec(cpu, work, cores, [&] { alone = r.now() - t0; });
    r.run();
    // A spinner added from a timer at 0.5 s, while the loop runs: the rest runs at cores / (cores + 1).
    t0 = r.now();
    uint64_t spinner = 0;
    r.start_exec(cpu, work, cores, [&] { added = r.now() - t0; });
    r.after(0.5, [&] { spinner = r.add_spinner(cpu); });
    r.run();
    // The spinner alone keeps nothing going.
    t0 = r.now();
    r.run();
    idle = r.now() - t0;
    // It comes back with the next run; removed at 0.5 s, the rest runs at full speed.
    t0 = r.now();
    r.start_exec(cpu, work, cores, [&] { removed = r.now() - t0; });
    r.after(0.5, [&] { CHECK(r.remove_spinner(spinner)); });
    r.run();
    CHECK_FALSE(r.remove_spinner(spinner));
    // stop() and a deadline with a spinner running: run() returns and lets it go.
    const uint64_t second = r.add_spinner(cpu);
    r.start_exec(cpu, work * 100, 1, [] {});
    r.after(1e-3, [&] { r.stop(); });
    r.run();
    r.set_deadline(r.now() + 1e-3);
    r.start_exec(cpu, work * 100, 1, [] {});
    r.run();
    CHECK(r.deadline_hit());
    r.set_deadline(std::numeric_limits<double>::infinity());
    r.remove_spinner(second);
    r.after(1e-3, [] {}); // SimGrid reports the cancelled execs' ends on the way
    r.run();
    held = r.cancelled_held();
    spinners = r.spinners();
  });
  const double c = cores;
  INFO(cores << " cores: alone " << alone << " s, spinner added at 0.5 s " << added << " s, removed at 0.5 s "
             << removed << " s");
  CHECK(alone == Approx(1.0).epsilon(1e-5));
  CHECK(added == Approx(0.5 + 0.5 * (c + 1) / c).epsilon(1e-5));
  CHECK(idle == 0);
  CHECK(removed == Approx(0.5 + (1 - 0.5 * c / (c + 1))).epsilon(1e-5));
  CHECK(held == 0);
  CHECK(spinners == 0);
}
