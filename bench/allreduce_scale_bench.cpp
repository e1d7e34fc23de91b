// Speed at scale: a 1 GiB ring allreduce at 64, 256 and 1024 ranks (one rank per host, ConnectX-4 EDR reference
// hosts). Prints, in one run: the analytical fabric's wall time against SimGrid's own SMPI MPI_Allreduce (ring
// algorithm "lr", same link rate and latency, no-op reduction) on the same platform, and the simulated time against
// the alpha-beta ring formula. Also the flow mode (one SimGrid comm per message) where it stays affordable.
// Usage: allreduce_scale_bench [RANKS...] (default 64 256 1024). SMPI runs are skipped when smpirun is missing.
#include "core/common/isolated_run.hpp"
#include "models/catalog.hpp"
#include "sim/fabric_modes.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

using namespace tp;

namespace {

struct Run {
  double seconds = 0, wall = 0, setup = 0, alpha = 0, beta = 0;
  bool ok = false;
};

Run run_mode(const models::ClusterProfile& cl, int n, double bytes, sim::FabricMode mode)
{
  Run out;
  auto r = run_isolated([&]() -> Result<std::string> {
    sim::AllreduceJob j;
    j.mode = mode;
    j.ranks = n;
    j.bytes = bytes;
    j.local_work = false; // messages only, as SMPI's no-op reduction
    auto x = sim::run_allreduce(cl, j);
    if (!x.ok()) return x.error();
    return fmt::format("{:.17g} {:.17g} {:.17g} {:.17g} {:.17g}", x->seconds, x->wall_seconds, x->setup_wall_seconds,
                       x->alpha, x->beta);
  });
  if (!r.ok()) {
    std::fprintf(stderr, "%s mode at %d ranks failed: %s\n", sim::to_string(mode), n, r.error().message().c_str());
    return out;
  }
  out.ok = std::sscanf(r.value().c_str(), "%lf %lf %lf %lf %lf", &out.seconds, &out.wall, &out.setup, &out.alpha,
                       &out.beta) == 5;
  return out;
}

/// SMPI on a cluster with the same slowest-link rate and route latency; returns (wall seconds, simulated seconds).
std::pair<double, double> run_smpi(int n, double bytes, double alpha, double beta)
{
  const std::string dir = "/tmp/tensorpath_smpi_bench";
  std::system(("mkdir -p " + dir).c_str());
  {
    std::ofstream p(dir + "/platform.xml");
    p << "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n<platform "
         "version=\"4.1\">\n"
      << fmt::format("<cluster id=\"c\" prefix=\"node\" suffix=\"\" radical=\"0-{}\" speed=\"1Gf\" bw=\"{:.6g}Bps\" "
                     "lat=\"{:.6g}s\" bb_bw=\"1e15Bps\" bb_lat=\"0s\" sharing_policy=\"SPLITDUPLEX\" "
                     "bb_sharing_policy=\"FATPIPE\"/>\n",
                     n - 1, beta, alpha / 2)
      << "</platform>\n";
    std::ofstream h(dir + "/hosts.txt");
    for (int i = 0; i < n; ++i)
      h << "node" << i << "\n";
  }
  const std::string cmd =
      fmt::format("cd {} && timeout 900 smpirun -np {} -platform platform.xml -hostfile hosts.txt "
                  "--cfg=smpi/allreduce:lr --cfg=network/model:CM02 --cfg=network/latency-factor:1 "
                  "--cfg=network/bandwidth-factor:1 --cfg=smpi/shared-malloc-blocksize:{} --log=root.thres:critical "
                  "{} {:.0f} > out.txt 2>&1",
                  dir, n, uint64_t(bytes), TENSORPATH_SMPI_ALLREDUCE, bytes);
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = std::system(cmd.c_str());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double sim_s = -1;
  std::ifstream out(dir + "/out.txt");
  std::string word;
  while (out >> word)
    if (word == "smpi_allreduce_seconds") out >> sim_s;
  if (rc != 0 || sim_s < 0) return {-wall, -1};
  return {wall, sim_s};
}

} // namespace

int main(int argc, char** argv)
{
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i)
    sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {64, 256, 1024};
  const double bytes = double(1ull << 30);
  models::Catalog cat;
  auto host = cat.host("perftest-reference");
  auto nic = cat.nic("connectx4-edr-ib");
  auto sw = cat.network_switch("back-to-back");
  if (!host.ok() || !nic.ok() || !sw.ok()) {
    std::fprintf(stderr, "profiles missing\n");
    return 2;
  }
  auto h = host.value();
  h.nics.clear();
  h.nics.push_back(models::NicSpec{nic.value(), 0, cat.pcie(nic->pcie).value()});
  const bool smpi =
      std::system("command -v smpirun > /dev/null 2>&1") == 0 && std::string(TENSORPATH_SMPI_ALLREDUCE) != "";
  std::printf("1 GiB ring allreduce, one rank per %s host (ConnectX-4 EDR)\n\n", h.name.c_str());
  std::printf("%6s | %10s %10s %10s | %12s %12s %9s | %12s %9s\n", "ranks", "sim[ms]", "a-b[ms]", "sim/a-b",
              "analytic[s]", "SMPI[s]", "SMPI/us", "flow[s]", "flow/us");
  for (int n : sizes) {
    const auto cl = models::make_cluster(h, n, sw.value(), "node");
    const Run a = run_mode(cl, n, bytes, sim::FabricMode::ANALYTICAL);
    if (!a.ok) continue;
    const double ab = collectives::ring_allreduce_alpha_beta(n, bytes, a.alpha, a.beta);
    std::pair<double, double> s{0, 0};
    if (smpi) s = run_smpi(n, bytes, a.alpha, a.beta);
    Run f;
    if (n <= 256) f = run_mode(cl, n, bytes, sim::FabricMode::FLOW);
    const double ours = a.wall + a.setup;
    std::printf("%6d | %10.3f %10.3f %10.4f | %12.3f %12s %9s | %12s %9s\n", n, a.seconds * 1e3, ab * 1e3,
                a.seconds / ab, ours,
                smpi ? fmt::format("{:.2f}{}", std::abs(s.first), s.first < 0 ? "!" : "").c_str() : "-",
                smpi && s.first > 0 ? fmt::format("{:.0f}x", s.first / ours).c_str() : "-",
                f.ok ? fmt::format("{:.3f}", f.wall + f.setup).c_str() : "-",
                f.ok ? fmt::format("{:.1f}x", (f.wall + f.setup) / ours).c_str() : "-");
    if (smpi && s.second > 0)
      std::printf("       | SMPI simulated %.3f ms (its MPI layer on a cluster with the same rate and latency)\n",
                  s.second * 1e3);
  }
  std::printf(
      "\nanalytic[s]: wall time of the analytical fabric, platform set-up included; SMPI/us and flow/us: how many\n"
      "times longer SMPI and the flow mode took on this machine ('!' = SMPI failed or timed out after that long).\n"
      "For scale (from the issue): ASTRA-sim's analytical backend, 1.07 s at 256 ranks and 34.9 s at 1024.\n");
  return 0;
}
