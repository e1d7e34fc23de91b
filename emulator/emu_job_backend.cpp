// The emulator's job backend (see emu_job_backend.hpp).
#include "emulator/emu_job_backend.hpp"

#include "models/cpu_model.hpp"

#include <thread>

namespace tp::emu {

Result<jobs::JobProcess*> EmuJobBackend::add_process(size_t, const std::string& name)
{
  auto p = emu_.try_add_process(name);
  if (!p.ok()) return p.error();
  EmuProcess& ep = *p.value();
  auto jp = std::make_unique<jobs::JobProcess>();
  jp->name = ep.name;
  jp->runtime = ep.runtime.get();
  jp->streams = ep.streams.get();
  if (ep.device) jp->devices.push_back(ep.device.get());
  emu_procs_[jp.get()] = &ep;
  procs_.push_back(std::move(jp));
  return procs_.back().get();
}

void complete_task_spec(transports::TaskSpec& spec)
{
  if (spec.memory.gpudirect_gpus.empty()) spec.memory.gpudirect_gpus = {0};
  spec.library_call_seconds = models::CpuProfile{}.mpi_call_overhead;
}

Result<std::unique_ptr<transports::TaskRuntime>> EmuJobBackend::create_task(jobs::JobProcess& p,
                                                                            transports::TaskSpec spec,
                                                                            const transports::ClusterSpec& cluster,
                                                                            std::optional<Location>)
{
  complete_task_spec(spec);
  Result<std::unique_ptr<transports::TaskRuntime>> out = Error::msg("not created");
  on(p, [&] { out = transports::TaskRuntime::create(spec, p.name, *p.runtime, p.device(0), *p.streams, cluster); });
  return out;
}

Result<Location> EmuJobBackend::nic_buffer_location(const jobs::JobProcess& p, int nic, bool cross_socket,
                                                    bool gpu) const
{
  const auto& o = emu_.options();
  if (nic < 0 || size_t(nic) >= p.devices.size())
    return Error::at("", "nic", "a NIC index below " + std::to_string(p.devices.size()), std::to_string(nic));
  const int target = cross_socket ? 1 : 0;
  if (target >= o.numa_nodes)
    return Error::at("", "sockets", "two NUMA nodes for cross_socket", std::to_string(o.numa_nodes));
  if (!gpu) return Location::host(target);
  if (target >= o.gpus_per_process)
    return Error::at("", "gpus", "a GPU on NUMA node " + std::to_string(target), std::to_string(o.gpus_per_process));
  return Location::gpu(target);
}

void EmuJobBackend::post(jobs::JobProcess& p, std::function<void()> fn)
{
  p.runtime->post(std::move(fn));
}

void EmuJobBackend::on(jobs::JobProcess& p, std::function<void()> fn)
{
  Emulation::on(*emu_procs_.at(&p), std::move(fn));
}

jobs::RunOutcome EmuJobBackend::run_until(const std::function<bool()>& done, double timeout)
{
  // Polled every millisecond, as Emulation::wait_until (which takes no infinite timeout).
  const double end = now() + timeout;
  bool held = false;
  while (!(held = stopped_.load() || done()) && now() <= end)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (stopped_) return jobs::RunOutcome::STOPPED;
  return held || done() ? jobs::RunOutcome::DONE : jobs::RunOutcome::DEADLINE;
}

void EmuJobBackend::stop_processes()
{
  for (auto& [jp, ep] : emu_procs_)
    ep->runtime->stop();
  for (auto& [jp, ep] : emu_procs_)
    ep->runtime->discard_pending();
}

double EmuJobBackend::now() const
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

} // namespace tp::emu
