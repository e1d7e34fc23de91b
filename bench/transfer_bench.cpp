// Benchmark: transfers simulated per wall-second for a 1000-tensor exchange (one step of 1000 concurrent
// 64 KiB tensors, after a first-use step), per transport. Reference measured in the same run: bare SimGrid
// comms per wall-second between the same two NIC endpoints; "engine/bare" is the cost of a whole protocol
// transfer (rendezvous, control messages, completions) relative to one raw SimGrid comm.
// Usage: transfer_bench [PROFILE] [TENSORS]   (default connectx4-edr-ib, 1000)
#include "apps/lib/hw_resolve.hpp"
#include "core/common/isolated_run.hpp"
#include "core/transports/transport.hpp"
#include "models/catalog.hpp"
#include "sim/platform.hpp"
#include "sim/transfer_job.hpp"

#include <simgrid/s4u.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace tp;

int main(int argc, char** argv)
{
  const std::string hw = argc > 1 ? argv[1] : "connectx4-edr-ib";
  const int tensors = argc > 2 ? std::atoi(argv[2]) : 1000;
  models::Catalog cat;
  auto cluster = frontend::cluster_for(cat, hw, 2);
  if (!cluster.ok()) {
    std::fprintf(stderr, "%s\n", cluster.error().message().c_str());
    return 2;
  }
  auto bare = run_isolated([&]() -> Result<std::string> {
    auto sim = sim::Simulation::create(cluster.value());
    if (!sim.ok()) return sim.error();
    const sim::Platform& pf = sim.value()->platform();
    auto* from = pf.nic_endpoint(0, 0, Location::host(0), false);
    auto* to = pf.nic_endpoint(1, 0, Location::host(0), true);
    double wall = 0;
    const int n = 20000;
    simgrid::s4u::Actor::create("bare", pf.cpu_host(0, 0), [&] {
      const auto w0 = std::chrono::steady_clock::now();
      for (int i = 0; i < n; ++i)
        simgrid::s4u::Comm::sendto(from, to, 65536);
      wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    });
    simgrid::s4u::Engine::get_instance()->run();
    return std::to_string(n / wall);
  });
  if (!bare.ok()) {
    std::fprintf(stderr, "bare SimGrid reference failed: %s\n", bare.error().message().c_str());
    return 1;
  }
  const double bare_rate = std::stod(bare.value());
  std::printf("%d concurrent 64 KiB tensors per step on %s (second step timed)\n", tensors, hw.c_str());
  std::printf("%-10s %10s %10s %16s %14s %12s\n", "transport", "transfers", "wall[s]", "transfers/wall-s",
              "sim step[ms]", "engine/bare");
  for (const auto& name : transports::transport_names()) {
    auto child = run_isolated(
        [&]() -> Result<std::string> {
          sim::TransferJob job;
          job.transport = name;
          job.sizes = {65536};
          job.steps = 2;
          job.tensors_per_step = tensors;
          auto r = sim::run_transfer_job(cluster.value(), job);
          if (!r.ok()) return r.error();
          char buf[256];
          std::snprintf(buf, sizeof buf, "%llu %.6f %.9f", static_cast<unsigned long long>(r->transfers),
                        r->wall_seconds, r->points[0].steady_latency);
          return std::string(buf);
        },
        600);
    if (!child.ok()) {
      std::printf("%-10s ERROR %s\n", name.c_str(), child.error().message().c_str());
      continue;
    }
    unsigned long long transfers = 0;
    double wall = 0, step = 0;
    std::sscanf(child.value().c_str(), "%llu %lf %lf", &transfers, &wall, &step);
    const double rate = double(transfers) / wall;
    std::printf("%-10s %10llu %10.3f %16.0f %14.3f %12.3f\n", name.c_str(), transfers, wall, rate, step * 1e3,
                rate / bare_rate);
  }
  std::printf("\nbare SimGrid comms per wall-second: %.0f\n", bare_rate);
  return 0;
}
