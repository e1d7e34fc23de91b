// NCCL-style collective times from the hardware profiles and NCCL's tuning model (see the header).
#include "models/nccl/collective_model.hpp"

#include "core/common/suggest.hpp"
#include "models/host_paths.hpp"
#include "models/nccl/double_binary_tree.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace tp::models::nccl {

namespace {

constexpr double INF = std::numeric_limits<double>::infinity();

std::string gbps(double bytes_per_second)
{
  return fmt::format("{:.1f} GB/s", bytes_per_second * 1e-9);
}

bool amd_cpu(const HostProfile& h)
{
  // NCCL asks the CPU's vendor; a profile names its CPU model ("epyc-7742", "AMD EPYC ...").
  if (h.sockets.empty()) return false;
  const std::string n = to_lower(h.sockets[0].cpu.name);
  return n.find("epyc") != std::string::npos || n.find("amd") != std::string::npos;
}

/// GPU a -> GPU b as NCCL moves data between them: over NVLink, or PCIe peer-to-peer on one socket; across sockets
/// NCCL does not use PCIe peer-to-peer (its default P2P level stops below the CPU interconnect) but its SHM transport
/// through host memory on b's socket, both halves at once (as the simulator stages such a copy). The slowest link of
/// the paths (models/host_paths).
double gpu_peer_rate(const HostProfile& h, int a, int b)
{
  const int sb = h.gpus[size_t(b)].socket;
  if (h.nvlink || h.gpus[size_t(a)].socket == sb) return slowest_rate(h, gpu_to_gpu(h, a, b));
  return std::min(slowest_rate(h, gpu_to_host(h, a, sb)), slowest_rate(h, host_to_gpu(h, sb, b)));
}

/// GPU `g` <-> NIC `k`, the slower direction, as NCCL's network transport moves it: GPUDirect RDMA when the two sit
/// behind one PCIe switch (NCCL_NET_GDR_LEVEL's default, PXB), else through a bounce buffer in host memory on the
/// NIC's socket (the GPU writes it and the NIC reads it; the NIC writes it and the GPU reads it). The NIC's wire
/// goodput and the slowest link of the paths (models/host_paths).
double nic_path_rate(const HostProfile& h, int g, int k, bool& gdr)
{
  gdr = h.same_pcie_switch(g, k);
  const Location gpu = Location::gpu(g), host = Location::host(h.nics[size_t(k)].socket);
  double send = slowest_rate(h, nic_reads(h, k, gdr ? gpu : host));
  double receive = slowest_rate(h, nic_writes(h, k, gdr ? gpu : host));
  if (!gdr) {
    send = std::min(send, slowest_rate(h, gpu_to_host(h, g, host.index)));
    receive = std::min(receive, slowest_rate(h, host_to_gpu(h, host.index, g)));
  }
  return std::min({h.nics[size_t(k)].nic.wire_goodput(), send, receive});
}

int ranks_of(const CollectiveSetup& s)
{
  return s.nodes * s.gpus_per_node;
}

/// The (algorithm, protocol) pairs a setup may run: the ones asked for, else those NCCL enables by default.
std::vector<std::pair<Algo, Proto>> candidates(const CollectiveSetup& s, const CollectiveLinks& links)
{
  std::vector<Algo> algos;
  if (s.algo)
    algos = {*s.algo};
  else if (s.op == Op::ALL_REDUCE)
    algos = {Algo::RING, Algo::TREE};
  else
    algos = {Algo::RING};
  std::vector<Proto> protos;
  if (s.proto) {
    protos = {*s.proto};
  } else {
    protos = {Proto::LL, Proto::SIMPLE};
    if (ll128_enabled_by_default(s.host.nvlink.has_value(), s.host.gpus[0].gpu.architecture, s.nodes, links.gdr))
      protos.push_back(Proto::LL128);
  }
  std::vector<std::pair<Algo, Proto>> out;
  for (Algo a : algos)
    for (Proto p : protos)
      out.emplace_back(a, p);
  return out;
}

/// The hardware bound of a ring, as a bus bandwidth: the slower of the intra-node hop and the node's network share.
double ring_hardware(const CollectiveSetup& s, const CollectiveLinks& l, std::string& what)
{
  double bus = INF;
  if (s.gpus_per_node > 1) {
    bus = l.intra;
    what = l.intra_what;
  }
  if (s.nodes > 1 && l.net < bus) {
    bus = l.net;
    what = l.net_what;
  }
  return bus;
}

CollectivePrediction ring(const CollectiveSetup& s, const CollectiveLinks& l, Proto p, double bytes)
{
  const int n = ranks_of(s);
  const Arch arch = arch_of(s.host.gpus[0].gpu.architecture);
  const bool amd = amd_cpu(s.host);
  CollectivePrediction r;
  r.algo = Algo::RING;
  r.proto = p;
  std::string what;
  double bus = ring_hardware(s, l, what) * bandwidth_share(Algo::RING, p, s.op, s.nodes, s.gpus_per_node);
  if (p != Proto::SIMPLE) what += fmt::format(" x {}'s share", to_string(p));
  if (p == Proto::LL && bus > ll_ceiling(arch, amd, s.nodes)) {
    bus = ll_ceiling(arch, amd, s.nodes);
    what = "NCCL's LL ceiling (" + gbps(bus) + ")";
  }
  const double per_channel = channel_ceiling(Algo::RING, p, arch, s.nodes);
  if (per_channel > 0 && bus > per_channel * s.channels) {
    bus = per_channel * s.channels;
    what = fmt::format("NCCL's {} ceiling ({} per channel x {} channels)", to_string(p), gbps(per_channel), s.channels);
  }
  const int steps = s.op == Op::ALL_REDUCE ? 2 * (n - 1) : s.op == Op::BROADCAST ? n : n - 1;
  const int inter = s.nodes <= 1             ? 0
                    : s.op == Op::ALL_REDUCE ? 2 * s.nodes
                    : s.op == Op::BROADCAST  ? s.nodes
                                             : s.nodes - 1;
  double lat = base_latency(Algo::RING, p);
  if (s.op == Op::BROADCAST) {
    lat += steps * hop_latency(s.nodes > 1 ? Hop::NET : l.intra_hop, Algo::RING, p);
  } else {
    double intra_lat = hop_latency(l.intra_hop, Algo::RING, p);
    if (s.nodes > 1) intra_lat = std::max(intra_lat, net_overhead(amd, p));
    lat += std::max(0, steps - inter) * intra_lat + inter * hop_latency(Hop::NET, Algo::RING, p);
  }
  if (s.op == Op::ALL_REDUCE && p == Proto::SIMPLE && s.nodes > 1 && bytes / (double(s.channels) * n) >= 64)
    lat *= ring_plateau(arch);
  const double algbw = bus * n / steps;
  r.latency = lat;
  r.bus_bandwidth = bus;
  r.bottleneck = what;
  r.seconds = lat + bytes / algbw;
  return r;
}

/// The most bytes any node sends over the network per byte of an allreduce on NCCL's double binary tree. Each tree
/// carries half the data, up every edge (reduce) and down it (broadcast) at once, so a node sends as much as it
/// receives: half the size per edge it has in each tree.
double tree_node_load(int nodes)
{
  std::vector<double> sent(size_t(nodes), 0);
  for (const auto& tree : {binary_tree(nodes), second_tree(nodes)})
    for (int i = 0; i < nodes; ++i) {
      const auto& t = tree[size_t(i)];
      sent[size_t(i)] += 0.5 * double((t.parent >= 0 ? 1 : 0) + t.children.size());
    }
  return *std::max_element(sent.begin(), sent.end());
}

CollectivePrediction tree(const CollectiveSetup& s, const CollectiveLinks& l, Proto p, double bytes)
{
  const Arch arch = arch_of(s.host.gpus[0].gpu.architecture);
  CollectivePrediction r;
  r.algo = Algo::TREE;
  r.proto = p;
  // Algorithm bandwidth the hardware allows: inside a node every GPU forwards the data up the chain and back down in
  // both trees (twice the size over its link); across nodes the busiest node's share.
  double algbw = INF;
  std::string what;
  if (s.gpus_per_node > 1) {
    algbw = l.intra / 2;
    what = l.intra_what;
  }
  if (s.nodes > 1) {
    const double load = tree_node_load(s.nodes);
    if (l.net / load < algbw) {
      algbw = l.net / load;
      what = l.net_what + fmt::format(" (busiest tree node moves {:.2g}x the size)", load);
    }
  }
  algbw *= bandwidth_share(Algo::TREE, p, s.op, s.nodes, s.gpus_per_node);
  what += fmt::format(" x tree/{} share", to_string(p));
  // NCCL's ceilings are on its bus bandwidth, twice the tree's algorithm bandwidth.
  const double per_channel = channel_ceiling(Algo::TREE, p, arch, s.nodes);
  if (per_channel > 0 && 2 * algbw > per_channel * s.channels) {
    algbw = per_channel * s.channels / 2;
    what = fmt::format("NCCL's tree/{} ceiling ({} per channel x {} channels)", to_string(p), gbps(per_channel),
                       s.channels);
  }
  if (p == Proto::LL && 2 * algbw > ll_ceiling(arch, amd_cpu(s.host), s.nodes)) {
    algbw = ll_ceiling(arch, amd_cpu(s.host), s.nodes) / 2;
    what = "NCCL's LL ceiling";
  }
  r.bus_bandwidth = 2 * algbw;
  algbw *= tree_correction(p, bytes);
  const int log2_nodes = int(std::floor(std::log2(double(s.nodes))));
  r.latency = base_latency(Algo::TREE, p) + 2 * ((s.gpus_per_node - 1) * hop_latency(l.intra_hop, Algo::TREE, p) +
                                                 log2_nodes * hop_latency(Hop::NET, Algo::TREE, p));
  r.bottleneck = what;
  r.seconds = r.latency + bytes / algbw;
  return r;
}

/// Alltoall as NCCL runs it: grouped point-to-point sends and receives of size / ranks to every other rank, Simple
/// protocol; the slower of each GPU's intra-node share and the node's network share.
CollectivePrediction alltoall(const CollectiveSetup& s, const CollectiveLinks& l, double bytes)
{
  const int n = ranks_of(s);
  const int g = s.gpus_per_node;
  CollectivePrediction r;
  r.algo = Algo::P2P;
  r.proto = Proto::SIMPLE;
  double t = 0;
  if (g > 1) {
    t = (g - 1) * bytes / n / l.intra;
    r.bottleneck = l.intra_what;
  }
  if (s.nodes > 1) {
    const double net = double(g) * (n - g) * bytes / n / l.net;
    if (net > t) {
      t = net;
      r.bottleneck = l.net_what;
    }
  }
  r.latency = base_latency(Algo::RING, Proto::SIMPLE) +
              hop_latency(s.nodes > 1 ? Hop::NET : l.intra_hop, Algo::RING, Proto::SIMPLE);
  r.bus_bandwidth = t > 0 ? bytes * (n - 1) / n / t : 0;
  r.seconds = r.latency + t;
  return r;
}

} // namespace

int default_channels(const HostProfile& host)
{
  if (host.nvlink) return 16;
  return std::max(2, 2 * int(host.nics.size()));
}

double busbw_factor(Op op, int ranks)
{
  const double n = ranks;
  switch (op) {
  case Op::ALL_REDUCE:
    return 2 * (n - 1) / n;
  case Op::BROADCAST:
    return 1;
  default:
    return (n - 1) / n;
  }
}

uint64_t effective_bytes(Op op, uint64_t bytes, int ranks)
{
  const uint64_t unit = (op == Op::ALL_REDUCE || op == Op::BROADCAST) ? 4 : 4 * uint64_t(std::max(1, ranks));
  return bytes / unit * unit;
}

Result<uint64_t> collective_bytes(Op op, uint64_t bytes, int ranks)
{
  const uint64_t b = effective_bytes(op, bytes, ranks);
  if (b > 0) return b;
  const bool per_rank = op != Op::ALL_REDUCE && op != Op::BROADCAST;
  return Error::at("", "size",
                   fmt::format("at least {} bytes for {} over {} ranks (one float{})",
                               per_rank ? 4 * uint64_t(ranks) : 4, to_string(op), ranks, per_rank ? " per rank" : ""),
                   std::to_string(bytes));
}

Status check_setup(const CollectiveSetup& s)
{
  const auto& h = s.host;
  if (h.gpus.empty())
    return Error::at(h.file.empty() ? h.name : h.file, "gpus", "a host profile with GPUs (the collective runs on them)",
                     "none");
  if (s.gpus_per_node < 1 || s.gpus_per_node > int(h.gpus.size()))
    return Error::at("", "gpus_per_node", fmt::format("1 to {} (the GPUs of {})", h.gpus.size(), h.name),
                     std::to_string(s.gpus_per_node));
  if (s.nodes < 1) return Error::at("", "nodes", "at least 1", std::to_string(s.nodes));
  if (ranks_of(s) < 2)
    return Error::at("", "nodes", "at least 2 GPUs in all (a collective over one GPU is a copy)", "1");
  if (s.channels < 1 || s.channels > 64) return Error::at("", "channels", "1 to 64", std::to_string(s.channels));
  if (s.op == Op::ALLTOALL) { // NCCL's point-to-point sends, Simple protocol: nothing to choose
    if (s.algo) return Error::at("", "algo", "auto: alltoall runs as point-to-point sends", to_string(*s.algo));
    if (s.proto && *s.proto != Proto::SIMPLE)
      return Error::at("", "proto", "Simple or auto: alltoall is modelled as point-to-point sends with Simple",
                       to_string(*s.proto));
  } else if (s.algo == Algo::TREE && s.op != Op::ALL_REDUCE) {
    return Error::at("", "algo", std::string("ring or auto: NCCL runs ") + to_string(s.op) + " on rings only", "tree");
  }
  if (s.nodes > 1 && h.nics.empty())
    return Error::at(h.file.empty() ? h.name : h.file, "nics", "a host profile with NICs (the nodes talk through them)",
                     "none");
  return ok_status();
}

Result<CollectiveSetup> complete_setup(CollectiveSetup s, const HostProfile& host)
{
  s.host = host;
  if (s.gpus_per_node == 0) s.gpus_per_node = int(host.gpus.size());
  if (s.channels == 0) s.channels = default_channels(host);
  if (auto st = check_setup(s); !st.ok()) return st.error();
  return s;
}

CollectiveLinks collective_links(const CollectiveSetup& s)
{
  const auto& h = s.host;
  CollectiveLinks l;
  if (s.gpus_per_node > 1) {
    // The ring's hops inside the node: GPU g to GPU g + 1, the last back to the first; the slowest sets the rate.
    l.intra = INF;
    for (int g = 0; g < s.gpus_per_node; ++g)
      l.intra = std::min(l.intra, gpu_peer_rate(h, g, (g + 1) % s.gpus_per_node));
    l.intra_hop = h.nvlink ? Hop::NVLINK : Hop::PCI;
    l.intra_what = h.nvlink
                       ? "NVLink (" + h.nvlink->name + ", " + gbps(l.intra) + " per GPU)"
                       : "PCIe, peer-to-peer or through host memory across sockets (" + gbps(l.intra) + " per GPU)";
  }
  if (s.nodes > 1) {
    // Channel c leaves the node through the NIC nearest to one of the job's GPUs: the distinct NICs of the GPUs in
    // order, as many as there are channels.
    std::vector<int> used;
    bool all_gdr = true;
    for (int g = 0; g < s.gpus_per_node && int(used.size()) < s.channels; ++g) {
      const int k = h.nic_for_gpu(g);
      if (std::find(used.begin(), used.end(), k) != used.end()) continue;
      used.push_back(k);
      bool gdr = false;
      l.net += nic_path_rate(h, g, k, gdr);
      all_gdr = all_gdr && gdr;
    }
    l.nics_used = int(used.size());
    l.gdr = all_gdr;
    l.net_what =
        fmt::format("{} NIC{} x {} ({}, {} per node)", used.size(), used.size() == 1 ? "" : "s",
                    h.nics[size_t(used[0])].nic.name, all_gdr ? "GPUDirect RDMA" : "through host memory", gbps(l.net));
  }
  return l;
}

CollectivePrediction predict(const CollectiveSetup& s, double bytes)
{
  const CollectiveLinks l = collective_links(s);
  CollectivePrediction best;
  if (s.op == Op::ALLTOALL) {
    best = alltoall(s, l, bytes);
  } else {
    best.seconds = INF;
    for (const auto& [a, p] : candidates(s, l)) {
      const auto c = a == Algo::TREE ? tree(s, l, p, bytes) : ring(s, l, p, bytes);
      if (c.seconds < best.seconds) best = c;
    }
  }
  best.algbw = best.seconds > 0 ? bytes / best.seconds : 0;
  best.busbw = best.algbw * busbw_factor(s.op, ranks_of(s));
  return best;
}

} // namespace tp::models::nccl
