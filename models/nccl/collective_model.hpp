// NCCL-style collectives on a cluster of identical nodes (tensorpath collective, the "collective" scenario job):
// the time of one collective of a given size with ring or (double binary) tree and the LL, LL128 or Simple protocol,
// as NCCL runs them: rings through the node's GPUs over NVLink (or PCIe) and across nodes through the rails (channel
// c leaves its node through NIC c mod NICs, the NIC nearest the GPU), trees as NCCL's double binary tree between
// nodes and a chain inside each. The time is NCCL's latency for the steps (models/nccl/nccl_tuning) plus the bytes
// over the bandwidth the hardware profiles give (the slowest link of the simulator's own paths, models/host_paths:
// NVLink or PCIe between GPUs, the NIC's goodput and its GPU<->NIC path summed over the NICs the channels use), times
// the protocol's share and under its per-channel ceiling. "auto" picks the fastest algorithm and protocol the model
// predicts among those NCCL enables by default. Closed form: no fabric contention (one non-blocking switch between the
// nodes), no NVLink SHARP (NVLS) or CollNet. Docs: docs/model.md
// ("Collectives as NCCL runs them"). Tests: tests/models/nccl_model_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "models/host_model.hpp"
#include "models/nccl/nccl_tuning.hpp"

#include <optional>
#include <string>

namespace tp::models::nccl {

struct CollectiveSetup {
  HostProfile host; ///< every node
  int nodes = 1;
  int gpus_per_node = 0; ///< 0: every GPU of the host
  Op op = Op::ALL_REDUCE;
  std::optional<Algo> algo;   ///< none: auto
  std::optional<Proto> proto; ///< none: auto
  int channels = 0;           ///< 0: default_channels()
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
/// protocol the op supports). The error names the setup's field ("gpus_per_node", "algo", ...; a scenario job's
/// field of the same name, `--gpus-per-node` on the command line), or the host profile's file and its "gpus" or
/// "nics" when the host cannot run a collective at all.
Status check_setup(const CollectiveSetup& s);
/// `s` on `host`, its defaults filled in (gpus_per_node 0: every GPU of the host; channels 0: default_channels) and
/// checked (check_setup).
Result<CollectiveSetup> complete_setup(CollectiveSetup s, const HostProfile& host);
/// The hardware rates of a (checked) setup.
CollectiveLinks collective_links(const CollectiveSetup& s);
/// One collective of `bytes` (after effective_bytes) on a checked setup.
CollectivePrediction predict(const CollectiveSetup& s, double bytes);

} // namespace tp::models::nccl
