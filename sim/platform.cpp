// Platform construction: zones, hosts, directional links and asymmetric routes (see platform.hpp).
#include "sim/platform.hpp"
#include "models/host_paths.hpp"
#include "models/latency_model.hpp"

#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <cassert>
#include <map>

namespace sg4 = simgrid::s4u;

namespace tp::sim {

namespace {

using LinkList = std::vector<sg4::LinkInRoute>;

sg4::Link* make_link(sg4::NetZone* zone, const std::string& name, double bandwidth)
{
  auto* l = zone->create_link(name, bandwidth);
  l->set_latency(0); // latencies are applied by the device model
  l->seal();
  return l;
}

void append(LinkList& to, const LinkList& more)
{
  to.insert(to.end(), more.begin(), more.end());
}

} // namespace

namespace {

constexpr size_t MAX_FABRIC_PORTS = 1024; ///< NIC ports of a multi-tier platform: a route per ordered pair of them

bool multi_tier(const models::ClusterProfile& c)
{
  return c.topology && c.topology->tiers > 1;
}

Result<models::Topology> topology_for(const models::ClusterProfile& c)
{
  const auto& nic = c.host(0).nics.at(0).nic;
  return models::Topology::build(*c.topology, int(c.host_count()), int(c.host(0).nics.size()), nic.line_rate,
                                 nic.wire_goodput());
}

} // namespace

Status Platform::check_cluster(const models::ClusterProfile& c)
{
  if (!multi_tier(c)) return ok_status();
  const std::string file = c.topology->file.empty() ? c.topology->name : c.topology->file;
  const size_t nics = c.host(0).nics.size();
  for (size_t m = 0; m < c.host_count(); ++m)
    if (c.host(m).nics.size() != nics || nics == 0)
      return Error::at(file, "tiers",
                       "hosts with the same number of NICs, at least one, on a multi-tier topology (NIC k of every "
                       "host on rail k)",
                       c.host(m).name + " with " + std::to_string(c.host(m).nics.size()) + " NICs in cluster " +
                           c.name);
  if (c.host_count() * nics > MAX_FABRIC_PORTS)
    return Error::at(file, "tiers",
                     "at most " + std::to_string(MAX_FABRIC_PORTS) +
                         " NIC ports for the simulator on a multi-tier topology (it builds a route for every pair "
                         "of ports); at scale, the collective and data_parallel jobs model the same fabric in closed "
                         "form",
                     std::to_string(c.host_count() * nics) + " ports in cluster " + c.name);
  if (auto t = topology_for(c); !t.ok()) return t.error();
  return ok_status();
}

namespace {

/// The engine's root zone: an empty full zone whose one child, attached last, is the fabric (see Platform::Platform).
sg4::NetZone* create_world()
{
  return sg4::create_full_zone("world");
}

/// A zone that is not (yet) under the engine's root, with the root's models, so that zones and hosts can be built in
/// it before it is attached.
void give_models_of(sg4::NetZone* zone, const sg4::NetZone* root)
{
  auto* z = zone->get_impl();
  const auto* r = root->get_impl();
  z->set_network_model(r->get_network_model());
  z->set_cpu_pm_model(r->get_cpu_pm_model());
  z->set_cpu_vm_model(r->get_cpu_vm_model());
  z->set_disk_model(r->get_disk_model());
  z->set_host_model(r->get_host_model());
}

} // namespace

// Linear set-up: in SimGrid 3.32 sealing a zone lists every host under the engine's root (and sorts them by name),
// and creating a host or a link looks its name up in every zone under the root, so building N machines' zones under
// the root costs O(N^2) (87 % of a 1024-rank analytical allreduce). The fabric zone is therefore built detached,
// with the root's models given to it explicitly: its machines' zones are sealed while nothing is under the root,
// and the fabric is attached to the root ("world") once, at the end (names are unique by construction; hosts are
// sealed one by one as they are made).
Platform::Platform(const models::ClusterProfile& cluster) : cluster_(cluster)
{
  if (multi_tier(cluster_)) topology_ = topology_for(cluster_).value(); // check_cluster accepted it
  sg4::NetZone* world = create_world();
  sg4::NetZone* root = topology_ ? sg4::create_full_zone("fabric") : sg4::create_star_zone("fabric");
  give_models_of(root, world);
  auto names = cluster_.host_names();
  machines_.resize(names.size());
  for (size_t m = 0; m < names.size(); ++m) {
    machines_[m].name = names[m];
    machines_[m].profile = &cluster_.host(m);
  }
  if (topology_) ports_.assign(machines_.size(), std::vector<NicPort>(cluster_.host(0).nics.size()));
  for (size_t m = 0; m < machines_.size(); ++m)
    build_machine(root, m);
  if (topology_) build_fabric(root);
  root->set_parent(world);
  world->seal();
}

void Platform::build_fabric(sg4::NetZone* root)
{
  const models::Topology& topo = *topology_;
  const auto& links = topo.links();
  const bool spread = topo.profile().ecmp == models::EcmpPlacement::SPREAD;
  std::vector<sg4::Link*> made(links.size(), nullptr);
  std::map<std::pair<int, int>, sg4::Link*> bundles; // spread: (tier, leaf or pod) -> one link of all its uplinks
  auto link_of = [&](int i) {
    using T = models::FabricLink;
    const T& l = links[size_t(i)];
    if (!spread) {
      if (!made[size_t(i)]) made[size_t(i)] = make_link(root, topo.link_name(i), l.rate);
      return made[size_t(i)];
    }
    const bool leaf = l.tier == T::LEAF_UP || l.tier == T::LEAF_DOWN;
    auto& b = bundles[{int(l.tier), l.a}]; // l.a: the leaf of a leaf link, the pod of a spine link
    if (!b) {
      const double count = leaf ? topo.leaf_uplinks() : double(topo.leaf_uplinks()) * topo.spine_uplinks();
      const std::string id = std::to_string(l.a);
      const std::string name = l.tier == T::LEAF_UP     ? "leaf" + id + ">spines"
                               : l.tier == T::LEAF_DOWN ? "spines>leaf" + id
                               : l.tier == T::SPINE_UP  ? "pod" + id + ">cores"
                                                        : "cores>pod" + id;
      b = make_link(root, name, count * l.rate);
    }
    return b;
  };
  std::vector<std::pair<int, double>> route;
  const int nics = int(ports_.empty() ? 0 : ports_[0].size());
  for (int ma = 0; ma < int(ports_.size()); ++ma)
    for (int ja = 0; ja < nics; ++ja)
      for (int mb = 0; mb < int(ports_.size()); ++mb)
        for (int jb = 0; jb < nics; ++jb) {
          if (ma == mb && ja == jb) continue;
          const NicPort& a = ports_[size_t(ma)][size_t(ja)];
          const NicPort& b = ports_[size_t(mb)][size_t(jb)];
          route.clear();
          topo.route({ma, ja, mb, jb, 0, 1.0}, route);
          LinkList ll{sg4::LinkInRoute(a.tx)};
          for (const auto& [l, share] : route) {
            const auto tier = links[size_t(l)].tier;
            if (tier == models::FabricLink::NIC_TO_LEAF || tier == models::FabricLink::LEAF_TO_NIC) continue;
            sg4::Link* k = link_of(l);
            bool seen = false; // a spread route names each bundle once
            for (const auto& x : ll)
              seen = seen || x.get_link() == k;
            if (!seen) ll.emplace_back(k);
          }
          ll.emplace_back(b.rx);
          root->add_route(a.zone->get_netpoint(), b.zone->get_netpoint(), a.gateway, b.gateway, ll, false);
        }
}

/// The SimGrid links of one machine's local zone, one per models::HostLink (the paths through them are
/// models/host_paths), for its routes and its NICs' zones; each NIC's own PCIe links live in the NIC's zone.
struct Platform::MachineLinks {
  const models::HostProfile& hp;
  sg4::Link* qpi[2][2] = {{nullptr, nullptr}, {nullptr, nullptr}};
  sg4::Link* qpi_p2p[2][2] = {{nullptr, nullptr}, {nullptr, nullptr}}; // GPU peer traffic across sockets
  std::vector<sg4::Link*> gpu_up, gpu_down, gpu_p2p_read;
  std::vector<sg4::Link*> switch_up, switch_down; // per PCIe switch: its uplink to the root complex
  std::vector<sg4::Link*> nvlink_tx, nvlink_rx;   // per GPU, into and out of the NVSwitch fabric

  MachineLinks(const models::HostProfile& h, sg4::NetZone* local, const std::string& n) : hp(h)
  {
    using L = models::HostLink;
    auto link = [&](const std::string& name, L l) { return make_link(local, n + name, models::link_rate(hp, l)); };
    if (hp.sockets.size() == 2)
      for (int a = 0; a < 2; ++a) {
        const int b = 1 - a;
        const std::string dir = std::to_string(a) + "to" + std::to_string(b);
        qpi[a][b] = link(".qpi." + dir, {L::SOCKET, a, b});
        qpi_p2p[a][b] = link(".qpi_p2p." + dir, {L::SOCKET_P2P, a, b});
      }
    for (int w = 0; w < int(hp.pcie_switches.size()); ++w) {
      const std::string p = ".pcie_switch" + std::to_string(w);
      switch_up.push_back(link(p + ".up", {L::SWITCH_UP, w}));
      switch_down.push_back(link(p + ".down", {L::SWITCH_DOWN, w}));
    }
    for (int k = 0; k < int(hp.gpus.size()); ++k) {
      const std::string p = ".gpu" + std::to_string(k);
      gpu_up.push_back(link(p + ".pcie.up", {L::GPU_UP, k}));
      gpu_down.push_back(link(p + ".pcie.down", {L::GPU_DOWN, k}));
      gpu_p2p_read.push_back(link(p + ".p2p_read", {L::GPU_P2P_READ, k}));
      if (hp.nvlink) {
        nvlink_tx.push_back(link(p + ".nvlink.tx", {L::NVLINK_TX, k}));
        nvlink_rx.push_back(link(p + ".nvlink.rx", {L::NVLINK_RX, k}));
      }
    }
  }
  /// The SimGrid route of a path; `nic_up` and `nic_down` stand for the NIC links of a NIC zone's paths.
  LinkList route(const models::HostPath& path, sg4::Link* nic_up = nullptr, sg4::Link* nic_down = nullptr) const
  {
    LinkList r;
    for (const auto& l : path)
      r.emplace_back(link_of(l, nic_up, nic_down));
    return r;
  }

private:
  sg4::Link* link_of(const models::HostLink& l, sg4::Link* nic_up, sg4::Link* nic_down) const
  {
    const auto k = size_t(l.index);
    switch (l.kind) {
    case models::HostLink::GPU_UP:
      return gpu_up[k];
    case models::HostLink::GPU_DOWN:
      return gpu_down[k];
    case models::HostLink::GPU_P2P_READ:
      return gpu_p2p_read[k];
    case models::HostLink::SWITCH_UP:
      return switch_up[k];
    case models::HostLink::SWITCH_DOWN:
      return switch_down[k];
    case models::HostLink::SOCKET:
      return qpi[l.index][l.to];
    case models::HostLink::SOCKET_P2P:
      return qpi_p2p[l.index][l.to];
    case models::HostLink::NVLINK_TX:
      return nvlink_tx[k];
    case models::HostLink::NVLINK_RX:
      return nvlink_rx[k];
    case models::HostLink::NIC_UP:
      return nic_up;
    case models::HostLink::NIC_DOWN:
      return nic_down;
    }
    return nullptr;
  }
};

void Platform::build_machine(sg4::NetZone* root, size_t m)
{
  Machine& mc = machines_[m];
  const models::HostProfile& hp = *mc.profile;
  const std::string& n = mc.name;
  const int nsock = int(hp.sockets.size());

  // ---- local zone: CPUs, GPUs ----
  auto* local = sg4::create_full_zone(n + ".local");
  local->set_parent(root);
  for (int s = 0; s < nsock; ++s) {
    auto* h = local->create_host(n + ".cpu" + std::to_string(s), 1e9);
    h->set_core_count(hp.sockets[size_t(s)].cpu.cores);
    h->seal();
    mc.cpus.push_back(h);
  }
  for (size_t k = 0; k < hp.gpus.size(); ++k) {
    auto* h = local->create_host(n + ".gpu" + std::to_string(k), 1e9);
    h->seal();
    mc.gpus.push_back(h);
  }
  const MachineLinks links(hp, local, n);
  for (int s = 0; s < nsock; ++s) {
    for (int t = 0; t < nsock; ++t)
      if (s != t)
        local->add_route(mc.cpus[size_t(s)]->get_netpoint(), mc.cpus[size_t(t)]->get_netpoint(), nullptr, nullptr,
                         links.route({{models::HostLink::SOCKET, s, t}}), false);
    for (size_t k = 0; k < hp.gpus.size(); ++k) {
      local->add_route(mc.cpus[size_t(s)]->get_netpoint(), mc.gpus[k]->get_netpoint(), nullptr, nullptr,
                       links.route(models::host_to_gpu(hp, s, int(k))), false);
      local->add_route(mc.gpus[k]->get_netpoint(), mc.cpus[size_t(s)]->get_netpoint(), nullptr, nullptr,
                       links.route(models::gpu_to_host(hp, int(k), s)), false);
    }
  }
  for (size_t k = 0; k < hp.gpus.size(); ++k)
    for (size_t l = 0; l < hp.gpus.size(); ++l)
      if (k != l)
        local->add_route(mc.gpus[k]->get_netpoint(), mc.gpus[l]->get_netpoint(), nullptr, nullptr,
                         links.route(models::gpu_to_gpu(hp, int(k), int(l))), false);
  local->seal();
  for (size_t j = 0; j < hp.nics.size(); ++j)
    build_nic_zone(root, m, j, links);
}

void Platform::build_nic_zone(sg4::NetZone* root, size_t m, size_t j, const MachineLinks& links)
{
  Machine& mc = machines_[m];
  const models::HostProfile& hp = *mc.profile;
  const int nsock = int(hp.sockets.size());
  const auto& nic = hp.nics[j];
  const std::string p = mc.name + ".nic" + std::to_string(j);
  auto* zone = sg4::create_full_zone(p);
  zone->set_parent(root);
  auto* gw = zone->create_router(p + ".gw");
  sg4::Link* up = make_link(zone, p + ".pcie.up", models::link_rate(hp, {models::HostLink::NIC_UP, int(j)}));
  sg4::Link* down = make_link(zone, p + ".pcie.down", models::link_rate(hp, {models::HostLink::NIC_DOWN, int(j)}));

  // Per location (the sockets' memory, then the GPUs): the NIC's DMA read path and its DMA write path.
  std::vector<Location> locs;
  std::vector<std::string> loc_names;
  for (int s = 0; s < nsock; ++s) {
    locs.push_back(Location::host(s));
    loc_names.push_back("mem" + std::to_string(s));
  }
  for (int k = 0; k < int(hp.gpus.size()); ++k) {
    locs.push_back(Location::gpu(k));
    loc_names.push_back("gpu" + std::to_string(k));
  }
  std::vector<LinkList> to_nic, from_nic;
  for (const Location& loc : locs) {
    to_nic.push_back(links.route(models::nic_reads(hp, int(j), loc), up, down));
    from_nic.push_back(links.route(models::nic_writes(hp, int(j), loc), up, down));
  }
  std::vector<sg4::Host*> eps; // [2*k] source view, [2*k+1] destination view
  for (const auto& ln : loc_names)
    for (const char* view : {".src", ".dst"}) {
      auto* h = zone->create_host(p + "." + ln + view, 1e9);
      h->seal();
      eps.push_back(h);
    }
  const size_t nloc = loc_names.size();
  for (size_t e = 0; e < nloc; ++e) {
    sg4::Host* src = eps[2 * e];
    sg4::Host* dst = eps[2 * e + 1];
    zone->add_route(src->get_netpoint(), gw, nullptr, nullptr, to_nic[e], false);
    zone->add_route(gw, dst->get_netpoint(), nullptr, nullptr, from_nic[e], false);
    for (size_t f = 0; f < nloc; ++f) {
      LinkList lb = to_nic[e]; // NIC loopback: read from e, write to f
      append(lb, from_nic[f]);
      zone->add_route(src->get_netpoint(), eps[2 * f + 1]->get_netpoint(), nullptr, nullptr, lb, false);
    }
  }
  zone->seal();
  mc.nic_endpoints.push_back(eps);

  sg4::Link* tx = make_link(root, p + ".port.tx", nic.nic.wire_goodput());
  sg4::Link* rx = make_link(root, p + ".port.rx", nic.nic.wire_goodput());
  if (topology_) { // routed through the Clos by build_fabric
    ports_[m][j] = {zone, gw, tx, rx};
    return;
  }
  root->add_route(zone->get_netpoint(), nullptr, gw, nullptr, {sg4::LinkInRoute(tx)}, false);
  root->add_route(nullptr, zone->get_netpoint(), nullptr, gw, {sg4::LinkInRoute(rx)}, false);
}

int Platform::find_machine(const std::string& name) const
{
  for (size_t m = 0; m < machines_.size(); ++m)
    if (machines_[m].name == name) return int(m);
  return -1;
}

Status Platform::check_location(size_t m, Location loc) const
{
  const auto& hp = *machines_[m].profile;
  if (loc.is_host() && (loc.index < 0 || loc.index >= int(hp.sockets.size())))
    return Error::at(hp.file, machines_[m].name + ".sockets",
                     "a NUMA node in 0.." + std::to_string(hp.sockets.size() - 1), loc.to_string());
  if (loc.is_gpu() && (loc.index < 0 || loc.index >= int(hp.gpus.size())))
    return Error::at(hp.file, machines_[m].name + ".gpus",
                     hp.gpus.empty() ? std::string("no GPU location (this host has no GPU)")
                                     : "a GPU in 0.." + std::to_string(hp.gpus.size() - 1),
                     loc.to_string());
  return ok_status();
}

int Platform::socket_of(size_t m, Location loc) const
{
  return models::socket_of(*machines_[m].profile, loc);
}

sg4::Host* Platform::local_host(size_t m, Location loc) const
{
  return loc.is_host() ? machines_[m].cpus[size_t(loc.index)] : machines_[m].gpus[size_t(loc.index)];
}

sg4::Host* Platform::nic_endpoint(size_t m, int nic, Location loc, bool destination) const
{
  const size_t nsock = machines_[m].profile->sockets.size();
  const size_t k = loc.is_host() ? size_t(loc.index) : nsock + size_t(loc.index);
  return machines_[m].nic_endpoints[size_t(nic)][2 * k + (destination ? 1 : 0)];
}

double Platform::dma_read_latency(size_t m, int nic, Location loc) const
{
  return models::dma_read_latency(*machines_[m].profile, nic, loc);
}

double Platform::dma_write_latency(size_t m, int nic, Location loc) const
{
  return models::dma_write_latency(*machines_[m].profile, nic, loc);
}

double Platform::doorbell_latency(size_t m, int nic, int socket) const
{
  return models::doorbell_latency(*machines_[m].profile, nic, socket);
}

double Platform::wire_latency(size_t ma, int nic_a, size_t mb, int nic_b) const
{
  const bool same_port = ma == mb && nic_a == nic_b;
  const auto& a = machines_[ma].profile->nics[size_t(nic_a)].nic;
  const auto& b = machines_[mb].profile->nics[size_t(nic_b)].nic;
  if (!topology_) return models::wire_latency(a, b, cluster_.network_switch, same_port);
  // through the Clos: each switch beyond the first leaf adds its traversal
  const auto& leaf = topology_->profile().switch_model;
  if (same_port) return models::wire_latency(a, b, leaf, true);
  return models::wire_latency(a, b, leaf, false) + topology_->switch_latency({int(ma), nic_a, int(mb), nic_b, 0, 0}) -
         leaf.latency;
}

double Platform::local_copy_latency(size_t m, Location a, Location b) const
{
  return models::local_copy_latency(*machines_[m].profile, a, b);
}

std::vector<std::string> Platform::route_links(sg4::Host* from, sg4::Host* to)
{
  std::vector<sg4::Link*> links;
  double lat = 0;
  from->route_to(to, links, &lat);
  std::vector<std::string> names;
  for (auto* l : links)
    names.push_back(l->get_name());
  return names;
}

} // namespace tp::sim
