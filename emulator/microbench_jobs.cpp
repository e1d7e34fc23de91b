// perftest on emulated processes (see microbench_jobs.hpp).
#include "emulator/microbench_jobs.hpp"

#include "emulator/emu_job_backend.hpp"

namespace tp::emu {

Result<jobs::PerftestRun> run_emulated_perftest(const EmuPerftestJob& job)
{
  Emulation::Options eo;
  eo.device = job.device;
  EmuJobBackend backend(eo);
  auto server = backend.add_process(0, "perftest-server");
  if (!server.ok()) return server.error();
  auto client = backend.add_process(0, "perftest-client");
  if (!client.ok()) return client.error();
  return jobs::run_perftest(backend, *server.value(), *client.value(), job.config, job.placement, job.timeout);
}

} // namespace tp::emu
