// NCCL's published tuning model (see the header). Source of every table: NVIDIA/nccl src/graph/tuning.cc at commit
// b6475625fbcaa2c3c0e50eed2fa1255d7514d4a2 (baseLat, hwLat, llMaxBws, perChMaxRingLL128Bws, perChMaxTreeLL128Bws,
// perChMaxTreeBws, getNetOverhead, the "model refinements" in ncclTopoTuneModel, treeCorrectionFactor and the ring's
// plateau in ncclTopoGetAlgoTime); the LL128 default from the same file's protocol enable rules.
#include "models/nccl/nccl_tuning.hpp"
#include "core/common/suggest.hpp"

#include <cmath>

namespace tp::models::nccl {

namespace {

constexpr double US = 1e-6;
constexpr double GBPS = 1e9;

// [algo: tree, ring][proto: LL, LL128, Simple], microseconds.
constexpr double BASE_LAT[2][3] = {{6.8, 14.0, 0}, {6.6, 14.0, 8.4}};
// [hop: NVLink, PCI, NET][algo: tree, ring][proto], microseconds.
constexpr double HW_LAT[3][2][3] = {
    {{.6, 1.25, 28}, {.6, 1.9, 3.4}},
    {{1.0, 1.9, 28}, {1.0, 2.5, 5.7}},
    {{5.0, 8.5, 28}, {2.7, 4.0, 14.0}},
};
// [arch or, across nodes, CPU vendor (Intel, AMD)][nodes: 1, 2, more], GB/s.
constexpr double LL_MAX_BW[3][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}};
// [arch: Volta, Ampere, Hopper][nodes: 1, 2, more], GB/s per channel.
constexpr double RING_LL128_MAX_BW[3][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}};
constexpr double TREE_LL128_MAX_BW[3][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}};
constexpr double TREE_MAX_BW[3][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}};
// [proto][log2(bytes / 64)], 64 B .. 256 MiB.
constexpr double TREE_CORRECTION[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
};

int algo_index(Algo a)
{
  return a == Algo::TREE ? 0 : 1;
}
int proto_index(Proto p)
{
  return p == Proto::LL ? 0 : p == Proto::LL128 ? 1 : 2;
}
int nodes_index(int nodes)
{
  return nodes <= 1 ? 0 : nodes == 2 ? 1 : 2;
}
int arch_index(Arch a)
{
  return a == Arch::HOPPER ? 2 : a == Arch::AMPERE ? 1 : 0;
}

} // namespace

const char* to_string(Op op)
{
  switch (op) {
  case Op::ALL_REDUCE:
    return "all_reduce";
  case Op::ALL_GATHER:
    return "all_gather";
  case Op::REDUCE_SCATTER:
    return "reduce_scatter";
  case Op::BROADCAST:
    return "broadcast";
  case Op::ALLTOALL:
    return "alltoall";
  }
  return "?";
}

const char* to_string(Algo a)
{
  return a == Algo::TREE ? "tree" : a == Algo::P2P ? "p2p" : "ring";
}

const char* to_string(Proto p)
{
  return p == Proto::LL ? "LL" : p == Proto::LL128 ? "LL128" : "Simple";
}

Result<Op> parse_op(const std::string& s)
{
  for (Op op : {Op::ALL_REDUCE, Op::ALL_GATHER, Op::REDUCE_SCATTER, Op::BROADCAST, Op::ALLTOALL})
    if (to_lower(s) == to_string(op)) return op;
  return Error::at("", "op", "all_reduce, all_gather, reduce_scatter, broadcast or alltoall", "\"" + s + "\"");
}

Result<std::optional<Algo>> parse_algo(const std::string& s)
{
  const std::string l = to_lower(s);
  if (l == "auto") return std::optional<Algo>();
  if (l == "ring") return std::optional<Algo>(Algo::RING);
  if (l == "tree") return std::optional<Algo>(Algo::TREE);
  return Error::at("", "algo", "ring, tree or auto", "\"" + s + "\"");
}

Result<std::optional<Proto>> parse_proto(const std::string& s)
{
  if (to_lower(s) == "auto") return std::optional<Proto>();
  for (Proto p : {Proto::LL, Proto::LL128, Proto::SIMPLE})
    if (to_lower(s) == to_lower(to_string(p))) return std::optional<Proto>(p);
  return Error::at("", "proto", "LL, LL128, Simple or auto", "\"" + s + "\"");
}

Arch arch_of(const std::string& architecture)
{
  const std::string a = to_lower(architecture);
  if (a == "hopper" || a == "blackwell") return Arch::HOPPER;
  if (a == "ampere") return Arch::AMPERE;
  return Arch::VOLTA;
}

double base_latency(Algo a, Proto p)
{
  return BASE_LAT[algo_index(a)][proto_index(p)] * US;
}

double hop_latency(Hop h, Algo a, Proto p)
{
  return HW_LAT[int(h)][algo_index(a)][proto_index(p)] * US;
}

double net_overhead(bool amd_cpu, Proto p)
{
  return (amd_cpu ? 2.0 : 1.0) * (p == Proto::SIMPLE ? 3 : 1) * US;
}

double bandwidth_share(Algo a, Proto p, Op op, int nodes, int gpus_per_node)
{
  if (a == Algo::RING) {
    if (p == Proto::LL) return (nodes > 1 || op == Op::ALL_REDUCE) ? 1.0 / 4.0 : 1.0 / 3.0;
    if (p == Proto::LL128) return gpus_per_node < 2 ? 0.7 : 0.92;
    return 1.0;
  }
  double share = 0.92;
  if (p == Proto::LL) share *= 1.0 / 3.8;
  if (p == Proto::LL128) share *= nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
  return share;
}

double channel_ceiling(Algo a, Proto p, Arch arch, int nodes)
{
  const int ai = arch_index(arch), ni = nodes_index(nodes);
  if (a == Algo::RING) return p == Proto::LL128 ? RING_LL128_MAX_BW[ai][ni] * GBPS : 0;
  if (p == Proto::LL128) return TREE_LL128_MAX_BW[ai][ni] * GBPS;
  return p == Proto::SIMPLE ? TREE_MAX_BW[ai][ni] * GBPS : 0;
}

double ll_ceiling(Arch arch, bool amd_cpu, int nodes)
{
  const int row = nodes <= 1 ? arch_index(arch) : (amd_cpu ? 1 : 0);
  return LL_MAX_BW[row][nodes_index(nodes)] * GBPS;
}

double tree_correction(Proto p, double bytes)
{
  const double units = std::floor(bytes / 64);
  if (units < 1) return TREE_CORRECTION[proto_index(p)][0];
  const int log = int(std::floor(std::log2(units)));
  return log < 23 ? TREE_CORRECTION[proto_index(p)][log] : 1.0;
}

double ring_plateau(Arch arch)
{
  return arch == Arch::VOLTA ? 1.9 : 1.4;
}

bool ll128_enabled_by_default(bool nvlink, const std::string& architecture, int nodes, bool nic_under_gpu_switch)
{
  const std::string a = to_lower(architecture);
  if (!nvlink || (a != "volta" && a != "ampere" && a != "hopper")) return false;
  return nodes == 1 || nic_under_gpu_switch || a == "hopper";
}

} // namespace tp::models::nccl
