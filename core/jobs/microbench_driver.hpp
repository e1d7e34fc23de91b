// The microbenchmark jobs, written once over the job backend interface (core/jobs/job_backend.hpp): perftest
// between two processes and the copy benchmark on one (core/microbench). The simulator's jobs
// (sim/microbench_jobs.hpp) and the emulator's perftest (emulator/microbench_jobs.hpp) call them.
// Tests: tests/sim/microbench_test.cpp, tests/emulator/emu_job_backend_test.cpp.
#pragma once

#include "core/jobs/job_backend.hpp"
#include "core/microbench/copy_bench.hpp"
#include "core/microbench/perftest.hpp"

#include <limits>
#include <vector>

namespace tp::jobs {

struct PerftestPlacement {
  int nic = 0;
  bool cross_socket = false; ///< buffers on the socket that does not hold the NIC
  bool gpu = false;          ///< buffers in GPU memory (JobBackend::nic_buffer_location)
};

struct PerftestRun {
  microbench::PerftestResult result;
  double wall_seconds = 0; ///< the run, on this machine's clock
};

/// perftest from `client` to `server`, until it reports or `timeout` backend seconds pass. Errors: a process without
/// NIC `placement.nic`, no such buffer place, the test's own failure, a run that ended without its result.
Result<PerftestRun> run_perftest(JobBackend& backend, JobProcess& server, JobProcess& client,
                                 const microbench::PerftestConfig& config, const PerftestPlacement& placement,
                                 double timeout = std::numeric_limits<double>::infinity());

/// The copy benchmarks on `p`, one after the other. Errors: the first failure, a run that ended before all finished.
Result<std::vector<microbench::CopyResult>> run_copy_benches(JobBackend& backend, JobProcess& p,
                                                             const std::vector<microbench::CopyConfig>& configs,
                                                             double timeout = std::numeric_limits<double>::infinity());

} // namespace tp::jobs
