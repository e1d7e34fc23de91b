// The network between the nodes: one switch, or a two- or three-tier Clos (leaf / spine / core) with a per-tier
// oversubscription ratio, rail-optimized or top-of-rack wiring, and a rule that places each flow on one of the
// equal-cost uplinks (ECMP). A TopologyProfile describes it (models/hw/topology/*.json); a Topology builds its
// switches and directional links for a number of nodes and NICs per node, routes a flow between two NIC ports and
// sums the bytes flows put on every link (LinkLoads) - the per-link utilisation of the results. Pure C++: used by the
// NCCL collective model (models/nccl/collective_model) and by the simulator's platform (sim/platform.cpp). Docs:
// docs/model.md ("The fabric between the nodes"). Tests: tests/models/topology_model_test.cpp. Bench:
// bench/fabric_scale_bench.
#pragma once

#include "core/common/result.hpp"
#include "models/switch_model.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tp::models {

/// How a flow is placed on one of several equal-cost uplinks.
enum class EcmpPlacement {
  HASH,  ///< a static hash of the flow's ends and label (Ethernet ECMP, RFC 2992 hash-threshold; RoCE's per-QP UDP
         ///< source port makes every connection its own flow): flows can collide on one uplink
  DMODK, ///< by the destination port's index modulo the uplinks ("D-mod-k", as InfiniBand's OpenSM ftree routing
         ///< fills the forwarding tables of a fat tree): every flow to one destination takes the same uplink
  SPREAD ///< every flow split evenly over all the uplinks (adaptive routing / packet spraying): no collisions
};
const char* to_string(EcmpPlacement p);
/// "hash", "dmodk" or "spread"; an Error (field "ecmp") naming the valid words otherwise.
Result<EcmpPlacement> parse_ecmp(const std::string& word);

/// How NIC ports are wired to leaves.
enum class Wiring {
  RAIL_OPTIMIZED, ///< NIC k of every node on a leaf of rail k (leaf_ports nodes per leaf)
  TOP_OF_RACK     ///< a node's NICs side by side on one leaf (ports filled node after node)
};
const char* to_string(Wiring w);
Result<Wiring> parse_wiring(const std::string& word);

struct TopologyProfile {
  std::string name;
  std::string file;
  int tiers = 1;      ///< 1: one non-blocking switch; 2: leaf/spine; 3: leaf/spine/core
  int leaf_ports = 0; ///< NIC ports per leaf (tiers >= 2)
  int pod_leaves = 0; ///< leaves per pod under one set of spines (tiers == 3)
  /// The most leaves the spines' ports can take (two tiers) and the most pods the cores' can take (three tiers), as
  /// the switches' port counts set them; 0: no limit. Beyond, a build is refused: another tier is needed.
  int max_leaves = 0, max_pods = 0;
  /// Per tier below the top (leaf, then spine): down-facing capacity over up-facing capacity of one switch, >= 1
  /// (1: non-blocking). A switch with d down ports gets round(d / ratio) uplinks (at least 1).
  std::vector<double> oversubscription;
  Wiring wiring = Wiring::RAIL_OPTIMIZED;
  EcmpPlacement ecmp = EcmpPlacement::HASH;
  SwitchProfile switch_model;                ///< the leaves (and every tier without its own): port-to-port latency
  std::optional<SwitchProfile> spine_switch; ///< the spines, when they are another model
  std::optional<SwitchProfile> core_switch;  ///< the cores (three tiers), when they are another model
  /// Line rate of the links between switches, bytes/s (0: the NICs' line rate); goodput as the NICs' packets give.
  double uplink_line_rate = 0;
  /// Line rate of the spine-to-core links (three tiers), bytes/s (0: uplink_line_rate).
  double spine_uplink_line_rate = 0;

  const SwitchProfile& spine() const { return spine_switch ? *spine_switch : switch_model; }
  const SwitchProfile& core() const { return core_switch ? *core_switch : spine(); }
};

/// One direction of one link of a built topology.
struct FabricLink {
  enum Tier { NIC_TO_LEAF, LEAF_TO_NIC, LEAF_UP, LEAF_DOWN, SPINE_UP, SPINE_DOWN, TIERS };
  Tier tier = NIC_TO_LEAF;
  int a = 0, b = 0, c = 0; ///< NIC links: node, nic; leaf links: leaf, spine; spine links: pod, spine, core
  double rate = 0;         ///< goodput, bytes/s
};
const char* to_string(FabricLink::Tier t);

/// A flow between two NIC ports: `bytes` from (src_node, src_nic) to (dst_node, dst_nic); `label` tells apart flows
/// between the same ports (a channel, a queue pair) for the hash placement.
struct FabricFlow {
  int src_node = 0, src_nic = 0, dst_node = 0, dst_nic = 0;
  uint32_t label = 0;
  double bytes = 0;
};

class Topology {
public:
  /// Build `profile` for `nodes` nodes of `nics` NICs each whose ports carry `port_goodput` bytes/s of payload out of
  /// `port_line_rate`. Error (naming the profile's file and field) when it cannot hold them: tiers out of 1..3, too
  /// few leaf ports for a rail or a node, a missing pod size, an oversubscription below 1.
  static Result<Topology> build(const TopologyProfile& profile, int nodes, int nics, double port_line_rate,
                                double port_goodput);

  const TopologyProfile& profile() const { return profile_; }
  int nodes() const { return nodes_; }
  int nics() const { return nics_; }
  int leaves() const { return leaves_; }
  int leaf_uplinks() const { return up1_; }  ///< uplinks per leaf (= spines per pod)
  int spine_uplinks() const { return up2_; } ///< uplinks per spine (= cores per plane), three tiers
  int pods() const { return pods_; }
  int leaf_of(int node, int nic) const;
  int pod_of_leaf(int leaf) const { return profile_.tiers == 3 ? leaf / profile_.pod_leaves : 0; }

  const std::vector<FabricLink>& links() const { return links_; }
  /// "node3.nic2>leaf", "leaf5>spine2", "pod1.spine2>core3", and the down directions "leaf>node3.nic2", ...
  std::string link_name(int link) const;

  /// The route of a flow: (link, share of the flow's bytes) pairs, several at one hop for the spread placement.
  /// Appends to `out`.
  void route(const FabricFlow& f, std::vector<std::pair<int, double>>& out) const;
  /// Switches a packet of this flow crosses (1 on one leaf, 3 through a spine, 5 through a core).
  int switch_hops(const FabricFlow& f) const;
  /// The port-to-port latencies of the switches it crosses, summed (each tier's switch model).
  double switch_latency(const FabricFlow& f) const;
  /// "2 tiers: 16 leaves of 32 NIC ports and 32 uplinks (1:1), 32 spines; rail-optimized; ECMP dmodk; ..."
  std::string describe() const;

  /// The link from (up) or to (down) a NIC port.
  int nic_link(int node, int nic, bool up) const { return 2 * (node * nics_ + nic) + (up ? 0 : 1); }

private:
  int port_index(int node, int nic) const; ///< the destination's index in leaf order (D-mod-k)
  int leaf_link(int leaf, int spine, bool up) const { return leaf_base_ + 2 * (leaf * up1_ + spine) + (up ? 0 : 1); }
  int spine_link(int pod, int spine, int core, bool up) const
  {
    return spine_base_ + 2 * ((pod * up1_ + spine) * up2_ + core) + (up ? 0 : 1);
  }

  TopologyProfile profile_;
  int nodes_ = 0, nics_ = 0, leaves_ = 1, up1_ = 0, up2_ = 0, pods_ = 1;
  int leaf_base_ = 0, spine_base_ = 0;
  std::vector<FabricLink> links_;
};

/// Bytes on every link of a topology from a set of flows.
class LinkLoads {
public:
  explicit LinkLoads(const Topology& t);
  /// Place a flow: along its route, or with the spread placement as totals per leaf and pod that each of their uplinks
  /// carries an equal share of (no route per uplink: a flow costs O(1) however many uplinks there are).
  void add(const FabricFlow& f);
  double bytes(int link) const;
  /// Seconds the busiest link needs for its bytes (max over links of bytes / rate), and which link that is (-1: no
  /// bytes anywhere): the time the flows take when they all run at once and only the links limit them.
  double busiest_seconds(int* link = nullptr) const;
  /// Links by descending bytes / rate (those with bytes only), at most `n`.
  std::vector<int> busiest(size_t n) const;
  int max_switch_hops() const { return max_hops_; }
  /// The largest switch_latency of the flows added.
  double max_switch_latency() const { return max_latency_; }

private:
  const Topology* topo_;
  std::vector<double> bytes_;
  /// spread: bytes leaving / entering each leaf over its uplinks, and each pod over its spines' uplinks
  std::vector<double> leaf_up_, leaf_down_, pod_up_, pod_down_;
  std::vector<std::pair<int, double>> scratch_;
  int max_hops_ = 0;
  double max_latency_ = 0;
};

} // namespace tp::models
