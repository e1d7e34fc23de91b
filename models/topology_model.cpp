// Clos topologies between the nodes: construction, routing with ECMP placement, link loads (see the header).
#include "models/topology_model.hpp"

#include "core/common/suggest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tp::models {

const char* to_string(EcmpPlacement p)
{
  switch (p) {
  case EcmpPlacement::HASH:
    return "hash";
  case EcmpPlacement::DMODK:
    return "dmodk";
  case EcmpPlacement::SPREAD:
    return "spread";
  }
  return "?";
}

Result<EcmpPlacement> parse_ecmp(const std::string& word)
{
  for (auto p : {EcmpPlacement::HASH, EcmpPlacement::DMODK, EcmpPlacement::SPREAD})
    if (word == to_string(p)) return p;
  return Error::at("", "ecmp", "hash, dmodk or spread", unknown_name(word, {"hash", "dmodk", "spread"}));
}

const char* to_string(Wiring w)
{
  return w == Wiring::RAIL_OPTIMIZED ? "rail_optimized" : "top_of_rack";
}

Result<Wiring> parse_wiring(const std::string& word)
{
  for (auto w : {Wiring::RAIL_OPTIMIZED, Wiring::TOP_OF_RACK})
    if (word == to_string(w)) return w;
  return Error::at("", "wiring", "rail_optimized or top_of_rack",
                   unknown_name(word, {"rail_optimized", "top_of_rack"}));
}

const char* to_string(FabricLink::Tier t)
{
  switch (t) {
  case FabricLink::NIC_TO_LEAF:
    return "nic>leaf";
  case FabricLink::LEAF_TO_NIC:
    return "leaf>nic";
  case FabricLink::LEAF_UP:
    return "leaf>spine";
  case FabricLink::LEAF_DOWN:
    return "spine>leaf";
  case FabricLink::SPINE_UP:
    return "spine>core";
  case FabricLink::SPINE_DOWN:
    return "core>spine";
  case FabricLink::TIERS:
    break;
  }
  return "?";
}

namespace {

int uplinks_for(int down_ports, double ratio)
{
  return std::max(1, int(std::lround(double(down_ports) / ratio)));
}

uint64_t mix(uint64_t x)
{
  // splitmix64's finalizer: a fixed, well-spread function of the flow's identity (any switch hash would do; what
  // matters is that it is static per flow and blind to the load).
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

} // namespace

Result<Topology> Topology::build(const TopologyProfile& p, int nodes, int nics, double port_line_rate,
                                 double port_goodput)
{
  const std::string file = p.file.empty() ? p.name : p.file;
  if (nodes < 1) return Error::at("", "nodes", "at least 1", std::to_string(nodes));
  if (nics < 1) return Error::at("", "nics", "a host with at least one NIC", std::to_string(nics));
  if (p.tiers < 1 || p.tiers > 3)
    return Error::at(file, "tiers", "1 (one switch), 2 (leaf/spine) or 3 (leaf/spine/core)", std::to_string(p.tiers));
  if (int(p.oversubscription.size()) != p.tiers - 1)
    return Error::at(file, "oversubscription", fmt::format("{} ratio(s), one per tier below the top", p.tiers - 1),
                     fmt::format("{}", p.oversubscription.size()));
  for (double r : p.oversubscription)
    if (!(r >= 1) || !std::isfinite(r))
      return Error::at(file, "oversubscription", "ratios of at least 1 (1: non-blocking)", fmt::format("{}", r));
  Topology t;
  t.profile_ = p;
  t.nodes_ = nodes;
  t.nics_ = nics;
  if (p.tiers >= 2) {
    if (p.leaf_ports < 1) return Error::at(file, "leaf_ports", "at least 1 NIC port per leaf", "none");
    if (p.wiring == Wiring::TOP_OF_RACK && p.leaf_ports % nics != 0)
      return Error::at(
          file, "leaf_ports",
          fmt::format("a multiple of the {} NICs of a node (top-of-rack wiring keeps a node on one leaf)", nics),
          std::to_string(p.leaf_ports));
    t.leaves_ = p.wiring == Wiring::RAIL_OPTIMIZED ? (nodes + p.leaf_ports - 1) / p.leaf_ports * nics
                                                   : (nodes * nics + p.leaf_ports - 1) / p.leaf_ports;
    t.up1_ = uplinks_for(p.leaf_ports, p.oversubscription[0]);
  }
  if (p.tiers == 3) {
    if (p.pod_leaves < 1) return Error::at(file, "pod_leaves", "at least 1 leaf per pod (three tiers)", "none");
    t.pods_ = (t.leaves_ + p.pod_leaves - 1) / p.pod_leaves;
    t.up2_ = uplinks_for(p.pod_leaves, p.oversubscription[1]);
  }
  if (p.tiers == 2 && p.max_leaves > 0 && t.leaves_ > p.max_leaves)
    return Error::at(
        file, "max_leaves",
        fmt::format("at most {} leaves on two tiers (the spines' ports; a third tier beyond)", p.max_leaves),
        fmt::format("{} leaves for {} node(s) of {} NIC(s)", t.leaves_, nodes, nics));
  if (p.tiers == 3 && p.max_pods > 0 && t.pods_ > p.max_pods)
    return Error::at(file, "max_pods", fmt::format("at most {} pods (the cores' ports)", p.max_pods),
                     fmt::format("{} pods for {} node(s) of {} NIC(s)", t.pods_, nodes, nics));
  // Links are made for the nodes given, every leaf and spine with all its uplinks: refuse a topology whose size would
  // not fit in memory (a profile may name switches of 65536 ports) rather than fail allocating it.
  constexpr double MAX_LINKS = 1e7; // about 240 MB of links, plus their loads: 65536 nodes of 8 NICs on three tiers fit
  const double nic_links = 2.0 * nodes * nics, leaf_links = 2.0 * t.leaves_ * t.up1_,
               spine_links = 2.0 * t.pods_ * t.up1_ * t.up2_;
  if (nic_links + leaf_links + spine_links > MAX_LINKS)
    return Error::at(file, spine_links > leaf_links ? "pod_leaves" : "leaf_ports",
                     fmt::format("a topology of at most {:.0g} links for {} node(s) (fewer ports per switch, or "
                                 "fewer nodes)",
                                 MAX_LINKS, nodes),
                     fmt::format("{:.3g} links", nic_links + leaf_links + spine_links));
  const double goodput_share = port_line_rate > 0 ? port_goodput / port_line_rate : 1;
  const double uplink = p.uplink_line_rate > 0 ? p.uplink_line_rate * goodput_share : port_goodput;
  const double spine_uplink = p.spine_uplink_line_rate > 0 ? p.spine_uplink_line_rate * goodput_share : uplink;
  for (int n = 0; n < nodes; ++n)
    for (int k = 0; k < nics; ++k) {
      t.links_.push_back({FabricLink::NIC_TO_LEAF, n, k, 0, port_goodput});
      t.links_.push_back({FabricLink::LEAF_TO_NIC, n, k, 0, port_goodput});
    }
  t.leaf_base_ = int(t.links_.size());
  if (p.tiers >= 2)
    for (int l = 0; l < t.leaves_; ++l)
      for (int s = 0; s < t.up1_; ++s) {
        t.links_.push_back({FabricLink::LEAF_UP, l, s, 0, uplink});
        t.links_.push_back({FabricLink::LEAF_DOWN, l, s, 0, uplink});
      }
  t.spine_base_ = int(t.links_.size());
  if (p.tiers == 3)
    for (int q = 0; q < t.pods_; ++q)
      for (int s = 0; s < t.up1_; ++s)
        for (int c = 0; c < t.up2_; ++c) {
          t.links_.push_back({FabricLink::SPINE_UP, q, s, c, spine_uplink});
          t.links_.push_back({FabricLink::SPINE_DOWN, q, s, c, spine_uplink});
        }
  return t;
}

int Topology::leaf_of(int node, int nic) const
{
  if (profile_.tiers == 1) return 0;
  if (profile_.wiring == Wiring::RAIL_OPTIMIZED) return node / profile_.leaf_ports * nics_ + nic;
  return (node * nics_ + nic) / profile_.leaf_ports;
}

int Topology::port_index(int node, int nic) const
{
  if (profile_.tiers == 1) return node * nics_ + nic;
  const int within = profile_.wiring == Wiring::RAIL_OPTIMIZED ? node % profile_.leaf_ports
                                                               : (node * nics_ + nic) % profile_.leaf_ports;
  return leaf_of(node, nic) * profile_.leaf_ports + within;
}

std::string Topology::link_name(int link) const
{
  const FabricLink& l = links_[size_t(link)];
  switch (l.tier) {
  case FabricLink::NIC_TO_LEAF:
    return fmt::format("node{}.nic{}>leaf{}", l.a, l.b, leaf_of(l.a, l.b));
  case FabricLink::LEAF_TO_NIC:
    return fmt::format("leaf{}>node{}.nic{}", leaf_of(l.a, l.b), l.a, l.b);
  case FabricLink::LEAF_UP:
    return fmt::format("leaf{}>spine{}{}", l.a, profile_.tiers == 3 ? fmt::format("{}.", pod_of_leaf(l.a)) : "", l.b);
  case FabricLink::LEAF_DOWN:
    return fmt::format("spine{}{}>leaf{}", profile_.tiers == 3 ? fmt::format("{}.", pod_of_leaf(l.a)) : "", l.b, l.a);
  case FabricLink::SPINE_UP:
    return fmt::format("spine{}.{}>core{}.{}", l.a, l.b, l.b, l.c);
  case FabricLink::SPINE_DOWN:
    return fmt::format("core{}.{}>spine{}.{}", l.b, l.c, l.a, l.b);
  case FabricLink::TIERS:
    break;
  }
  return "?";
}

std::string Topology::describe() const
{
  const auto& p = profile_;
  std::string sw = fmt::format("switch {} ({:g} ns)", p.switch_model.name, p.switch_model.latency * 1e9);
  if (p.tiers >= 2 && p.spine_switch)
    sw += fmt::format(", spines {} ({:g} ns)", p.spine().name, p.spine().latency * 1e9);
  if (p.tiers == 3 && p.core_switch) sw += fmt::format(", cores {} ({:g} ns)", p.core().name, p.core().latency * 1e9);
  if (p.tiers == 1) return "one switch, " + sw;
  auto ratio = [](double down, int up) { return fmt::format("{:.3g}:1", down / up); }; // as built, rounded
  std::string out = fmt::format("{} tiers: {} lea{} of {} NIC ports and {} uplinks ({})", p.tiers, leaves_,
                                leaves_ == 1 ? "f" : "ves", p.leaf_ports, up1_, ratio(p.leaf_ports, up1_));
  if (p.tiers == 2)
    out += fmt::format(", {} spines", up1_);
  else
    out += fmt::format(", {} pod{} of {} leaves with {} spines of {} uplinks ({}), {} cores", pods_,
                       pods_ == 1 ? "" : "s", p.pod_leaves, up1_, up2_, ratio(p.pod_leaves, up2_), up1_ * up2_);
  out += fmt::format("; {}; ECMP {}; {}", p.wiring == Wiring::RAIL_OPTIMIZED ? "rail-optimized" : "top-of-rack",
                     to_string(p.ecmp), sw);
  return out;
}

int Topology::switch_hops(const FabricFlow& f) const
{
  const int la = leaf_of(f.src_node, f.src_nic), lb = leaf_of(f.dst_node, f.dst_nic);
  if (la == lb) return 1;
  if (profile_.tiers == 2 || pod_of_leaf(la) == pod_of_leaf(lb)) return 3;
  return 5;
}

double Topology::switch_latency(const FabricFlow& f) const
{
  const double leaf = profile_.switch_model.latency;
  switch (switch_hops(f)) {
  case 1:
    return leaf;
  case 3:
    return 2 * leaf + profile_.spine().latency;
  default:
    return 2 * leaf + 2 * profile_.spine().latency + profile_.core().latency;
  }
}

void Topology::route(const FabricFlow& f, std::vector<std::pair<int, double>>& out) const
{
  out.emplace_back(nic_link(f.src_node, f.src_nic, true), 1.0);
  const int la = leaf_of(f.src_node, f.src_nic), lb = leaf_of(f.dst_node, f.dst_nic);
  if (la != lb) {
    const bool via_core = profile_.tiers == 3 && pod_of_leaf(la) != pod_of_leaf(lb);
    const int pa = pod_of_leaf(la), pb = pod_of_leaf(lb);
    // (spine, core) choices and each one's share of the flow
    auto hop = [&](int s, int c, double share) {
      out.emplace_back(leaf_link(la, s, true), share);
      if (via_core) {
        out.emplace_back(spine_link(pa, s, c, true), share);
        out.emplace_back(spine_link(pb, s, c, false), share);
      }
      out.emplace_back(leaf_link(lb, s, false), share);
    };
    const int cores = via_core ? up2_ : 1;
    switch (profile_.ecmp) {
    case EcmpPlacement::SPREAD:
      for (int s = 0; s < up1_; ++s)
        for (int c = 0; c < cores; ++c)
          hop(s, c, 1.0 / (double(up1_) * cores));
      break;
    case EcmpPlacement::DMODK: {
      const int d = port_index(f.dst_node, f.dst_nic);
      hop(d % up1_, d / up1_ % cores, 1.0);
      break;
    }
    case EcmpPlacement::HASH: {
      const uint64_t key = (uint64_t(port_index(f.src_node, f.src_nic)) << 40) ^
                           (uint64_t(port_index(f.dst_node, f.dst_nic)) << 16) ^ f.label;
      const uint64_t h = mix(key);
      hop(int(h % uint64_t(up1_)), int(h / uint64_t(up1_) % uint64_t(cores)), 1.0);
      break;
    }
    }
  }
  out.emplace_back(nic_link(f.dst_node, f.dst_nic, false), 1.0);
}

LinkLoads::LinkLoads(const Topology& t) : topo_(&t), bytes_(t.links().size(), 0.0)
{
  if (t.profile().ecmp != EcmpPlacement::SPREAD) return;
  leaf_up_.assign(size_t(t.leaves()), 0.0);
  leaf_down_.assign(size_t(t.leaves()), 0.0);
  pod_up_.assign(size_t(t.pods()), 0.0);
  pod_down_.assign(size_t(t.pods()), 0.0);
}

double LinkLoads::bytes(int link) const
{
  double b = bytes_[size_t(link)];
  if (leaf_up_.empty()) return b;
  const FabricLink& l = topo_->links()[size_t(link)];
  const double up1 = topo_->leaf_uplinks(), up12 = up1 * std::max(1, topo_->spine_uplinks());
  switch (l.tier) {
  case FabricLink::LEAF_UP:
    return b + leaf_up_[size_t(l.a)] / up1;
  case FabricLink::LEAF_DOWN:
    return b + leaf_down_[size_t(l.a)] / up1;
  case FabricLink::SPINE_UP:
    return b + pod_up_[size_t(l.a)] / up12;
  case FabricLink::SPINE_DOWN:
    return b + pod_down_[size_t(l.a)] / up12;
  default:
    return b;
  }
}

void LinkLoads::add(const FabricFlow& f)
{
  if (!leaf_up_.empty()) { // spread: the same loads as route() with its equal shares, in O(1)
    bytes_[size_t(topo_->nic_link(f.src_node, f.src_nic, true))] += f.bytes;
    bytes_[size_t(topo_->nic_link(f.dst_node, f.dst_nic, false))] += f.bytes;
    const int la = topo_->leaf_of(f.src_node, f.src_nic), lb = topo_->leaf_of(f.dst_node, f.dst_nic);
    if (la != lb) {
      leaf_up_[size_t(la)] += f.bytes;
      leaf_down_[size_t(lb)] += f.bytes;
      const int pa = topo_->pod_of_leaf(la), pb = topo_->pod_of_leaf(lb);
      if (topo_->profile().tiers == 3 && pa != pb) {
        pod_up_[size_t(pa)] += f.bytes;
        pod_down_[size_t(pb)] += f.bytes;
      }
    }
    max_hops_ = std::max(max_hops_, topo_->switch_hops(f));
    max_latency_ = std::max(max_latency_, topo_->switch_latency(f));
    return;
  }
  scratch_.clear();
  topo_->route(f, scratch_);
  for (const auto& [link, share] : scratch_)
    bytes_[size_t(link)] += f.bytes * share;
  max_hops_ = std::max(max_hops_, topo_->switch_hops(f));
  max_latency_ = std::max(max_latency_, topo_->switch_latency(f));
}

double LinkLoads::busiest_seconds(int* link) const
{
  double worst = 0;
  int which = -1;
  const auto& links = topo_->links();
  for (size_t i = 0; i < links.size(); ++i) {
    const double s = bytes(int(i)) / links[i].rate;
    if (s > worst) {
      worst = s;
      which = int(i);
    }
  }
  if (link) *link = which;
  return worst;
}

std::vector<int> LinkLoads::busiest(size_t n) const
{
  std::vector<int> idx;
  const auto& links = topo_->links();
  std::vector<double> secs_of(links.size());
  for (size_t i = 0; i < links.size(); ++i) {
    secs_of[i] = bytes(int(i)) / links[i].rate;
    if (secs_of[i] > 0) idx.push_back(int(i));
  }
  auto secs = [&](int i) { return secs_of[size_t(i)]; };
  const size_t k = std::min(n, idx.size());
  std::partial_sort(idx.begin(), idx.begin() + long(k), idx.end(),
                    [&](int a, int b) { return secs(a) != secs(b) ? secs(a) > secs(b) : a < b; });
  idx.resize(k);
  return idx;
}

} // namespace tp::models
