// The simulator's implementation of the job backend interface (core/jobs/job_backend.hpp) over one
// sim::Simulation: processes on the cluster's machines, tasks placed by the host profile (the NIC's socket, the
// GPUs next to it), posted work run at once on the driver's thread, run_until() as Simulation::run() to quiet
// (with a deadline in simulated seconds). The Simulation stays reachable for what only it has (faults, traces).
#pragma once

#include "core/jobs/job_backend.hpp"
#include "models/host_model.hpp"
#include "sim/simulation.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tp::sim {

/// What a task's spec takes from its host, alike for every job the simulator runs: the socket of the task's NIC
/// (`nic`, an index the caller has checked), the GPUDirect-capable GPUs (those on that NIC's socket) when none are
/// given, the CPU NUMA node (`cpu_numa_node`, a socket of `host` the caller has checked, else the NIC's socket) and
/// the MPI call cost of that socket's CPU.
void complete_task_spec(transports::TaskSpec& spec, const models::HostProfile& host,
                        std::optional<int> cpu_numa_node = std::nullopt, int nic = 0);

class SimJobBackend final : public jobs::JobBackend {
public:
  /// `sim` was built from `cluster`; both outlive this backend.
  SimJobBackend(Simulation& sim, const models::ClusterProfile& cluster) : sim_(sim), cluster_(cluster) {}
  const char* kind() const override { return "simulator"; }
  Result<jobs::JobProcess*> add_process(size_t host, const std::string& name) override;
  /// add_process on the machine of that name (Simulation::add_process's errors).
  Result<jobs::JobProcess*> add_process_on(const std::string& machine, const std::string& name);
  Result<std::unique_ptr<transports::TaskRuntime>> create_task(jobs::JobProcess& p, transports::TaskSpec spec,
                                                               const transports::ClusterSpec& cluster,
                                                               std::optional<Location> data) override;
  Result<Location> nic_buffer_location(const jobs::JobProcess& p, int nic, bool cross_socket, bool gpu) const override;
  void post(jobs::JobProcess&, std::function<void()> fn) override { fn(); }
  void on(jobs::JobProcess&, std::function<void()> fn) override { fn(); }
  jobs::RunOutcome run_until(const std::function<bool()>& done, double timeout) override;
  double now() const override { return sim_.now(); }
  void stop() override;

  Simulation& simulation() { return sim_; }

private:
  Simulation& sim_;
  const models::ClusterProfile& cluster_;
  std::vector<std::unique_ptr<jobs::JobProcess>> procs_;
  bool stopped_ = false;
};

} // namespace tp::sim
