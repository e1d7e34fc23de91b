// Benchmark: simulated operations per wall-second of the perftest sweep (ib_write_bw -a), and the
// simulated bandwidth as a ratio of the closed-form alpha-beta prediction, per message size. Reference in
// the same run: a bare SimGrid loop that issues one host-to-host comm per message on the same platform
// (no RC semantics, no latencies), so "engine/bare" shows what the device model costs on top of SimGrid.
// Usage: perftest_sweep_bench [PROFILE] [ITERS]   (default connectx3-40gbe-roce, 2000)
#include "apps/lib/hw_resolve.hpp"
#include "core/common/isolated_run.hpp"
#include "models/catalog.hpp"
#include "sim/microbench_jobs.hpp"
#include "sim/platform.hpp"
#include "sim/simulation.hpp"

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace tp;

namespace {

/// Bare SimGrid: `count` sequential comms of `bytes` between the two hosts' NIC endpoints.
Result<std::string> bare_simgrid(const models::ClusterProfile& cluster, uint64_t bytes, int count)
{
  auto sim = sim::Simulation::create(cluster);
  if (!sim.ok()) return sim.error();
  const sim::Platform& pf = sim.value()->platform();
  auto* from = pf.nic_endpoint(0, 0, Location::host(0), false);
  auto* to = pf.nic_endpoint(1, 0, Location::host(0), true);
  double wall = 0;
  simgrid::s4u::Actor::create("bare", pf.cpu_host(0, 0), [&] {
    const auto w0 = std::chrono::steady_clock::now();
    for (int i = 0; i < count; ++i)
      simgrid::s4u::Comm::sendto(from, to, bytes);
    wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  });
  simgrid::s4u::Engine::get_instance()->run();
  return std::to_string(double(count) / wall);
}

} // namespace

int main(int argc, char** argv)
{
  const std::string hw = argc > 1 ? argv[1] : "connectx3-40gbe-roce";
  const int iters = argc > 2 ? std::atoi(argv[2]) : 2000;
  models::Catalog cat;
  auto cluster = frontend::cluster_for(cat, hw, 2);
  if (!cluster.ok()) {
    std::fprintf(stderr, "%s\n", cluster.error().message().c_str());
    return 2;
  }
  sim::PerftestJob job;
  job.config.sizes = microbench::PerftestConfig::all_sizes();
  job.config.iterations = uint64_t(iters);
  const auto& h = cluster->host(0);
  const auto& nic = h.nics[0].nic;
  job.config.mtu = verbs::Mtu(nic.mtu);
  auto child = run_isolated([&]() -> Result<std::string> {
    auto r = sim::run_perftest_job(cluster.value(), job);
    if (!r.ok()) return r.error();
    std::string out;
    for (const auto& b : r->result.bw)
      out += std::to_string(b.bytes) + " " + std::to_string(b.bw_average) + "\n";
    out += "wall " + std::to_string(r->wall_seconds) + " ops " + std::to_string(r->result.operations) + "\n";
    return out;
  });
  if (!child.ok()) {
    std::fprintf(stderr, "perftest sweep failed: %s\n", child.error().message().c_str());
    return 1;
  }
  auto bare = run_isolated([&] { return bare_simgrid(cluster.value(), 65536, 20000); });
  if (!bare.ok()) {
    std::fprintf(stderr, "bare SimGrid reference failed: %s\n", bare.error().message().c_str());
    return 1;
  }
  // alpha-beta: per-message time = max(bytes / bottleneck + last-packet header time, WQE service time)
  const auto& cpu = h.sockets[size_t(h.nics[0].socket)].cpu;
  const double beta = std::min({h.nics[0].pcie.read_completion_bandwidth(cpu.read_completion_size), nic.wire_goodput(),
                                h.nics[0].pcie.posted_write_bandwidth()});
  std::printf("perftest sweep (ib_write_bw -a, %d iterations per size) on %s\n", iters, hw.c_str());
  std::printf("%10s %14s %14s %12s\n", "#bytes", "sim[Gb/s]", "alpha-beta", "sim/formula");
  double wall = 0, ops = 0;
  size_t pos = 0;
  const std::string& text = child.value();
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.rfind("wall ", 0) == 0) {
      std::sscanf(line.c_str(), "wall %lf ops %lf", &wall, &ops);
      continue;
    }
    double bytes = 0, bw = 0;
    std::sscanf(line.c_str(), "%lf %lf", &bytes, &bw);
    const double extra =
        (nic.wire_bytes(uint64_t(bytes), true, false) - bytes / nic.payload_efficiency()) / nic.line_rate;
    const double per_msg = std::max(bytes / beta + extra, nic.wqe_processing_time);
    const double formula = bytes / per_msg;
    std::printf("%10.0f %14.3f %14.3f %12.4f\n", bytes, bw * 8e-9, formula * 8e-9, bw / formula);
  }
  const double bare_rate = std::stod(bare.value());
  std::printf("\nsimulated operations per wall-second: %.0f (%.0f operations in %.3f s)\n", ops / wall, ops, wall);
  std::printf("bare SimGrid comms per wall-second:   %.0f\n", bare_rate);
  std::printf("engine/bare ratio:                    %.3f\n", (ops / wall) / bare_rate);
  return 0;
}
