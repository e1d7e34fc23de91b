// Short comms (sim/reactor.cpp): a comm of at most Reactor::short_comm_bytes() is a timer, not a SimGrid comm. Alone on
// its route it takes the time SimGrid gives a comm alone; beside other comms it takes the fair share of each link
// counting itself, and takes nothing from them. Training jobs against every comm in SimGrid, per transport.
#include "core/transports/mpi/mpi.hpp"
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
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using namespace tp;

namespace {

/// The comms' end points: machine 0's first NIC reading host memory, machine 1's writing it, and the narrowest link
/// between them as SimGrid routes it (every link of the test platform is shared).
struct Ends {
  simgrid::s4u::Host *a = nullptr, *b = nullptr;
  double bw = INFINITY;
};

Ends ends_of(const sim::Platform& pf)
{
  Ends e{pf.nic_endpoint(0, 0, Location::host(0), false), pf.nic_endpoint(1, 0, Location::host(0), true)};
  std::vector<simgrid::s4u::Link*> links;
  double latency = 0;
  e.a->route_to(e.b, links, &latency);
  for (const auto* l : links)
    e.bw = std::min(e.bw, l->get_bandwidth());
  return e;
}

/// `body` run by a reactor inside a SimGrid actor of a fresh two-machine simulation, in a child (one simulation per
/// process), with comms of up to `short_bytes` as short comms (0: every comm in SimGrid). Returns the narrowest link's
/// bandwidth, what body pushed, then the short comms started and the activities completed.
std::vector<double> in_reactor(uint64_t short_bytes,
                               const std::function<void(sim::Reactor&, const Ends&, std::vector<double>&)>& body)
{
  return test::numbers_in_child([&]() -> Result<std::vector<double>> {
    auto sim = sim::Simulation::create(test::test_cluster(2)).value();
    std::vector<double> out;
    simgrid::s4u::Actor::create("test", sim->platform().cpu_host(0, 0), [&] {
      sim::Reactor r;
      r.set_short_comm_bytes(short_bytes);
      const Ends e = ends_of(sim->platform());
      out.push_back(e.bw);
      body(r, e, out);
      out.push_back(double(r.short_comms()));
      out.push_back(double(r.activities_completed()));
    });
    sim->run();
    return out;
  });
}

} // namespace

TEST_CASE("short comms: alone on their route, the time SimGrid gives a comm alone", "[reactor][short]")
{
  auto run = [](uint64_t short_bytes) {
    return in_reactor(short_bytes, [](sim::Reactor& r, const Ends& e, std::vector<double>& out) {
      auto *a = e.a, *b = e.b;
      r.start_comm(a, b, 100, [&] { out.push_back(r.now()); });
      r.run();
      r.start_comm(b, a, 4096, [&] { out.push_back(r.now()); }); // the other way, at the limit
      r.run();
      r.start_comm(a, b, 4097, [&] { out.push_back(r.now()); }); // one byte over: a SimGrid comm either way
      r.run();
    });
  };
  const auto timer = run(4096), simgrid = run(0);
  REQUIRE(timer.size() == 6);
  REQUIRE(simgrid.size() == 6);
  const double bw = simgrid[0];
  REQUIRE(bw > 0);
  CHECK(timer[1] == Approx(100 / bw).epsilon(1e-12));
  for (size_t i = 1; i <= 3; ++i) {
    INFO("comm " << i << ": " << timer[i] << " s as a short comm, " << simgrid[i] << " s in SimGrid");
    CHECK(std::abs(timer[i] - simgrid[i]) <= 1e-12 * simgrid[i]);
  }
  CHECK(timer[4] == 2); // short comms started
  CHECK(simgrid[4] == 0);
  CHECK(timer[5] == simgrid[5]); // every comm counts as completed either way
}

TEST_CASE("short comms: beside a long comm the fair share of the link counting itself and nothing taken from it",
          "[reactor][short]")
{
  // A 1 MiB comm from 0 and a 4000-byte one from 10 us on the same route. In SimGrid both get half of the narrowest
  // link while both run: the short one takes 2 x 4000 / bw, the long one ends 4000 / bw later than alone. As a short
  // comm the short one takes the same (its share is the link's bandwidth over the two comms on it), and the long one
  // ends as if alone: a short comm's bytes are left out of the shares of the comms it crosses.
  auto run = [](uint64_t short_bytes) {
    return in_reactor(short_bytes, [](sim::Reactor& r, const Ends& e, std::vector<double>& out) {
      auto *a = e.a, *b = e.b;
      double long_end = 0, short_end = 0;
      r.start_comm(a, b, 1 << 20, [&] { long_end = r.now(); });
      r.after(10e-6, [&] { r.start_comm(a, b, 4000, [&] { short_end = r.now(); }); });
      r.run();
      out.push_back(short_end - 10e-6);
      out.push_back(long_end);
    });
  };
  const auto timer = run(4096), simgrid = run(0);
  REQUIRE(timer.size() == 5);
  REQUIRE(simgrid.size() == 5);
  const double bw = simgrid[0];
  CHECK(simgrid[1] == Approx(2 * 4000 / bw).epsilon(1e-9));
  CHECK(timer[1] == Approx(simgrid[1]).epsilon(1e-9));
  CHECK(simgrid[2] == Approx((double(1 << 20) + 4000) / bw).epsilon(1e-9));
  CHECK(timer[2] == Approx(double(1 << 20) / bw).epsilon(1e-9));
  CHECK(timer[3] == 1);
}

TEST_CASE("short comms: started at one instant they share alike and end together as in SimGrid", "[reactor][short]")
{
  // Three comms of 4000 bytes posted at one instant on one route: max-min gives each a third of the narrowest link,
  // and all three end at 3 x 4000 / bw. Short comms take their share once every comm of the instant is counted.
  auto run = [](uint64_t short_bytes) {
    return in_reactor(short_bytes, [](sim::Reactor& r, const Ends& e, std::vector<double>& out) {
      auto *a = e.a, *b = e.b;
      r.after(5e-6, [&] {
        for (int i = 0; i < 3; ++i)
          r.start_comm(a, b, 4000, [&] { out.push_back(r.now() - 5e-6); });
      });
      r.run();
    });
  };
  const auto timer = run(4096), simgrid = run(0);
  REQUIRE(timer.size() == 6);
  REQUIRE(simgrid.size() == 6);
  const double bw = simgrid[0];
  for (size_t i = 1; i <= 3; ++i) {
    INFO("comm " << i);
    CHECK(simgrid[i] == Approx(3 * 4000 / bw).epsilon(1e-9));
    CHECK(timer[i] == Approx(simgrid[i]).epsilon(1e-9));
  }
}

TEST_CASE("short comms: a cancelled one never calls back and leaves its links and a deadline reports one in flight",
          "[reactor][short]")
{
  const auto out = in_reactor(4096, [](sim::Reactor& r, const Ends& e, std::vector<double>& out) {
    auto *a = e.a, *b = e.b;
    const double bw = e.bw;
    bool called = false;
    const uint64_t id = r.start_comm(a, b, 4000, [&] { called = true; });
    out.push_back(r.cancel_activity(id) ? 1 : 0);
    out.push_back(r.cancel_activity(id) ? 1 : 0); // gone: nothing to cancel twice
    // Alone again: the cancelled comm no longer counts on the links (else this one would take twice as long).
    const double t0 = r.now();
    r.start_comm(a, b, 4000, [&] { out.push_back(r.now() - t0); });
    r.run();
    out.push_back(called ? 1 : 0);
    // Stopped by a deadline halfway: reported in progress, a comm between its end points with half its bytes left.
    r.start_comm(a, b, 4000, [] {});
    r.set_deadline(r.now() + 2000 / bw);
    r.run();
    out.push_back(r.deadline_hit() ? 1 : 0);
    const auto& left = r.at_deadline().activities;
    out.push_back(double(left.size()));
    out.push_back(left.empty() ? -1 : left[0].remaining);
    out.push_back(!left.empty() && left[0].comm && left[0].from == a && left[0].to == b ? 1 : 0);
  });
  REQUIRE(out.size() == 11);
  const double bw = out[0];
  CHECK(out[1] == 1);
  CHECK(out[2] == 0);
  CHECK(out[3] == Approx(4000 / bw).epsilon(1e-12));
  CHECK(out[4] == 0);
  CHECK(out[5] == 1);
  CHECK(out[6] == 1);
  CHECK(out[7] == Approx(2000).epsilon(1e-6));
  CHECK(out[8] == 1);
}

TEST_CASE("short comms: the counts on the links come back to zero after cancels and a deadline", "[reactor][short]")
{
  const auto out = in_reactor(4096, [](sim::Reactor& r, const Ends& e, std::vector<double>& out) {
    auto *a = e.a, *b = e.b;
    // A SimGrid comm cancelled at 10 us; a short comm from 20 us is alone again.
    const uint64_t big = r.start_comm(a, b, 1 << 20, [] {});
    r.after(10e-6, [&r, big] { r.cancel_activity(big); });
    r.after(20e-6, [&] { r.start_comm(a, b, 4000, [&] { out.push_back(r.now() - 20e-6); }); });
    r.run();
    out.push_back(double(r.comms_counted_on_links()));
    // A short comm cancelled at the instant its end is due (its timer first, then the cancel's): no call back.
    bool called = false;
    const double t0 = r.now();
    const uint64_t id = r.start_comm(a, b, 4000, [&] { called = true; });
    r.at(t0 + 4000 / e.bw, [&r, id, &out] { out.push_back(r.cancel_activity(id) ? 1 : 0); });
    r.run();
    out.push_back(called ? 1 : 0);
    out.push_back(double(r.comms_counted_on_links()));
    // A deadline with a SimGrid comm and a short comm in flight: everything dropped, nothing left counted.
    r.start_comm(a, b, 1 << 20, [] {});
    r.start_comm(a, b, 4000, [] {});
    r.set_deadline(r.now() + 1e-9);
    r.run();
    out.push_back(double(r.comms_counted_on_links()));
  });
  REQUIRE(out.size() == 9); // and the two counts in_reactor adds
  const double bw = out[0];
  CHECK(out[1] == Approx(4000 / bw).epsilon(1e-12)); // alone: the cancelled comm left its links
  CHECK(out[2] == 0);
  CHECK(out[3] == 1); // the cancel found it
  CHECK(out[4] == 0); // and its callback never ran
  CHECK(out[5] == 0);
  CHECK(out[6] == 0);
}

namespace {

/// Step time and short comms of a small parameter-server job over `transport`, every comm in SimGrid or not.
std::vector<double> ps_job(const std::string& transport, bool comms_in_simgrid)
{
  return test::small_job_numbers(transport, false, comms_in_simgrid ? "TENSORPATH_COMMS_IN_SIMGRID" : nullptr,
                                 [](const sim::TrainingResult& r) {
                                   return std::vector<double>{r.step_time, double(r.short_comms)};
                                 });
}

} // namespace

TEST_CASE("short comms: parameter-server steps as with every comm in SimGrid, per transport", "[training][short]")
{
  // Measured here: the same step to 2e-4 or closer for every transport but mpi; mpi within 1 %, as a perturbation of
  // every comm by 1000 bytes moves it (docs/model.md "Short comms").
  for (const std::string t : {"grpc", "verbs_v1", "verbs_v2", "gdr", "mpi", "ar_grpc"}) {
    const auto timer = ps_job(t, false), simgrid = ps_job(t, true);
    REQUIRE(timer.size() == 2);
    REQUIRE(simgrid.size() == 2);
    INFO(t << ": step " << timer[0] << " s with short comms (" << timer[1] << " of them), " << simgrid[0]
           << " s with every comm in SimGrid");
    REQUIRE(simgrid[0] > 0);
    CHECK(simgrid[1] == 0);
    CHECK(timer[1] > 0); // every transport sends messages of 4 KiB or less (requests, acknowledgements)
    CHECK(std::abs(timer[0] / simgrid[0] - 1) <= (t == "mpi" ? 1e-2 : 1e-3));
  }
}
