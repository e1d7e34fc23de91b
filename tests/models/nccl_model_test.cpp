// The NCCL-style collective model (models/nccl): NCCL's double binary tree as its source draws it, nccl-tests' size
// rounding and bus bandwidth factors, and predictions bounded by the hardware profiles they are built from.
#include "models/catalog.hpp"
#include "models/nccl/collective_model.hpp"
#include "models/nccl/double_binary_tree.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using namespace tp;
using namespace tp::models::nccl;

namespace {

models::HostProfile host(const std::string& name)
{
  models::Catalog cat;
  auto h = cat.host(name);
  REQUIRE(h.ok());
  return h.value();
}

CollectiveSetup setup(const std::string& hw, int nodes, Op op = Op::ALL_REDUCE)
{
  CollectiveSetup s;
  s.host = host(hw);
  s.nodes = nodes;
  s.gpus_per_node = int(s.host.gpus.size());
  s.op = op;
  s.channels = default_channels(s.host);
  REQUIRE(check_setup(s).ok());
  return s;
}

/// Whether `t` is one tree over all nodes: one root, every other node's parent lists it as a child.
bool is_tree(const std::vector<TreeNode>& t)
{
  int roots = 0;
  size_t edges = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].parent < 0)
      ++roots;
    else {
      const auto& p = t[size_t(t[i].parent)].children;
      if (std::find(p.begin(), p.end(), int(i)) == p.end()) return false;
    }
    edges += t[i].children.size();
    if (t[i].children.size() > 2) return false;
  }
  return roots == 1 && edges + 1 == t.size();
}

} // namespace

TEST_CASE("the first tree is NCCL's binary tree over 14 nodes as trees.cc draws it")
{
  const auto t = binary_tree(14);
  // 0 -> 8; 8 -> 4, 12; 4 -> 2, 6; 12 -> 10, 13; 2 -> 1, 3; 6 -> 5, 7; 10 -> 9, 11.
  const int parent[14] = {-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 12, 10, 8, 12};
  for (int i = 0; i < 14; ++i)
    CHECK(t[size_t(i)].parent == parent[i]);
  CHECK(t[0].children == std::vector<int>{8});
  CHECK(t[12].children == std::vector<int>{10, 13});
}

TEST_CASE("the second tree mirrors (even node counts) or shifts (odd) the first: few nodes are inner in both")
{
  CHECK(second_tree(14)[13].parent == -1); // mirrored: node 13 is the root
  CHECK(second_tree(13)[1].parent == -1);  // shifted by one: node 1 is the root
  for (int n = 1; n <= 64; ++n) {
    INFO("nodes " << n);
    const auto a = binary_tree(n), b = second_tree(n);
    REQUIRE(is_tree(a));
    REQUIRE(is_tree(b));
    // Even: inner nodes are the even ones in the first tree and the odd ones in the second. Odd: the shift makes node
    // 0 (the first root, one child) the image of node n - 1, inner in the first tree: the one node inner in both.
    int both = 0;
    for (int i = 0; i < n; ++i)
      both += !a[size_t(i)].children.empty() && !b[size_t(i)].children.empty();
    CHECK(both == (n % 2 == 1 && n > 1 ? 1 : 0));
  }
}

TEST_CASE("sizes and bus bandwidth factors are nccl-tests'")
{
  CHECK(busbw_factor(Op::ALL_REDUCE, 8) == Approx(2.0 * 7 / 8));
  CHECK(busbw_factor(Op::ALL_GATHER, 8) == Approx(7.0 / 8));
  CHECK(busbw_factor(Op::REDUCE_SCATTER, 16) == Approx(15.0 / 16));
  CHECK(busbw_factor(Op::ALLTOALL, 4) == Approx(3.0 / 4));
  CHECK(busbw_factor(Op::BROADCAST, 8) == 1);
  CHECK(effective_bytes(Op::ALL_REDUCE, 10, 8) == 8);
  CHECK(effective_bytes(Op::ALL_GATHER, 100, 8) == 96); // 3 floats per rank
  CHECK(effective_bytes(Op::ALL_GATHER, 16, 8) == 0);   // less than a float per rank
  REQUIRE(collective_bytes(Op::ALL_GATHER, 100, 8).ok());
  CHECK(collective_bytes(Op::ALL_GATHER, 100, 8).value() == 96);
  REQUIRE(!collective_bytes(Op::ALL_GATHER, 16, 8).ok());
  CHECK(collective_bytes(Op::ALL_GATHER, 16, 8).error().field == "size");
  CHECK(!collective_bytes(Op::ALL_REDUCE, 3, 8).ok());
}

TEST_CASE("a one-node ring allreduce approaches the NVLink goodput of the profile and never passes it")
{
  const auto s = setup("hgx-h100-8gpu", 1);
  const double nvlink = s.host.nvlink->goodput();
  double last_time = 0;
  for (double bytes = 8; bytes <= 8e9; bytes *= 4) {
    const auto p = predict(s, bytes);
    INFO(bytes << " bytes: " << to_string(p.algo) << "/" << to_string(p.proto));
    CHECK(p.busbw <= nvlink);
    CHECK(p.seconds > last_time); // more bytes never take less time
    last_time = p.seconds;
  }
  CHECK(predict(s, 8e9).busbw == Approx(nvlink).epsilon(0.02));
  CHECK(predict(s, 8).proto == Proto::LL);       // latency-bound: the protocol with the lowest step latency
  CHECK(predict(s, 8e9).proto == Proto::SIMPLE); // bandwidth-bound: the protocol with the whole link
}

TEST_CASE("a multi-node ring with faster NVLink than network is bounded by the sum of its NICs")
{
  auto s = setup("hgx-h100-8gpu", 4);
  s.algo = Algo::RING;
  const auto links = collective_links(s);
  REQUIRE(links.nics_used == 8);
  CHECK(links.gdr);
  // Each NIC: its wire goodput, or a PCIe link of the GPU or the NIC where that is lower (GPUDirect inside their
  // switch: the NIC reads with the GPU's posted writes coming up and its own read completions coming down).
  const auto& nic = s.host.nics[0];
  const auto& gpu = s.host.gpus[0];
  const double completion = s.host.sockets[size_t(nic.socket)].cpu.read_completion_size;
  const double per_nic = std::min({nic.nic.wire_goodput(), gpu.pcie.posted_write_bandwidth(),
                                   nic.pcie.read_completion_bandwidth(completion), nic.pcie.posted_write_bandwidth(),
                                   gpu.pcie.read_completion_bandwidth(completion)});
  CHECK(links.net == Approx(8 * per_nic).epsilon(0.01));
  const auto p = predict(s, 8e9);
  CHECK(p.busbw <= std::min(links.net, links.intra) * 1.0001);
  CHECK(p.busbw >= 0.95 * std::min(links.net, links.intra));
  s.channels = 4; // four channels leave through four NICs
  CHECK(collective_links(s).nics_used == 4);
  CHECK(predict(s, 8e9).busbw < 0.55 * p.busbw);
}

TEST_CASE("tree and ring: the tree's per-node network load and the model's choice between them")
{
  auto s = setup("dgx-a100-8gpu", 2);
  REQUIRE(collective_links(s).nics_used == 8); // one NIC per GPU (two GPUs and two NICs per PCIe switch)
  s.algo = Algo::TREE;
  const auto tree2 = predict(s, 1e6);
  s.algo = Algo::RING;
  const auto ring2 = predict(s, 1e6);
  // 1 MB over 16 ranks: the ring's 30 steps of latency against the tree's 2 x (7 + 1) hops.
  CHECK(tree2.latency < ring2.latency);
  s.algo.reset();
  CHECK(predict(s, 1e6).seconds == Approx(std::min(tree2.seconds, ring2.seconds)));
}

TEST_CASE("LL128 is not among the default protocols without NVLink, and LL's bandwidth is a fraction of Simple's")
{
  auto s = setup("hkust-k40m-cx3", 2);
  for (double bytes = 8; bytes <= 1e9; bytes *= 8)
    CHECK(predict(s, bytes).proto != Proto::LL128);
  s.proto = Proto::LL;
  const double ll = predict(s, 1e9).busbw;
  s.proto = Proto::SIMPLE;
  CHECK(ll < 0.3 * predict(s, 1e9).busbw);
}

TEST_CASE("alltoall sends a rank's share to every other rank over NVLink and the network")
{
  auto s = setup("hgx-h100-8gpu", 2, Op::ALLTOALL);
  const auto l = collective_links(s);
  const double bytes = 1e9;
  const auto p = predict(s, bytes);
  // 16 ranks, 8 per node: each node sends 8 x 8/16 of the size across the network.
  const double net_time = 8.0 * 8 / 16 * bytes / l.net;
  CHECK(p.seconds - p.latency == Approx(std::max(net_time, 7.0 / 16 * bytes / l.intra)));
  CHECK(p.busbw == Approx(p.algbw * 15 / 16));
  CHECK(p.algo == Algo::P2P);
  s.algo = Algo::RING; // nothing to choose: an algorithm asked for is refused, not ignored
  REQUIRE(!check_setup(s).ok());
  CHECK(check_setup(s).error().field == "algo");
}

TEST_CASE("collective setups that cannot run are refused naming the field")
{
  auto s = setup("hgx-h100-8gpu", 1, Op::ALL_GATHER);
  s.algo = Algo::TREE;
  auto st = check_setup(s);
  REQUIRE(!st.ok());
  CHECK(st.error().field == "algo"); // the job's field; the command line names it --algo (tests/probe/probe.sh)
  s.algo.reset();
  s.gpus_per_node = 9;
  REQUIRE(!check_setup(s).ok());
  CHECK(check_setup(s).error().field == "gpus_per_node");
  s.gpus_per_node = 1;
  CHECK(!check_setup(s).ok()); // one GPU in all
  s.gpus_per_node = 8;
  s.channels = 0;
  CHECK(!check_setup(s).ok());
}

TEST_CASE("complete_setup fills the defaults in: every GPU of the host, the default channels")
{
  CollectiveSetup s;
  s.nodes = 2;
  const auto h = host("dgx-a100-8gpu");
  auto done = complete_setup(s, h);
  REQUIRE(done.ok());
  CHECK(done->gpus_per_node == 8);
  CHECK(done->channels == default_channels(h));
  CHECK(done->host.name == h.name);
  s.gpus_per_node = 9;
  REQUIRE(!complete_setup(s, h).ok());
  CHECK(complete_setup(s, h).error().field == "gpus_per_node");
}
