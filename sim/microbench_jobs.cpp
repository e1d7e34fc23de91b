// Wiring of core/microbench onto a Simulation, through the microbenchmark driver (core/jobs/microbench_driver.hpp).
#include "sim/microbench_jobs.hpp"
#include "core/jobs/microbench_driver.hpp"
#include "sim/job_estimate.hpp"
#include "sim/platform.hpp"
#include "sim/sim_job_backend.hpp"

namespace tp::sim {

Result<Location> perftest_buffer_location(const models::HostProfile& host, int nic, bool cross_socket, bool gpu)
{
  if (nic < 0 || nic >= int(host.nics.size()))
    return Error::at(host.file, "nics", "a NIC index in 0.." + std::to_string(host.nics.size() - 1),
                     std::to_string(nic));
  const int sn = host.nics[size_t(nic)].socket;
  int target = sn;
  if (cross_socket) {
    if (host.sockets.size() < 2) return Error::at(host.file, "sockets", "two sockets for --cross-socket", "one socket");
    target = 1 - sn;
  }
  if (!gpu) return Location::host(target);
  if (!cross_socket) // perftest --use_cuda next to the NIC: the GPU behind the NIC's own PCIe switch, if one is
    for (size_t g = 0; g < host.gpus.size(); ++g)
      if (host.same_pcie_switch(int(g), nic)) return Location::gpu(int(g));
  for (size_t g = 0; g < host.gpus.size(); ++g)
    if (host.gpus[g].socket == target) return Location::gpu(int(g));
  return Error::at(host.file, "gpus",
                   "a GPU on socket " + std::to_string(target) +
                       (cross_socket ? " (across from the NIC)" : " (next to the NIC)"),
                   host.gpus.empty() ? "no GPU" : "none there");
}

Result<PerftestJobResult> run_perftest_job(const models::ClusterProfile& cluster, const PerftestJob& job,
                                           const SimOptions& options)
{
  auto names = cluster.host_names();
  const std::string server = job.server.empty() ? names.at(0) : job.server;
  const std::string client = job.client.empty() ? (names.size() > 1 ? names[1] : names[0]) : job.client;
  if (auto st = check_budget(estimate_perftest(cluster, job), "use fewer iterations or sizes"); !st.ok())
    return st.error();
  auto sim = Simulation::create(cluster, options);
  if (!sim.ok()) return sim.error();
  Simulation& s = *sim.value();
  SimJobBackend backend(s, cluster);
  auto ps = backend.add_process_on(server, "perftest-server");
  if (!ps.ok()) return ps.error();
  auto pc = backend.add_process_on(client, "perftest-client");
  if (!pc.ok()) return pc.error();
  auto run = jobs::run_perftest(backend, *ps.value(), *pc.value(), job.config, {job.nic, job.cross_socket, job.gpu});
  if (!run.ok()) return run.error();
  PerftestJobResult r;
  r.result = std::move(run->result);
  r.wall_seconds = run->wall_seconds;
  r.simulated_seconds = s.now();
  r.sim_activities = s.stats().activities;
  return r;
}

Result<std::vector<microbench::CopyResult>> run_copy_jobs(const models::ClusterProfile& cluster,
                                                          const std::vector<CopyJob>& jobs, const SimOptions& options)
{
  if (jobs.empty()) return std::vector<microbench::CopyResult>{};
  auto names = cluster.host_names();
  const std::string machine = jobs.front().machine.empty() ? names.at(0) : jobs.front().machine;
  if (auto st = check_budget(estimate_copies(cluster, jobs), "use fewer iterations"); !st.ok()) return st.error();
  auto sim = Simulation::create(cluster, options);
  if (!sim.ok()) return sim.error();
  SimJobBackend backend(*sim.value(), cluster);
  auto p = backend.add_process_on(machine, "pcie-copy");
  if (!p.ok()) return p.error();
  std::vector<microbench::CopyConfig> configs;
  for (const auto& j : jobs)
    configs.push_back(j.config);
  return ::tp::jobs::run_copy_benches(backend, *p.value(), configs);
}

} // namespace tp::sim
