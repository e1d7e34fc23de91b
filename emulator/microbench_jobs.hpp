// perftest on the emulator: the simulator's microbenchmark (core/microbench/perftest.hpp) between two emulated
// processes, through the same driver (core/jobs/microbench_driver.hpp), on the software device or a libibverbs
// one; times are wall time. Tests: tests/emulator/emu_job_backend_test.cpp.
#pragma once

#include "core/jobs/microbench_driver.hpp"

#include <string>

namespace tp::emu {

struct EmuPerftestJob {
  microbench::PerftestConfig config;
  jobs::PerftestPlacement placement;
  std::string device = "soft"; ///< "soft" or "ibv[:NAME]" (see Emulation::Options)
  double timeout = 30;         ///< seconds before the job fails (a stalled test)
};

Result<jobs::PerftestRun> run_emulated_perftest(const EmuPerftestJob& job);

} // namespace tp::emu
