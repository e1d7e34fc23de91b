// Speed at scale: a 1 GiB ring allreduce from 64 to 65,536 ranks (one rank per host, ConnectX-4 EDR reference hosts).
// Prints, in one run: the analytical mode's CPU time, wall time and peak RSS (routes read from three hosts, the ring
// timed by its recurrence: sim/fabric_modes), the same with every host's platform built (up to 8192 ranks), SimGrid's
// own SMPI MPI_Allreduce (ring algorithm "lr", same link rate and latency, no-op reduction) up to 1024 ranks, the
// flow mode (one SimGrid comm per message) up to 256, the simulated time against the alpha-beta ring formula, and
// the growth exponent of each column's CPU time (log-log fit over the sizes run).
// Usage: allreduce_scale_bench [RANKS...] (default 64 256 1024 4096 16384 65536). SMPI runs are skipped when smpirun
// is missing.
#include "core/common/isolated_run.hpp"
#include "models/catalog.hpp"
#include "sim/fabric_modes.hpp"

#include <fmt/format.h>

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

using namespace tp;

namespace {

struct Run {
  double seconds = 0, wall = 0, setup = 0, alpha = 0, beta = 0;
  double cpu = 0;          ///< user + system seconds of the process(es) that ran it
  double rss_mb = 0;       ///< peak RSS of the process that ran it (and of its children)
  double process_wall = 0; ///< wall time of the whole run, process start included
  bool ok = false;
};

double children_cpu()
{
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

/// Peak RSS of this process and of its reaped children (a folded run's platform is read in a grandchild).
double peak_rss_mb()
{
  rusage self{}, kids{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &kids);
  return double(std::max(self.ru_maxrss, kids.ru_maxrss)) / 1024.0;
}

Run run_mode(const models::ClusterProfile& cl, int n, double bytes, sim::FabricMode mode, bool every_host = false)
{
  Run out;
  const double cpu0 = children_cpu();
  const auto w0 = std::chrono::steady_clock::now();
  auto r = run_isolated([&]() -> Result<std::string> {
    sim::AllreduceJob j;
    j.mode = mode;
    j.ranks = n;
    j.bytes = bytes;
    j.local_work = false; // messages only, as SMPI's no-op reduction
    j.fold_alike_hosts = !every_host;
    auto x = sim::run_allreduce(cl, j);
    if (!x.ok()) return x.error();
    return fmt::format("{:.17g} {:.17g} {:.17g} {:.17g} {:.17g} {:.17g}", x->seconds, x->wall_seconds,
                       x->setup_wall_seconds, x->alpha, x->beta, peak_rss_mb());
  });
  if (!r.ok()) {
    std::fprintf(stderr, "%s mode at %d ranks failed: %s\n", sim::to_string(mode), n, r.error().message().c_str());
    return out;
  }
  out.ok = std::sscanf(r.value().c_str(), "%lf %lf %lf %lf %lf %lf", &out.seconds, &out.wall, &out.setup, &out.alpha,
                       &out.beta, &out.rss_mb) == 6;
  out.cpu = children_cpu() - cpu0;
  out.process_wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
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

/// Least-squares slope of log(y) against log(x) over the points with y > 0 (at least two), or NaN.
double growth_exponent(const std::vector<std::pair<double, double>>& xy)
{
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : xy)
    if (x > 0 && y > 0) {
      const double lx = std::log(x), ly = std::log(y);
      n += 1;
      sx += lx;
      sy += ly;
      sxx += lx * lx;
      sxy += lx * ly;
    }
  if (n < 2 || n * sxx - sx * sx <= 0) return std::nan("");
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

} // namespace

int main(int argc, char** argv)
{
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i)
    sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {64, 256, 1024, 4096, 16384, 65536};
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
  // Every host's platform and the runs that compare with it are affordable up to these sizes.
  constexpr int EVERY_HOST_MAX = 8192, SMPI_MAX = 1024, FLOW_MAX = 256;
  std::printf("1 GiB ring allreduce, one rank per %s host (ConnectX-4 EDR); CPU seconds of each run's processes\n\n",
              h.name.c_str());
  std::printf("%6s | %10s %10s %8s | %9s %8s %8s | %9s %8s | %9s %8s | %8s %8s\n", "ranks", "sim[ms]", "a-b[ms]",
              "sim/a-b", "cpu[s]", "wall[s]", "RSS[MB]", "every[s]", "every/", "SMPI[s]", "SMPI/", "flow[s]", "flow/");
  std::vector<std::pair<double, double>> folded_cpu, every_cpu, smpi_wall;
  for (int n : sizes) {
    const auto cl = models::make_cluster(h, n, sw.value(), "node");
    const Run a = run_mode(cl, n, bytes, sim::FabricMode::ANALYTICAL);
    if (!a.ok) continue;
    folded_cpu.emplace_back(n, a.cpu);
    const double ab = collectives::ring_allreduce_alpha_beta(n, bytes, a.alpha, a.beta);
    Run e;
    if (n <= EVERY_HOST_MAX) e = run_mode(cl, n, bytes, sim::FabricMode::ANALYTICAL, true);
    if (e.ok) every_cpu.emplace_back(n, e.cpu);
    if (e.ok && e.seconds != a.seconds)
      std::printf("       | MISMATCH: every host %.17g s, folded %.17g s\n", e.seconds, a.seconds);
    std::pair<double, double> s{0, 0};
    if (smpi && n <= SMPI_MAX) s = run_smpi(n, bytes, a.alpha, a.beta);
    if (s.first > 0) smpi_wall.emplace_back(n, s.first);
    Run f;
    if (n <= FLOW_MAX) f = run_mode(cl, n, bytes, sim::FabricMode::FLOW);
    const double ours = std::max(a.cpu, 1e-3);
    auto col = [](bool ok, double v, const char* f) { return ok ? fmt::format(fmt::runtime(f), v) : std::string("-"); };
    std::printf("%6d | %10.3f %10.3f %8.4f | %9.3f %8.3f %8.0f | %9s %8s | %9s %8s | %8s %8s\n", n, a.seconds * 1e3,
                ab * 1e3, a.seconds / ab, a.cpu, a.process_wall, a.rss_mb, col(e.ok, e.cpu, "{:.3f}").c_str(),
                col(e.ok, e.cpu / ours, "{:.0f}x").c_str(),
                s.first != 0 ? fmt::format("{:.2f}{}", std::abs(s.first), s.first < 0 ? "!" : "").c_str() : "-",
                col(s.first > 0, s.first / ours, "{:.0f}x").c_str(), col(f.ok, f.cpu, "{:.3f}").c_str(),
                col(f.ok, f.cpu / ours, "{:.1f}x").c_str());
    if (smpi && s.second > 0)
      std::printf("       | SMPI simulated %.3f ms (its MPI layer on a cluster with the same rate and latency)\n",
                  s.second * 1e3);
  }
  std::printf("\ngrowth exponent of CPU time (log-log fit): analytical %.2f, every host %.2f, SMPI (wall) %.2f\n",
              growth_exponent(folded_cpu), growth_exponent(every_cpu), growth_exponent(smpi_wall));
  std::printf(
      "\ncpu[s], wall[s], RSS[MB]: the analytical mode (routes read from three hosts, the recurrence), whole process;\n"
      "RSS: the peak of the process that ran it and its children. every[s]: the same with every host's platform built "
      "(results\n"
      "equal, else MISMATCH); every/, SMPI/, flow/: how many times the CPU (SMPI: wall) time of the analytical mode\n"
      "each took ('!' = SMPI failed or timed out after that long). Targets (issue 17): 4,096 ranks in 2 s or less,\n"
      "16,384 in 10 s, 65,536 in 5 min and under 2 GB, growth exponent 1.2 or less. For scale: ASTRA-sim's analytical\n"
      "backend, 1.07 s at 256 ranks and 34.9 s at 1024.\n");
  return 0;
}
