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
  if (s.nodes > 1 && l.ring_fabric) { // the busiest fabric link, when it is slower than the NICs
    const double fabric = busbw_factor(s.op, ranks_of(s)) / l.ring_fabric->seconds_per_byte;
    if (fabric < bus * (1 - 1e-9)) {
      bus = fabric;
      what = l.ring_fabric->busiest;
    }
  }
  return bus;
}

double extra_net_latency(const std::optional<FabricUse>& f)
{
  return f ? f->extra_latency : 0.0;
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
    lat += steps * (s.nodes > 1 ? hop_latency(Hop::NET, Algo::RING, p) + extra_net_latency(l.ring_fabric)
                                : hop_latency(l.intra_hop, Algo::RING, p));
  } else {
    double intra_lat = hop_latency(l.intra_hop, Algo::RING, p);
    if (s.nodes > 1) intra_lat = std::max(intra_lat, net_overhead(amd, p));
    lat += std::max(0, steps - inter) * intra_lat +
           inter * (hop_latency(Hop::NET, Algo::RING, p) + extra_net_latency(l.ring_fabric));
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
    if (l.tree_fabric && 1 / l.tree_fabric->seconds_per_byte < algbw * (1 - 1e-9)) {
      algbw = 1 / l.tree_fabric->seconds_per_byte;
      what = l.tree_fabric->busiest;
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
  r.latency = base_latency(Algo::TREE, p) +
              2 * ((s.gpus_per_node - 1) * hop_latency(l.intra_hop, Algo::TREE, p) +
                   log2_nodes * (hop_latency(Hop::NET, Algo::TREE, p) + extra_net_latency(l.tree_fabric)));
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
    if (l.p2p_fabric && bytes * l.p2p_fabric->seconds_per_byte > t * (1 + 1e-9)) {
      t = bytes * l.p2p_fabric->seconds_per_byte;
      r.bottleneck = l.p2p_fabric->busiest;
    }
  }
  r.latency = base_latency(Algo::RING, Proto::SIMPLE) +
              (s.nodes > 1 ? hop_latency(Hop::NET, Algo::RING, Proto::SIMPLE) + extra_net_latency(l.p2p_fabric)
                           : hop_latency(l.intra_hop, Algo::RING, Proto::SIMPLE));
  r.bus_bandwidth = t > 0 ? bytes * (n - 1) / n / t : 0;
  r.seconds = r.latency + t;
  return r;
}

/// The setup's topology built for its nodes; none when it has no topology of more than one tier or one node. An Error
/// when the topology cannot hold the nodes (Topology::build's).
Result<std::optional<Topology>> built_topology(const CollectiveSetup& s)
{
  if (!s.topology || s.topology->tiers < 2 || s.nodes < 2 || s.host.nics.empty()) return std::optional<Topology>();
  // every flow is placed: bound their number (an alltoall has one per pair of GPUs, rail-aligned or not)
  constexpr double MAX_FLOWS = 5e7;
  const double g = s.gpus_per_node, n = s.nodes;
  const double flows = s.op == Op::ALLTOALL ? n * (n - 1) * g * (s.host.nvlink ? 1 : g) : n * std::max(1, s.channels);
  if (flows > MAX_FLOWS)
    return Error::at("", "nodes",
                     fmt::format("at most {:.0g} flows to place on a multi-tier topology ({} over {} nodes makes "
                                 "{:.3g}; one switch has no such limit)",
                                 MAX_FLOWS, to_string(s.op), s.nodes, flows),
                     std::to_string(s.nodes));
  const NicProfile& nic = s.host.nics[0].nic;
  auto t = Topology::build(*s.topology, s.nodes, int(s.host.nics.size()), nic.line_rate, nic.wire_goodput());
  if (!t.ok()) return t.error();
  return std::optional<Topology>(std::move(t.value()));
}

/// The flows `emit` adds, placed on the topology: the busiest link, the extra switch latency, the busiest links.
template <class Emit> FabricUse fabric_use(const Topology& topo, Emit emit)
{
  LinkLoads loads(topo);
  emit(loads);
  FabricUse u;
  int worst = -1;
  u.seconds_per_byte = loads.busiest_seconds(&worst);
  // beyond the one switch NCCL's network latencies stand for: the farthest flow's other switches
  u.extra_latency = std::max(0.0, loads.max_switch_latency() - topo.profile().switch_model.latency);
  auto use = [&](int i) {
    const FabricLink& l = topo.links()[size_t(i)];
    return LinkUse{topo.link_name(i), to_string(l.tier), l.rate, loads.bytes(i) / l.rate};
  };
  if (worst >= 0) {
    const LinkUse w = use(worst);
    u.busiest = fmt::format("fabric link {} ({}, {}, {} topology {})", w.name, w.tier, gbps(w.rate),
                            to_string(topo.profile().ecmp), topo.profile().name);
  }
  for (int i : loads.busiest(8))
    u.links.push_back(use(i));
  u.tier_seconds_per_byte.assign(topo.profile().tiers == 3 ? FabricLink::TIERS : FabricLink::SPINE_UP, 0.0);
  for (size_t i = 0; i < topo.links().size(); ++i) {
    auto& t = u.tier_seconds_per_byte[size_t(topo.links()[i].tier)];
    t = std::max(t, loads.bytes(int(i)) / topo.links()[i].rate);
  }
  return u;
}

/// The fabric's bound on each algorithm the setup may run: the flows between NIC ports per byte of the size.
void add_fabric(const CollectiveSetup& s, CollectiveLinks& l)
{
  auto built = built_topology(s);
  if (!built.ok() || !built.value()) return; // check_setup refuses a topology that cannot be built
  const Topology& topo = *built.value();
  const int nodes = s.nodes, g = s.gpus_per_node, n = ranks_of(s), channels = s.channels;
  auto nic_of_channel = [&](int c) { return l.nics[size_t(c) % l.nics.size()]; };
  if (s.op == Op::ALLTOALL) {
    // Every GPU sends size / n to every GPU of the other nodes. With NVLink, NCCL's PXN first moves the data to the
    // local GPU on the destination GPU's rail, so it leaves and arrives through the NICs of that rail (one flow per
    // source node, destination GPU: g sources' worth); without, each GPU sends through its own NIC.
    const bool pxn = s.host.nvlink.has_value();
    l.p2p_fabric = fabric_use(topo, [&](LinkLoads& loads) {
      for (int a = 0; a < nodes; ++a)
        for (int b = 0; b < nodes; ++b) {
          if (a == b) continue;
          for (int y = 0; y < g; ++y) {
            const int ky = s.host.nic_for_gpu(y);
            if (pxn) {
              loads.add({a, ky, b, ky, uint32_t(y), double(g) / n});
              continue;
            }
            for (int x = 0; x < g; ++x)
              loads.add({a, s.host.nic_for_gpu(x), b, ky, uint32_t(x * g + y), 1.0 / n});
          }
        }
    });
    return;
  }
  // Ring: channel c's bytes (busbw_factor x size / channels) go from node i to node i + 1 through the channel's NIC at
  // both ends (the same rail); broadcast's chain does not close.
  const double per_channel = busbw_factor(s.op, n) / channels;
  l.ring_fabric = fabric_use(topo, [&](LinkLoads& loads) {
    for (int c = 0; c < channels; ++c)
      for (int i = 0; i < nodes; ++i) {
        if (s.op == Op::BROADCAST && i == nodes - 1) continue;
        const int k = nic_of_channel(c);
        loads.add({i, k, (i + 1) % nodes, k, uint32_t(c), per_channel});
      }
  });
  if (s.op == Op::ALL_REDUCE && (!s.algo || *s.algo == Algo::TREE)) {
    // Tree: NCCL duplicates its channels for the two trees (src/init.cc: channel c + n runs the second tree on
    // channel c's NICs), so the first half of the channels runs the first tree and the second half the second, each
    // channel with size / channels, up and down every edge at once.
    const std::vector<TreeNode> trees[2] = {binary_tree(nodes), second_tree(nodes)};
    const int half = (channels + 1) / 2;
    l.tree_fabric = fabric_use(topo, [&](LinkLoads& loads) {
      for (int c = 0; c < channels; ++c) {
        const int k = nic_of_channel(c); // the NICs the node's network rate counts (c and c + 8 share one of 8)
        const int tree = channels > 1 && c >= half ? 1 : 0;
        for (int i = 0; i < nodes; ++i) {
          const int parent = trees[tree][size_t(i)].parent;
          if (parent < 0) continue;
          loads.add({i, k, parent, k, uint32_t(c), 1.0 / channels});
          loads.add({parent, k, i, k, uint32_t(c), 1.0 / channels});
        }
      }
    });
  }
}

const std::optional<FabricUse>& fabric_of(const CollectiveLinks& l, Algo a)
{
  return a == Algo::TREE ? l.tree_fabric : a == Algo::P2P ? l.p2p_fabric : l.ring_fabric;
}

} // namespace

Result<std::optional<Topology>> collective_topology(const CollectiveSetup& s)
{
  return built_topology(s);
}

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
  if (auto t = built_topology(s); !t.ok()) return t.error();
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
    l.nics = used;
    l.gdr = all_gdr;
    l.net_what =
        fmt::format("{} NIC{} x {} ({}, {} per node)", used.size(), used.size() == 1 ? "" : "s",
                    h.nics[size_t(used[0])].nic.name, all_gdr ? "GPUDirect RDMA" : "through host memory", gbps(l.net));
    add_fabric(s, l);
  }
  return l;
}

CollectivePrediction predict(const CollectiveSetup& s, double bytes)
{
  return predict(s, collective_links(s), bytes);
}

CollectivePrediction predict(const CollectiveSetup& s, const CollectiveLinks& l, double bytes)
{
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
  if (const auto& f = fabric_of(l, best.algo); f && best.seconds > 0) {
    for (const auto& u : f->links)
      best.links.push_back({u, u.seconds_per_byte * bytes / best.seconds});
    for (size_t t = 0; t < f->tier_seconds_per_byte.size(); ++t)
      best.tier_utilisation.emplace_back(to_string(FabricLink::Tier(t)),
                                         f->tier_seconds_per_byte[t] * bytes / best.seconds);
  }
  return best;
}

} // namespace tp::models::nccl
