// Multi-tier topologies (models/topology_model): how a Clos is built from a profile, where flows go under each ECMP
// placement, the loads they put on links, and what the NCCL collective model makes of them: rings that stay on their
// rails ignore an oversubscribed spine, an alltoall does not, and a topology that cannot hold the nodes is refused.
#include "models/catalog.hpp"
#include "models/nccl/collective_model.hpp"
#include "models/topology_model.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

using namespace tp;
using namespace tp::models;

namespace {

constexpr double GBPS = 1e9;

TopologyProfile clos(int tiers, int leaf_ports, std::vector<double> ratios, EcmpPlacement ecmp,
                     Wiring wiring = Wiring::RAIL_OPTIMIZED, int pod_leaves = 0)
{
  TopologyProfile p;
  p.name = "test-clos";
  p.tiers = tiers;
  p.leaf_ports = leaf_ports;
  p.pod_leaves = pod_leaves;
  p.oversubscription = std::move(ratios);
  p.ecmp = ecmp;
  p.wiring = wiring;
  p.switch_model.name = "sw";
  p.switch_model.latency = 100e-9;
  return p;
}

Topology build(const TopologyProfile& p, int nodes, int nics)
{
  auto t = Topology::build(p, nodes, nics, 50 * GBPS, 48 * GBPS);
  REQUIRE(t.ok());
  return t.value();
}

/// The links of one flow's route with their shares.
std::vector<std::pair<int, double>> route_of(const Topology& t, FabricFlow f)
{
  std::vector<std::pair<int, double>> r;
  t.route(f, r);
  return r;
}

nccl::CollectiveSetup setup(int nodes, nccl::Op op, std::optional<TopologyProfile> topo)
{
  auto h = Catalog().host("hgx-h100-8gpu");
  REQUIRE(h.ok());
  nccl::CollectiveSetup s;
  s.nodes = nodes;
  s.op = op;
  s.topology = std::move(topo);
  auto done = nccl::complete_setup(s, h.value());
  REQUIRE(done.ok());
  return done.value();
}

} // namespace

TEST_CASE("a two-tier rail-optimized Clos has a leaf per rail per group of nodes and the uplinks its ratio gives")
{
  const Topology t = build(clos(2, 32, {1}, EcmpPlacement::DMODK), 64, 8);
  CHECK(t.leaves() == 16); // 2 groups of 32 nodes x 8 rails
  CHECK(t.leaf_uplinks() == 32);
  CHECK(t.links().size() == size_t(2 * 64 * 8 + 2 * 16 * 32));
  // NIC k of every node of a group on one leaf; the next group on the next set of rail leaves
  CHECK(t.leaf_of(0, 3) == 3);
  CHECK(t.leaf_of(31, 3) == 3);
  CHECK(t.leaf_of(32, 3) == 11);
  const Topology half = build(clos(2, 32, {2}, EcmpPlacement::DMODK), 64, 8);
  CHECK(half.leaf_uplinks() == 16);
  CHECK(build(clos(2, 32, {3}, EcmpPlacement::DMODK), 64, 8).leaf_uplinks() == 11); // round(32 / 3)
  // top of rack: a node's 8 NICs side by side, 4 nodes per 32-port leaf
  const Topology tor = build(clos(2, 32, {1}, EcmpPlacement::HASH, Wiring::TOP_OF_RACK), 64, 8);
  CHECK(tor.leaves() == 16);
  CHECK(tor.leaf_of(0, 0) == tor.leaf_of(0, 7));
  CHECK(tor.leaf_of(3, 7) == 0);
  CHECK(tor.leaf_of(4, 0) == 1);
}

TEST_CASE("routes cross one leaf, a spine or a core, and every placement moves the whole flow at each hop")
{
  const Topology t = build(clos(3, 4, {1, 2}, EcmpPlacement::SPREAD, Wiring::RAIL_OPTIMIZED, 2), 16, 2);
  // 16 nodes, 2 rails, 4 nodes per leaf: leaves (group, rail) = 8; pods of 2 leaves: 4 pods
  REQUIRE(t.leaves() == 8);
  REQUIRE(t.pods() == 4);
  REQUIRE(t.spine_uplinks() == 1); // round(2 leaves / 2)
  const FabricFlow same_leaf{0, 0, 3, 0, 0, 1};
  const FabricFlow same_pod{0, 0, 0, 1, 0, 1}; // rail 0 and rail 1 leaves of group 0: pod 0
  const FabricFlow other_pod{0, 0, 4, 0, 0, 1};
  CHECK(t.switch_hops(same_leaf) == 1);
  CHECK(t.switch_hops(same_pod) == 3);
  CHECK(t.switch_hops(other_pod) == 5);
  CHECK(route_of(t, same_leaf).size() == 2);
  for (auto placement : {EcmpPlacement::HASH, EcmpPlacement::DMODK, EcmpPlacement::SPREAD}) {
    auto p = clos(3, 4, {1, 2}, placement, Wiring::RAIL_OPTIMIZED, 2);
    const Topology tp = build(p, 16, 2);
    for (const auto& f : {same_leaf, same_pod, other_pod}) {
      std::map<int, double> by_tier; // shares summed per tier: 1 at every hop the flow crosses
      for (const auto& [link, share] : route_of(tp, f))
        by_tier[int(tp.links()[size_t(link)].tier)] += share;
      for (const auto& [tier, total] : by_tier)
        CHECK(total == Approx(1.0));
      CHECK(int(by_tier.size()) == 2 * ((tp.switch_hops(f) + 1) / 2));
    }
  }
}

TEST_CASE("D-mod-k sends every flow to one destination up one spine and the destinations of a leaf up different ones")
{
  const Topology t = build(clos(2, 8, {1}, EcmpPlacement::DMODK), 16, 1); // 2 leaves of 8, 8 uplinks each
  std::set<int> up_links;
  for (int dst = 8; dst < 16; ++dst) {
    std::set<int> for_this_dst;
    for (int src = 0; src < 8; ++src)
      for (const auto& [link, share] : route_of(t, {src, 0, dst, 0, uint32_t(src), 1}))
        if (t.links()[size_t(link)].tier == FabricLink::LEAF_UP) for_this_dst.insert(link);
    CHECK(for_this_dst.size() == 1);
    up_links.insert(*for_this_dst.begin());
  }
  CHECK(up_links.size() == 8); // a shift permutation between the leaves: no two flows on one uplink
}

TEST_CASE("a static hash puts some of many flows on one uplink, which spreading never does")
{
  // 32 flows from one leaf to another over 32 uplinks: with a hash, a collision-free placement has probability
  // 32!/32^32 (about 1e-13), so the busiest uplink carries at least two flows; spread splits each over all 32.
  for (auto placement : {EcmpPlacement::HASH, EcmpPlacement::SPREAD}) {
    const Topology t = build(clos(2, 32, {1}, placement), 64, 1);
    LinkLoads loads(t);
    for (int i = 0; i < 32; ++i)
      loads.add({i, 0, 32 + i, 0, 0, 1.0});
    double worst_up = 0;
    for (size_t l = 0; l < t.links().size(); ++l)
      if (t.links()[l].tier == FabricLink::LEAF_UP) worst_up = std::max(worst_up, loads.bytes(int(l)));
    if (placement == EcmpPlacement::HASH)
      CHECK(worst_up >= 2.0);
    else
      CHECK(worst_up == Approx(1.0));
    // the busiest link's time is its bytes over its rate, and the busiest list starts with it
    int busiest = -1;
    const double secs = loads.busiest_seconds(&busiest);
    REQUIRE(busiest >= 0);
    CHECK(secs == Approx(loads.bytes(busiest) / t.links()[size_t(busiest)].rate));
    CHECK(loads.busiest(3).front() == busiest);
  }
}

TEST_CASE("a topology that cannot hold the nodes is refused naming the field")
{
  auto refused = [](const TopologyProfile& p, int nodes, int nics, const std::string& field) {
    auto t = Topology::build(p, nodes, nics, 50 * GBPS, 48 * GBPS);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().field == field);
  };
  refused(clos(4, 32, {1, 1, 1}, EcmpPlacement::HASH), 8, 8, "tiers");
  refused(clos(2, 32, {0.5}, EcmpPlacement::HASH), 8, 8, "oversubscription");
  refused(clos(2, 32, {1, 1}, EcmpPlacement::HASH), 8, 8, "oversubscription");
  refused(clos(2, 0, {1}, EcmpPlacement::HASH), 8, 8, "leaf_ports");
  refused(clos(2, 12, {1}, EcmpPlacement::HASH, Wiring::TOP_OF_RACK), 8, 8, "leaf_ports");
  refused(clos(3, 32, {1, 1}, EcmpPlacement::HASH), 8, 8, "pod_leaves");
  // switches of 65536 ports: 8.6e9 spine links even for two nodes, refused before any is made
  refused(clos(3, 65536, {1, 1}, EcmpPlacement::HASH, Wiring::RAIL_OPTIMIZED, 65536), 2, 1, "pod_leaves");
  // more leaves than the spines' ports take
  auto two_tier = clos(2, 32, {1}, EcmpPlacement::DMODK);
  two_tier.max_leaves = 64;
  CHECK(Topology::build(two_tier, 256, 8, 50 * GBPS, 48 * GBPS).ok()); // 64 leaves
  refused(two_tier, 257, 8, "max_leaves");
  CHECK_FALSE(parse_ecmp("ecmp").ok());
  CHECK(parse_ecmp("dmodk").value() == EcmpPlacement::DMODK);
  CHECK_FALSE(parse_wiring("rail").ok());
}

TEST_CASE("the shipped topology profiles load")
{
  Catalog cat;
  for (const auto& name : cat.list("topology")) {
    INFO(name);
    auto t = cat.topology(name);
    REQUIRE(t.ok());
    CHECK(Topology::build(t.value(), 64, 8, 50 * GBPS, 48 * GBPS).ok());
  }
  CHECK(cat.list("topology").size() >= 3);
}

TEST_CASE("rings on their rails ignore an oversubscribed spine, an alltoall across leaves does not")
{
  using nccl::Op;
  const double size = 1 << 30;
  // 64 nodes: two groups of 32 on the rail leaves, so rings and alltoalls cross the spine
  const auto plain_ring = nccl::predict(setup(64, Op::ALL_REDUCE, std::nullopt), size);
  const auto plain_a2a = nccl::predict(setup(64, Op::ALLTOALL, std::nullopt), size);
  CHECK(plain_ring.links.empty()); // no topology, no links to report
  for (auto placement : {EcmpPlacement::HASH, EcmpPlacement::DMODK, EcmpPlacement::SPREAD})
    for (double ratio : {1.0, 2.0, 4.0}) {
      INFO(to_string(placement) << " " << ratio << ":1");
      const auto topo = clos(2, 32, {ratio}, placement);
      const auto ring = nccl::predict(setup(64, Op::ALL_REDUCE, topo), size);
      // a ring's flows leave each group of nodes once per channel: two flows per rail leaf, fewer than its uplinks
      CHECK(ring.bus_bandwidth == Approx(plain_ring.bus_bandwidth));
      CHECK(ring.seconds >= plain_ring.seconds); // only the extra switch hops' latency
      CHECK(ring.seconds == Approx(plain_ring.seconds).epsilon(1e-3));
      REQUIRE_FALSE(ring.links.empty());
      for (const auto& l : ring.links)
        CHECK((l.utilisation > 0 && l.utilisation <= 1));
      const auto a2a = nccl::predict(setup(64, Op::ALLTOALL, topo), size);
      CHECK(a2a.seconds >= plain_a2a.seconds * (1 - 1e-9));
      if (placement != EcmpPlacement::HASH && ratio == 1.0) CHECK(a2a.seconds == Approx(plain_a2a.seconds));
      if (ratio == 4.0) {
        // half the bytes of a rail leaf's 32 ports leave the leaf (32 of the 63 peers are on the other group) over 8
        // uplinks: the uplinks, not the NICs, set the time, about 2x the NICs' time
        CHECK(a2a.seconds > 1.9 * plain_a2a.seconds);
        CHECK(a2a.bottleneck.find("leaf") != std::string::npos);
      }
    }
}

TEST_CASE("the spread placement's loads are route()'s equal shares, kept as totals per leaf and pod")
{
  // every flow from leaf group 0 to leaf group 1 (and across pods): each uplink carries its share of the totals
  const Topology t = build(clos(3, 4, {1, 2}, EcmpPlacement::SPREAD, Wiring::RAIL_OPTIMIZED, 2), 16, 2);
  LinkLoads fast(t);
  std::vector<double> slow(t.links().size(), 0.0);
  std::vector<std::pair<int, double>> r;
  for (int a = 0; a < 16; ++a)
    for (int b = 0; b < 16; ++b)
      for (int k = 0; k < 2; ++k) {
        if (a == b) continue;
        const FabricFlow f{a, k, b, k, 0, 1e6 + a};
        fast.add(f);
        r.clear();
        t.route(f, r);
        for (const auto& [link, share] : r)
          slow[size_t(link)] += f.bytes * share;
      }
  for (size_t i = 0; i < slow.size(); ++i)
    CHECK(fast.bytes(int(i)) == Approx(slow[i]));
}

TEST_CASE("the collective setup refuses a topology that cannot hold its nodes")
{
  auto h = Catalog().host("hgx-h100-8gpu");
  REQUIRE(h.ok());
  nccl::CollectiveSetup s;
  s.nodes = 4;
  s.topology = clos(2, 6, {1}, EcmpPlacement::HASH, Wiring::TOP_OF_RACK); // 6 ports cannot hold a node's 8 NICs
  s.topology->file = "my-topology.json";
  auto done = nccl::complete_setup(s, h.value());
  REQUIRE_FALSE(done.ok());
  CHECK(done.error().file == "my-topology.json");
  CHECK(done.error().field == "leaf_ports");
}

TEST_CASE("a SimGrid FAT_TREE platform file becomes the cluster's topology")
{
  Catalog cat;
  auto c = cat.cluster(builtin_models_dir() + "/cluster/simgrid-fat-tree-64.json");
  REQUIRE(c.ok());
  REQUIRE(c->topology);
  CHECK(c->topology->tiers == 2);
  CHECK(c->topology->leaf_ports == 16);
  CHECK(c->topology->oversubscription.at(0) == Approx(2.0)); // 16 down, 4 spines x 2 links up
  CHECK(c->topology->ecmp == EcmpPlacement::DMODK);
  CHECK(c->host_count() == 64);
  CHECK(c->host(0).nics.at(0).nic.line_rate == Approx(400e9 / 8));
  auto t =
      Topology::build(*c->topology, 64, 1, c->host(0).nics[0].nic.line_rate, c->host(0).nics[0].nic.wire_goodput());
  REQUIRE(t.ok());
  CHECK(t->leaves() == 4);
  CHECK(t->leaf_uplinks() == 8);
}

TEST_CASE("each tier has its own uplink rate and switch latency")
{
  auto p = clos(3, 4, {1, 2}, EcmpPlacement::DMODK, Wiring::RAIL_OPTIMIZED, 2);
  p.uplink_line_rate = 100 * GBPS;
  p.spine_uplink_line_rate = 200 * GBPS;
  p.spine_switch = SwitchProfile{"spine-sw", 300e-9, {}};
  p.core_switch = SwitchProfile{"core-sw", 500e-9, {}};
  const Topology t = build(p, 16, 2); // ports at 50 GB/s line rate, 48 GB/s goodput: goodput share 0.96
  bool leaf_seen = false, spine_seen = false;
  for (const auto& l : t.links()) {
    if (l.tier == FabricLink::LEAF_UP) {
      CHECK(l.rate == Approx(96 * GBPS));
      leaf_seen = true;
    }
    if (l.tier == FabricLink::SPINE_UP) {
      CHECK(l.rate == Approx(192 * GBPS));
      spine_seen = true;
    }
  }
  CHECK((leaf_seen && spine_seen));
  CHECK(t.switch_latency({0, 0, 3, 0, 0, 1}) == Approx(100e-9));                           // one leaf
  CHECK(t.switch_latency({0, 0, 0, 1, 0, 1}) == Approx(2 * 100e-9 + 300e-9));              // leaf, spine, leaf
  CHECK(t.switch_latency({0, 0, 4, 0, 0, 1}) == Approx(2 * 100e-9 + 2 * 300e-9 + 500e-9)); // through a core
  // without their own models, spines and cores are the leaves' switch
  const Topology same = build(clos(3, 4, {1, 2}, EcmpPlacement::DMODK, Wiring::RAIL_OPTIMIZED, 2), 16, 2);
  CHECK(same.switch_latency({0, 0, 4, 0, 0, 1}) == Approx(5 * 100e-9));
}
