// Emulated transfers (see transfer_job.hpp).
#include "emulator/transfer_job.hpp"

#include "core/common/resource_estimate.hpp"
#include "emulator/emu_job_backend.hpp"
#include "emulator/job_estimate.hpp"
#include "emulator/process_transfer.hpp"

namespace tp::emu {

namespace {
// The emulator's tasks since its first version (the simulator's are the other way round).
const char* const PRODUCER = "/job:ps/replica:0/task:0";
const char* const CONSUMER = "/job:worker/replica:0/task:0";
} // namespace

Status check_emulated_size(uint64_t bytes, const std::string& option)
{
  if (bytes > MAX_EMULATED_BYTES)
    return Error::at("", option,
                     "at most " + std::to_string(MAX_EMULATED_BYTES) +
                         " bytes (a float32 tensor of 2^50 elements, the most a tensor's meta-data carries)",
                     std::to_string(bytes));
  EmuTransferJob one;
  one.sizes = {bytes};
  one.steps = 1;
  JobEstimate e = estimate_emulated_transfer(one);
  e.job = "an emulated transfer of " + std::to_string(bytes) + " bytes (" + option + ")";
  return check_budget(e, "the emulator moves real bytes: use a smaller " + option);
}

Result<EmuTransferResult> run_emulated_transfer(const EmuTransferJob& job)
{
  for (uint64_t bytes : job.sizes)
    TP_TRY(check_emulated_size(bytes, "size"));
  if (auto st = check_budget(estimate_emulated_transfer(job), "use smaller tensors, fewer sizes or steps"); !st.ok())
    return st.error();
  if (job.os_processes) return run_process_transfer(job);
  transports::register_builtin_transports();
  if (!transports::find_transport(job.transport))
    return Error::at("", "transport", "a registered transport", "\"" + job.transport + "\"");
  Emulation::Options eo;
  eo.device = job.device;
  EmuJobBackend backend(eo);
  jobs::TransferDriverJob dj;
  static_cast<jobs::TransferSpec&>(dj) = job;
  dj.tensors_per_step = 1;
  dj.gpudirect_gpus = {};
  dj.producer_task = PRODUCER;
  dj.consumer_task = CONSUMER;
  dj.start_timeout = job.timeout;
  dj.step_timeout = job.timeout;
  // Wall clock: no quiet to wait for, and noise that the median of the steps after the first smooths.
  dj.latency = jobs::TransferDriverJob::Latency::UNTIL_RECEIVED;
  dj.steady = jobs::TransferDriverJob::Steady::MEDIAN_AFTER_FIRST;
  dj.check_bytes = true;
  dj.numbered_keys = false;
  auto r = jobs::run_transfer(backend, dj);
  if (!r.ok()) return r.error();
  EmuTransferResult out;
  out.transport = job.transport;
  out.points = std::move(r->points);
  out.records = std::move(r->records);
  return out;
}

} // namespace tp::emu
