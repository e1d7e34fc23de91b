// The emulator's implementation of the job backend interface (core/jobs/job_backend.hpp) over an Emulation in this
// OS process: every process an event-loop thread of its own with real memory and a software (or libibverbs) device;
// post() hands work to a loop, run_until() polls on wall-clock time. The OS-process transfers
// (emulator/process_transfer.hpp) are not a backend of this kind: their processes live in other address spaces,
// where work cannot be posted as a closure, only as the commands of their control socket.
#pragma once

#include "core/jobs/job_backend.hpp"
#include "emulator/emulation.hpp"

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tp::emu {

/// What a task's spec takes from the emulator's host, alike for every emulated job: GPUDirect on GPU 0 when no GPUs
/// are given, and the MPI call cost of the default CPU profile (models::CpuProfile: the emulator's MPI thread waits
/// that long per call; the host calibration does not measure an MPI library).
void complete_task_spec(transports::TaskSpec& spec);

class EmuJobBackend final : public jobs::JobBackend {
public:
  explicit EmuJobBackend(Emulation::Options options = {}) : emu_(options) {}
  const char* kind() const override { return "emulator"; }
  /// Every process lives on this machine: `host` is not used.
  Result<jobs::JobProcess*> add_process(size_t host, const std::string& name) override;
  /// GPUDirect-capable GPUs, when the spec names none: GPU 0 (the emulated GPUs are host memory).
  Result<std::unique_ptr<transports::TaskRuntime>> create_task(jobs::JobProcess& p, transports::TaskSpec spec,
                                                               const transports::ClusterSpec& cluster,
                                                               std::optional<Location> data) override;
  /// One NIC on NUMA node 0; GPU k is taken to sit on NUMA node k.
  Result<Location> nic_buffer_location(const jobs::JobProcess& p, int nic, bool cross_socket, bool gpu) const override;
  void post(jobs::JobProcess& p, std::function<void()> fn) override;
  void on(jobs::JobProcess& p, std::function<void()> fn) override;
  jobs::RunOutcome run_until(const std::function<bool()>& done, double timeout) override;
  double now() const override;
  void stop() override { stopped_ = true; }
  /// Stops every process's loop thread, then drops what was still queued on them (LoopRuntime::discard_pending).
  void stop_processes() override;

  Emulation& emulation() { return emu_; }
  EmuProcess& emu_process(const jobs::JobProcess& p) { return *emu_procs_.at(&p); }

private:
  Emulation emu_;
  const std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<jobs::JobProcess>> procs_;
  std::map<const jobs::JobProcess*, EmuProcess*> emu_procs_;
  std::atomic<bool> stopped_{false};
};

} // namespace tp::emu
