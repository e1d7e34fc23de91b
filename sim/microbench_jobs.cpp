// Wiring of core/microbench onto a Simulation.
#include "sim/microbench_jobs.hpp"
#include "sim/job_estimate.hpp"
#include "sim/platform.hpp"

#include <chrono>
#include <functional>
#include <optional>

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
  auto ps = s.add_process(server, "perftest-server");
  if (!ps.ok()) return ps.error();
  auto pc = s.add_process(client, "perftest-client");
  if (!pc.ok()) return pc.error();
  auto mk_side = [&](SimProcess* p) -> Result<microbench::PerftestSide> {
    if (job.nic >= p->device_count())
      return Error::at("", "perftest --nic", "a NIC of " + p->name(), std::to_string(job.nic));
    auto loc = perftest_buffer_location(s.platform().machine(p->machine()), job.nic, job.cross_socket, job.gpu);
    if (!loc.ok()) return loc.error();
    return microbench::PerftestSide{p->name(), &p->runtime(), &p->device(job.nic), &p->streams(), loc.value()};
  };
  auto server_side = mk_side(ps.value());
  if (!server_side.ok()) return server_side.error();
  auto client_side = mk_side(pc.value());
  if (!client_side.ok()) return client_side.error();
  microbench::Perftest test(server_side.value(), client_side.value(), job.config);
  Result<microbench::PerftestResult> out = Error::msg("perftest did not finish (a deadlock in the simulated run)");
  test.start([&out](Result<microbench::PerftestResult> r) { out = std::move(r); });
  const auto w0 = std::chrono::steady_clock::now();
  s.run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  if (!out.ok()) return out.error();
  PerftestJobResult r;
  r.result = std::move(out.value());
  r.wall_seconds = wall;
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
  auto p = sim.value()->add_process(machine, "pcie-copy");
  if (!p.ok()) return p.error();
  Runtime& rt = p.value()->runtime();
  std::vector<microbench::CopyResult> results;
  std::optional<Error> failure;
  std::function<void(size_t)> next = [&](size_t i) {
    if (i == jobs.size()) return;
    microbench::run_copy_bench(rt, jobs[i].config, [&, i](Result<microbench::CopyResult> r) {
      if (!r.ok()) {
        failure = r.error();
        return;
      }
      results.push_back(r.value());
      next(i + 1);
    });
  };
  next(0);
  sim.value()->run();
  if (failure) return *failure;
  if (results.size() != jobs.size()) return Error::msg("copy benchmark did not finish");
  return results;
}

} // namespace tp::sim
