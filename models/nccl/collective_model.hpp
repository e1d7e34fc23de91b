// NCCL-style collectives on a cluster of identical nodes (tensorpath collective, the "collective" scenario job):
// the time of one collective of a given size with ring or (double binary) tree and the LL, LL128 or Simple protocol,
// as NCCL runs them: rings through the node's GPUs over NVLink (or PCIe) and across nodes through the rails (channel
// c leaves its node through NIC c mod NICs, the NIC nearest the GPU), trees as NCCL's double binary tree between
// nodes and a chain inside each. The time is NCCL's latency for the steps (models/nccl/nccl_tuning) plus the bytes
// over the bandwidth the hardware profiles give (the slowest link of the simulator's own paths, models/host_paths:
// NVLink or PCIe between GPUs, the NIC's goodput and its GPU<->NIC path summed over the NICs the channels use), times
// the protocol's share and under its per-channel ceiling. "auto" picks the fastest algorithm and protocol the model
// predicts among those NCCL enables by default. Between the nodes: one non-blocking switch, or a multi-tier topology
// (models/topology_model) on which the algorithm's flows between NIC ports are placed (ring: node i to node i + 1 on
// each channel's rail; tree: both directions of every edge of the channel's tree; alltoall: every pair of GPUs, rail
// aligned through NVLink first where the node has NVLink, as NCCL's PXN) so that the busiest link bounds the
// bandwidth too, with each link's utilisation. No NVLink SHARP (NVLS) or CollNet. Docs: docs/model.md
// ("Collectives as NCCL runs them", "The fabric between the nodes"). Tests: tests/models/nccl_model_test.cpp,
// tests/models/topology_model_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "models/host_model.hpp"
#include "models/nccl/nccl_tuning.hpp"
#include "models/topology_model.hpp"

#include <optional>
#include <string>
#include <vector>

namespace tp::models::nccl {

struct CollectiveSetup {
  HostProfile host; ///< every node
  int nodes = 1;
  int gpus_per_node = 0; ///< 0: every GPU of the host
  Op op = Op::ALL_REDUCE;
  std::optional<Algo> algo;   ///< none: auto
  std::optional<Proto> proto; ///< none: auto
  int channels = 0;           ///< 0: default_channels()
  /// The network between the nodes; none (or one tier): one non-blocking switch.
  std::optional<TopologyProfile> topology;
};

/// One fabric link as an algorithm loads it.
struct LinkUse {
  std::string name;            ///< "leaf3>spine5", "node0.nic2>leaf2", ...
  std::string tier;            ///< "leaf>spine", ...
  double rate = 0;             ///< goodput, bytes/s
  double seconds_per_byte = 0; ///< the link's busy time per byte of the collective's size
};

/// What a multi-tier fabric gives one algorithm: its flows between the nodes' NIC ports placed on the links.
struct FabricUse {
  double seconds_per_byte = 0; ///< the busiest link's busy seconds per byte of the collective's size
  std::string busiest;         ///< that link, in words
  double extra_latency = 0;    ///< seconds an inter-node step adds beyond one switch (extra switch traversals)
  std::vector<LinkUse> links;  ///< the busiest links, most loaded first (at most 8)
  /// Per FabricLink::Tier the topology has (4 with two tiers, 6 with three), the busiest link's seconds per byte (0:
  /// no link of that tier carries anything).
  std::vector<double> tier_seconds_per_byte;
};

/// What the hardware gives a collective, before any protocol: the per-GPU rate of the intra-node hop and the node's
/// rate into the network over the NICs the channels use, with what sets each.
struct CollectiveLinks {
  double intra = 0;       ///< bytes/s one GPU sends to the next of its node (0: one GPU per node)
  std::string intra_what; ///< "NVLink (nvlink4-nvswitch)" or "PCIe ..."
  double net = 0;         ///< bytes/s the node sends into the network (0: one node)
  std::string net_what;   ///< "8 NICs x connectx7-ndr-400g-ib (GPUDirect RDMA)" ...
  int nics_used = 0;
  bool gdr = false; ///< every NIC used sits behind its GPU's PCIe switch (GPUDirect RDMA)
  Hop intra_hop = Hop::NVLINK;
  std::vector<int> nics; ///< the NICs the channels use, channel c on nics[c % size]
  /// With a multi-tier topology: the fabric's bound on each algorithm the setup may run.
  std::optional<FabricUse> ring_fabric, tree_fabric, p2p_fabric;
};

struct CollectivePrediction {
  double seconds = 0;
  Algo algo = Algo::RING;
  Proto proto = Proto::SIMPLE;
  double latency = 0;       ///< seconds of the time that are NCCL's step latencies
  double bus_bandwidth = 0; ///< bytes/s the model gives the algorithm and protocol (NCCL's busBw)
  std::string bottleneck;   ///< what bounds the bandwidth term
  double algbw = 0;         ///< bytes / seconds, as nccl-tests
  double busbw = 0;         ///< algbw times nccl-tests' factor for the op
  /// With a multi-tier topology: the busiest links and their utilisation (busy time over the collective's time).
  struct LinkUtilisation {
    LinkUse link;
    double utilisation = 0;
  };
  std::vector<LinkUtilisation> links;
  /// Per FabricLink::Tier of the topology: its busiest link's utilisation (tier name, utilisation; 0: no bytes).
  std::vector<std::pair<std::string, double>> tier_utilisation;
};

/// The channels NCCL is assumed to open: 16 on nodes with NVLink, else two per NIC (at least 2). An assumption, not
/// NCCL's topology search; --channels overrides it.
int default_channels(const HostProfile& host);

/// nccl-tests' bus bandwidth factor of an op over `ranks` ranks: 2(n-1)/n for all_reduce, (n-1)/n for all_gather,
/// reduce_scatter and alltoall, 1 for broadcast.
double busbw_factor(Op op, int ranks);

/// The size nccl-tests runs for a requested size: a whole number of 4-byte elements, and for all_gather,
/// reduce_scatter and alltoall a whole number of them per rank.
uint64_t effective_bytes(Op op, uint64_t bytes, int ranks);
/// effective_bytes, or an Error (field "size") when the size rounds to nothing: less than one float, per rank for
/// all_gather, reduce_scatter and alltoall.
Result<uint64_t> collective_bytes(Op op, uint64_t bytes, int ranks);

/// Check a setup (a host with GPUs, 1 <= gpus_per_node <= its GPUs, nodes >= 1, channels 1..64, an algorithm and
/// protocol the op supports, a topology that holds the nodes: Topology::build's error, naming the topology's file). The
/// error names the setup's field ("gpus_per_node", "algo", ...; a scenario job's field of the same name,
/// `--gpus-per-node` on the command line), or the host profile's file and its "gpus" or "nics" when the host cannot run
/// a collective at all.
Status check_setup(const CollectiveSetup& s);
/// `s` on `host`, its defaults filled in (gpus_per_node 0: every GPU of the host; channels 0: default_channels) and
/// checked (check_setup).
Result<CollectiveSetup> complete_setup(CollectiveSetup s, const HostProfile& host);
/// The setup's topology built for its nodes; none without a topology of more than one tier or with one node. An Error
/// naming the topology's file and field when it cannot hold the nodes.
Result<std::optional<Topology>> collective_topology(const CollectiveSetup& s);
/// The hardware rates of a (checked) setup, and with a multi-tier topology the fabric's bound on each algorithm.
CollectiveLinks collective_links(const CollectiveSetup& s);
/// One collective of `bytes` (after effective_bytes) on a checked setup.
CollectivePrediction predict(const CollectiveSetup& s, double bytes);
/// The same with the setup's links already computed (collective_links(s)): a size sweep computes them once.
CollectivePrediction predict(const CollectiveSetup& s, const CollectiveLinks& links, double bytes);

} // namespace tp::models::nccl
