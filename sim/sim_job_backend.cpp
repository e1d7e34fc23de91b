// The simulator's job backend (see sim_job_backend.hpp).
#include "sim/sim_job_backend.hpp"
#include "sim/microbench_jobs.hpp"
#include "sim/platform.hpp"

#include <cmath>
#include <limits>

namespace tp::sim {

Result<jobs::JobProcess*> SimJobBackend::add_process(size_t host, const std::string& name)
{
  const auto names = cluster_.host_names();
  if (host >= names.size())
    return Error::at("", "host", "a host index below " + std::to_string(names.size()), std::to_string(host));
  return add_process_on(names[host], name);
}

Result<jobs::JobProcess*> SimJobBackend::add_process_on(const std::string& machine, const std::string& name)
{
  auto p = sim_.add_process(machine, name);
  if (!p.ok()) return p.error();
  SimProcess& sp = *p.value();
  auto jp = std::make_unique<jobs::JobProcess>();
  jp->name = sp.name();
  jp->host = sp.machine();
  jp->runtime = &sp.runtime();
  jp->streams = &sp.streams();
  for (int n = 0; n < sp.device_count(); ++n)
    jp->devices.push_back(&sp.device(n));
  procs_.push_back(std::move(jp));
  return procs_.back().get();
}

void complete_task_spec(transports::TaskSpec& spec, const models::HostProfile& host, std::optional<int> cpu_numa_node,
                        int nic)
{
  spec.memory.nic_socket = host.nics.empty() ? 0 : host.nics[size_t(nic)].socket;
  if (spec.memory.gpudirect_gpus.empty() && !host.nics.empty())
    for (size_t g = 0; g < host.gpus.size(); ++g)
      if (host.gpus[g].socket == spec.memory.nic_socket) spec.memory.gpudirect_gpus.push_back(int(g));
  spec.cpu_numa_node = cpu_numa_node.value_or(spec.memory.nic_socket);
  spec.library_call_seconds = host.sockets.at(size_t(spec.cpu_numa_node)).cpu.mpi_call_overhead;
}

Result<std::unique_ptr<transports::TaskRuntime>> SimJobBackend::create_task(jobs::JobProcess& p,
                                                                            transports::TaskSpec spec,
                                                                            const transports::ClusterSpec& cluster,
                                                                            std::optional<Location> data)
{
  const auto& host = cluster_.host(p.host);
  if (data && data->is_gpu() && data->index >= int(host.gpus.size()))
    return Error::at(host.file, "gpus", "a GPU " + std::to_string(data->index) + " on " + host.name, "none");
  if (data && data->is_host() && data->index >= int(host.sockets.size()))
    return Error::at(host.file, "sockets", "NUMA node " + std::to_string(data->index) + " on " + host.name, "none");
  // A task whose tensors live on a GPU talks through the NIC nearest that GPU (one rail per GPU on an HGX node).
  const int nic = data && data->is_gpu() && !host.nics.empty() ? host.nic_for_gpu(data->index) : 0;
  complete_task_spec(spec, host, data && data->is_host() ? std::optional<int>(data->index) : std::nullopt, nic);
  return transports::TaskRuntime::create(spec, p.name, *p.runtime, p.device(nic), *p.streams, cluster);
}

Result<Location> SimJobBackend::nic_buffer_location(const jobs::JobProcess& p, int nic, bool cross_socket,
                                                    bool gpu) const
{
  return perftest_buffer_location(sim_.platform().machine(p.host), nic, cross_socket, gpu);
}

jobs::RunOutcome SimJobBackend::run_until(const std::function<bool()>& done, double timeout)
{
  if (stopped_) return jobs::RunOutcome::STOPPED;
  sim_.set_deadline(std::isinf(timeout) ? std::numeric_limits<double>::infinity() : sim_.now() + timeout);
  sim_.run();
  if (stopped_) return jobs::RunOutcome::STOPPED;
  if (done()) return jobs::RunOutcome::DONE;
  return sim_.deadline_hit() ? jobs::RunOutcome::DEADLINE : jobs::RunOutcome::IDLE;
}

void SimJobBackend::stop()
{
  stopped_ = true;
  sim_.stop();
}

} // namespace tp::sim
