// Microbenchmarks on the simulated fabric: build the platform, start the processes, run perftest or the
// copy benchmark (core/microbench) and return their results. Each call creates a Simulation, so call it
// once per OS process (the CLI and validation run every job in a forked child: core/common/isolated_run).
#pragma once

#include "core/microbench/copy_bench.hpp"
#include "core/microbench/perftest.hpp"
#include "models/host_model.hpp"
#include "sim/simulation.hpp"

#include <string>

namespace tp::sim {

struct PerftestJob {
  microbench::PerftestConfig config;
  std::string server; ///< machine name; empty: the first machine
  std::string client; ///< machine name; empty: the second machine
  int nic = 0;
  bool cross_socket = false; ///< buffers on the socket that does not hold the NIC
  bool gpu = false;          ///< buffers in GPU memory (the GPU next to the NIC, or across with cross_socket)
};

struct PerftestJobResult {
  microbench::PerftestResult result;
  double wall_seconds = 0;
  double simulated_seconds = 0;
  uint64_t sim_activities = 0;
};

Result<PerftestJobResult> run_perftest_job(const models::ClusterProfile& cluster, const PerftestJob& job,
                                           const SimOptions& options = {});

struct CopyJob {
  microbench::CopyConfig config;
  std::string machine; ///< empty: the first machine
};

/// Runs the copy benchmarks one after the other in one simulation (all on the same machine).
Result<std::vector<microbench::CopyResult>>
run_copy_jobs(const models::ClusterProfile& cluster, const std::vector<CopyJob>& jobs, const SimOptions& options = {});

/// Where perftest puts its buffers on `host` for the given flags (Error if the host has no such place).
Result<Location> perftest_buffer_location(const models::HostProfile& host, int nic, bool cross_socket, bool gpu);

} // namespace tp::sim
