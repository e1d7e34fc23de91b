// What NCCL itself publishes about its algorithms and protocols, as tensorpath's collective model uses it: the
// per-protocol base latency and per-hop latency (NVLink, PCI, network), the share of a link's rate each protocol
// reaches (LL: 8-byte stores that carry 4 bytes of data and a 4-byte flag each, and flag polling; LL128: 128-byte
// lines with 120 bytes of data; Simple: the whole line, with a synchronisation per step), the per-channel ceilings
// of its LL128 and tree kernels, and when LL128 is enabled by default. Every number is NCCL's own tuning model,
// NVIDIA/nccl src/graph/tuning.cc at commit b6475625 (the 2.2x series, with Hopper), cited per table in
// nccl_tuning.cpp; none is fitted to a measurement here. Link rates are not taken from NCCL: they come from the
// hardware profiles (models/nccl/collective_model.cpp). Tests: tests/models/nccl_model_test.cpp.
#pragma once

#include "core/common/result.hpp"

#include <optional>
#include <string>
#include <vector>

namespace tp::models::nccl {

enum class Op { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST, ALLTOALL };
/// P2P: NCCL's grouped point-to-point sends (its alltoall), which its tuning model leaves out.
enum class Algo { RING, TREE, P2P };
enum class Proto { LL, LL128, SIMPLE };
/// The kind of link a hop crosses, as NCCL's tuning tables distinguish them.
enum class Hop { NVLINK, PCI, NET };
/// The GPU generation, for NCCL's per-architecture ceilings (Volta's row also stands for anything older).
enum class Arch { VOLTA, AMPERE, HOPPER };

const char* to_string(Op op);   ///< "all_reduce", ...: the nccl-tests binary names without "_perf"
const char* to_string(Algo a);  ///< "ring", "tree", "p2p"
const char* to_string(Proto p); ///< "LL", "LL128", "Simple" (as NCCL_PROTO spells them)
Result<Op> parse_op(const std::string& s);
/// ring, tree or auto (none: the model picks), case-insensitive; the error's field is "algo".
Result<std::optional<Algo>> parse_algo(const std::string& s);
/// LL, LL128, Simple or auto (none), case-insensitive; the error's field is "proto".
Result<std::optional<Proto>> parse_proto(const std::string& s);
/// The architecture of a GPU profile's "architecture" field: hopper and blackwell -> HOPPER, ampere -> AMPERE, any
/// older one -> VOLTA (as NCCL indexes its tables by compute capability >= 9.0, >= 8.0, else).
Arch arch_of(const std::string& architecture);

/// NCCL's base latency of an algorithm and protocol, seconds (paid once per collective).
double base_latency(Algo a, Proto p);
/// NCCL's latency of one step of an algorithm and protocol across a hop of that kind, seconds.
double hop_latency(Hop h, Algo a, Proto p);
/// NCCL's per-step cost of posting to the network proxy on x86 (1 us Intel, 2 us AMD), three times for Simple; an
/// intra-node step of a multi-node ring takes at least this long.
double net_overhead(bool amd_cpu, Proto p);

/// The share of the hardware's bus bandwidth a ring reaches with protocol `p` (LL 1/4, or 1/3 single-node for
/// gathers and broadcasts; LL128 0.92, or 0.7 with one GPU per node; Simple 1), and the tree's (0.92, times 1/3.8 for
/// LL, times 7/9 (one node) or 120/128 for LL128).
double bandwidth_share(Algo a, Proto p, Op op, int nodes, int gpus_per_node);
/// NCCL's ceiling on the bus bandwidth of one channel of algorithm `a` with protocol `p` on `arch` with `nodes` nodes,
/// bytes/s (0: none). LL: llMaxBw (a whole-collective ceiling, not per channel: see ll_ceiling).
double channel_ceiling(Algo a, Proto p, Arch arch, int nodes);
/// NCCL's ceiling on LL's bus bandwidth for the whole collective, bytes/s (llMaxBws: by GPU on one node, by CPU
/// vendor across nodes).
double ll_ceiling(Arch arch, bool amd_cpu, int nodes);
/// NCCL's correction of the tree's bandwidth at medium sizes (treeCorrectionFactor, powers of two from 64 B).
double tree_correction(Proto p, double bytes);
/// NCCL's "plateau effect" of a multi-node Simple ring allreduce: its latency times 1.4 (Ampere and later) or 1.9.
double ring_plateau(Arch arch);

/// Whether NCCL enables LL128 by default: NVLink between the GPUs of a node, a GPU profile's `architecture` that
/// NCCL tested it on (volta, ampere, hopper), and either a single node, the NIC behind the GPU's own PCIe switch, or
/// Hopper (PXN).
bool ll128_enabled_by_default(bool nvlink, const std::string& architecture, int nodes, bool nic_under_gpu_switch);

} // namespace tp::models::nccl
