// `tensorpath pcie-copy`: pinned (or pageable) host<->GPU copy bandwidth, NUMA-local and cross-socket, and with
// --peer GPU<->GPU peer copies (NVLink or PCIe).
#include "apps/commands.hpp"
#include "apps/lib/hw_resolve.hpp"
#include "models/catalog.hpp"
#include "sim/microbench_jobs.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace tp::cli {

namespace {

int run_pcie_copy(const frontend::ParsedArgs& a)
{
  models::Catalog cat;
  auto cluster = frontend::cluster_for(cat, a.get("hw", "broadwell-p100"), 1);
  if (!cluster.ok()) return report_error(cluster.error());
  const models::HostProfile& host = cluster->host(0);
  if (host.gpus.empty()) return report_error(Error::at(host.file, "gpus", "a host with at least one GPU", "none"));
  auto size = a.get_size("size", 32ull << 20);
  auto iters = a.get_int("iters", 10, 1, 1000000);
  auto gpu = a.get_int("gpu", -1, -1, long(host.gpus.size()) - 1);
  auto peer = a.get_int("peer", -1, -1, long(host.gpus.size()) - 1);
  for (auto* r : {&iters, &gpu, &peer})
    if (!r->ok()) return report_error(r->error());
  if (peer.value() >= 0 && gpu.value() == peer.value())
    return report_error(Error::at("", "--peer", "a GPU other than --gpu", std::to_string(peer.value())));
  if (!size.ok()) return report_error(size.error());
  std::vector<sim::CopyJob> jobs;
  for (size_t g = 0; g < host.gpus.size(); ++g) {
    if (gpu.value() >= 0 && size_t(gpu.value()) != g) continue;
    if (peer.value() >= 0 && size_t(peer.value()) == g) continue; // no copy of a GPU to itself
    for (size_t s = 0; s < host.sockets.size(); ++s) {
      sim::CopyJob j;
      j.config.gpu = int(g);
      j.config.host_node = int(s);
      j.config.bytes = size.value();
      j.config.iterations = int(iters.value());
      j.config.pinned = !a.has("pageable");
      j.config.peer_gpu = int(peer.value());
      jobs.push_back(j);
    }
  }
  if (jobs.empty()) // --peer L on a host whose only GPU (or the --gpu asked for) is L
    return report_error(Error::at(host.file, "gpus", "a GPU other than --peer " + std::to_string(peer.value()),
                                  std::to_string(host.gpus.size()) + " GPU(s)"));
  auto r = sim::run_copy_jobs(cluster.value(), jobs);
  if (!r.ok()) return report_error(r.error());
  const bool csv = a.has("csv");
  if (csv)
    std::printf("gpu,gpu_socket,host_node,placement,bytes,memory,h2d_GBps,d2h_GBps,d2d_GBps%s\n",
                peer.value() >= 0 ? ",peer,p2p_GBps" : "");
  else {
    std::printf("Host %s, %s host memory, %llu bytes per copy, %ld copies per direction (simulated)\n",
                host.name.c_str(), a.has("pageable") ? "pageable" : "pinned",
                static_cast<unsigned long long>(size.value()), iters.value());
    std::printf(" %-4s %-14s %-10s %-14s %-12s %-12s %-12s%s\n", "gpu", "model", "host node", "placement", "H2D[GB/s]",
                "D2H[GB/s]", "D2D[GB/s]", peer.value() >= 0 ? " peer P2P[GB/s]" : "");
  }
  for (const auto& c : r.value()) {
    const int gs = host.gpus[size_t(c.config.gpu)].socket;
    const char* placement = gs == c.config.host_node ? "numa-local" : "cross-socket";
    const std::string p2p = c.config.peer_gpu < 0 ? std::string()
                            : csv                 ? fmt::format(",{},{:.4f}", c.config.peer_gpu, c.p2p_bandwidth * 1e-9)
                                  : fmt::format(" {:<4d} {:<9.2f}", c.config.peer_gpu, c.p2p_bandwidth * 1e-9);
    if (csv)
      std::printf("%d,%d,%d,%s,%llu,%s,%.4f,%.4f,%.4f%s\n", c.config.gpu, gs, c.config.host_node, placement,
                  static_cast<unsigned long long>(c.config.bytes), c.config.pinned ? "pinned" : "pageable",
                  c.h2d_bandwidth * 1e-9, c.d2h_bandwidth * 1e-9, c.d2d_bandwidth * 1e-9, p2p.c_str());
    else
      std::printf(" %-4d %-14s %-10d %-14s %-12.2f %-12.2f %-12.2f%s\n", c.config.gpu,
                  host.gpus[size_t(c.config.gpu)].gpu.name.c_str(), c.config.host_node, placement,
                  c.h2d_bandwidth * 1e-9, c.d2h_bandwidth * 1e-9, c.d2d_bandwidth * 1e-9, p2p.c_str());
  }
  return 0;
}

} // namespace

Command pcie_copy_command()
{
  frontend::CommandSpec s;
  s.name = "pcie-copy";
  s.summary = "host<->GPU copy bandwidth (CUDA bandwidthTest look-alike), NUMA-local and cross-socket";
  s.usage = "[--hw HOST] [--gpu K] [--peer L] [--size N] [--iters N] [--pageable] [--csv]";
  s.options = {
      {"hw", 0, true, "HOST", "host (or cluster) profile with GPUs (default broadwell-p100)"},
      {"gpu", 0, true, "K", "only this GPU (default: every GPU)"},
      {"peer", 0, true, "L",
       "also copy each GPU to GPU L, as p2pBandwidthLatencyTest (copies queued on one stream): NVLink where the "
       "host has it, else PCIe"},
      {"size", 's', true, "N", "bytes per copy (default 32M, as bandwidthTest)"},
      {"iters", 'n', true, "N", "copies per direction (default 10)"},
      {"pageable", 0, false, "", "pageable host memory (staged through a pinned buffer) instead of pinned"},
      {"csv", 0, false, "", "print CSV instead of the table"},
  };
  s.details = "For every GPU, one row per NUMA node: the GPU's own socket (numa-local) and the other one\n"
              "(cross-socket, through QPI/UPI).";
  return {s, &run_pcie_copy};
}

} // namespace tp::cli
