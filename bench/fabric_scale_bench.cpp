// How fast the collective model places a collective's flows on a multi-tier fabric (models/topology_model,
// models/nccl/collective_model) as the cluster grows to 16384 GPUs on the three-tier superpod-ndr-3tier: wall time of
// a whole nccl-tests size sweep (8 B .. 8 GiB, x2) for all_reduce (ring and tree placed) and alltoall (every GPU pair),
// against the same sweep behind one switch in the same run (the closed form without flows). Prints ratios; asserts
// nothing. Run: build/bench/fabric_scale_bench
#include "models/catalog.hpp"
#include "models/nccl/collective_model.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>

using namespace tp;
using namespace tp::models;

namespace {

double seconds_of(const auto& f)
{
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// One size sweep; returns a checksum of the predicted times so that nothing is optimised away.
double sweep(const nccl::CollectiveSetup& s)
{
  const auto links = nccl::collective_links(s);
  double sum = 0;
  for (double b = 8; b <= double(8ull << 30); b *= 2)
    sum += nccl::predict(s, links, double(nccl::effective_bytes(s.op, uint64_t(b), s.nodes * s.gpus_per_node))).seconds;
  return sum;
}

} // namespace

int main()
{
  Catalog cat;
  auto host = cat.host("hgx-h100-8gpu");
  auto topo = cat.topology("superpod-ndr-3tier");
  if (!host.ok() || !topo.ok()) {
    std::fprintf(stderr, "fabric_scale_bench: %s\n", (!host.ok() ? host.error() : topo.error()).message().c_str());
    return 1;
  }
  std::printf("# fabric_scale_bench: a 28-size sweep (8 B..8 GiB) on hgx-h100-8gpu nodes, superpod-ndr-3tier\n");
  std::printf("# %6s %6s %-10s %12s %12s %9s %12s\n", "GPUs", "nodes", "op", "fabric ms", "1-switch ms", "ratio",
              "busbw 1G");
  for (int nodes : {32, 128, 512, 2048})
    for (auto op : {nccl::Op::ALL_REDUCE, nccl::Op::ALLTOALL}) {
      if (op == nccl::Op::ALLTOALL && nodes > 512) continue; // nodes^2 x 8 flows: 33 M at 2048 nodes
      nccl::CollectiveSetup s;
      s.nodes = nodes;
      s.op = op;
      auto plain = nccl::complete_setup(s, host.value());
      s.topology = topo.value();
      s.topology->ecmp = EcmpPlacement::HASH;
      auto fabric = nccl::complete_setup(s, host.value());
      if (!plain.ok() || !fabric.ok()) {
        std::fprintf(stderr, "fabric_scale_bench: %s\n",
                     (!plain.ok() ? plain.error() : fabric.error()).message().c_str());
        return 1;
      }
      double check = 0;
      const double t_fabric = seconds_of([&] { check += sweep(fabric.value()); });
      const double t_plain = seconds_of([&] { check += sweep(plain.value()); });
      const double busbw = nccl::predict(fabric.value(), double(1ull << 30)).busbw;
      std::printf("  %6d %6d %-10s %12.2f %12.3f %8.1fx %9.1f GB/s%s\n", nodes * 8, nodes, nccl::to_string(op),
                  t_fabric * 1e3, t_plain * 1e3, t_fabric / t_plain, busbw * 1e-9, check > 0 ? "" : " (no time?)");
    }
  return 0;
}
