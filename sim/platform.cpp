// Platform construction: zones, hosts, directional links and asymmetric routes (see platform.hpp).
#include "sim/platform.hpp"
#include "models/latency_model.hpp"

#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <cassert>

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

Platform::Platform(const models::ClusterProfile& cluster) : cluster_(cluster)
{
  auto* root = sg4::create_star_zone("fabric");
  auto names = cluster_.host_names();
  machines_.resize(names.size());
  for (size_t m = 0; m < names.size(); ++m) {
    machines_[m].name = names[m];
    machines_[m].profile = &cluster_.host(m);
  }
  for (size_t m = 0; m < machines_.size(); ++m)
    build_machine(root, m);
  root->seal();
}

/// The links of one machine's local zone and the paths through them, for its routes and its NICs' zones. PCIe
/// links are per direction: "up" = device -> root (device posted writes), "down" = root -> device (read completions).
/// A device behind a PCIe switch adds the switch's uplink to every path that leaves the switch; a GPU and a NIC
/// behind the same switch reach each other through it alone (no root complex, no peer-read limit of the root).
struct Platform::MachineLinks {
  const models::HostProfile& hp;
  sg4::Link* qpi[2][2] = {{nullptr, nullptr}, {nullptr, nullptr}};
  sg4::Link* qpi_p2p[2][2] = {{nullptr, nullptr}, {nullptr, nullptr}}; // GPU peer traffic across sockets
  std::vector<sg4::Link*> gpu_up, gpu_down, gpu_p2p_read;
  std::vector<sg4::Link*> switch_up, switch_down; // per PCIe switch: its uplink to the root complex
  std::vector<sg4::Link*> nvlink_tx, nvlink_rx;   // per GPU, into and out of the NVSwitch fabric

  MachineLinks(const models::HostProfile& h, sg4::NetZone* local, const std::string& n) : hp(h)
  {
    if (hp.sockets.size() == 2)
      for (int a = 0; a < 2; ++a) {
        const int b = 1 - a;
        const std::string dir = std::to_string(a) + "to" + std::to_string(b);
        qpi[a][b] = make_link(local, n + ".qpi." + dir, hp.socket_link.bandwidth);
        qpi_p2p[a][b] = make_link(local, n + ".qpi_p2p." + dir, hp.socket_link.gpu_p2p_bandwidth);
      }
    for (size_t w = 0; w < hp.pcie_switches.size(); ++w) {
      const auto& sw = hp.pcie_switches[w];
      const auto& cpu = hp.sockets[size_t(sw.socket)].cpu;
      const std::string p = n + ".pcie_switch" + std::to_string(w);
      switch_up.push_back(make_link(local, p + ".up", sw.uplink.posted_write_bandwidth()));
      switch_down.push_back(
          make_link(local, p + ".down", sw.uplink.read_completion_bandwidth(cpu.read_completion_size)));
    }
    for (size_t k = 0; k < hp.gpus.size(); ++k) {
      const auto& g = hp.gpus[k];
      const auto& cpu = hp.sockets[size_t(g.socket)].cpu;
      const std::string p = n + ".gpu" + std::to_string(k);
      gpu_up.push_back(make_link(local, p + ".pcie.up", g.pcie.posted_write_bandwidth()));
      gpu_down.push_back(
          make_link(local, p + ".pcie.down", g.pcie.read_completion_bandwidth(cpu.read_completion_size)));
      gpu_p2p_read.push_back(make_link(local, p + ".p2p_read", g.gpu.p2p_read_bandwidth));
      if (hp.nvlink) {
        nvlink_tx.push_back(make_link(local, p + ".nvlink.tx", hp.nvlink->goodput()));
        nvlink_rx.push_back(make_link(local, p + ".nvlink.rx", hp.nvlink->goodput()));
      }
    }
  }
  LinkList socket_hop(int from, int to) const
  {
    LinkList l;
    if (from != to) l.emplace_back(qpi[from][to]);
    return l;
  }
  LinkList p2p_hop(int from, int to) const
  {
    LinkList l;
    if (from != to) {
      l.emplace_back(qpi_p2p[from][to]);
      l.emplace_back(qpi[from][to]);
    }
    return l;
  }
  /// From a device's own link up to its socket's root complex (through its switch's uplink, if any).
  void to_root(LinkList& l, sg4::Link* device_up, int pcie_switch) const
  {
    l.emplace_back(device_up);
    if (pcie_switch >= 0) l.emplace_back(switch_up[size_t(pcie_switch)]);
  }
  /// From the root complex down to a device.
  void from_root(LinkList& l, sg4::Link* device_down, int pcie_switch) const
  {
    if (pcie_switch >= 0) l.emplace_back(switch_down[size_t(pcie_switch)]);
    l.emplace_back(device_down);
  }
  int gpu_switch(size_t k) const { return hp.gpus[k].pcie_switch; }
  int gpu_socket(size_t k) const { return hp.gpus[k].socket; }
  /// Socket `s`'s memory to GPU `k` (a copy engine's H2D read) and back.
  LinkList host_to_gpu(int s, size_t k) const
  {
    LinkList l = socket_hop(s, gpu_socket(k));
    from_root(l, gpu_down[k], gpu_switch(k));
    return l;
  }
  LinkList gpu_to_host(size_t k, int s) const
  {
    LinkList l;
    to_root(l, gpu_up[k], gpu_switch(k));
    append(l, socket_hop(gpu_socket(k), s));
    return l;
  }
  /// GPU k to GPU l: over NVLink when the host has it, else PCIe peer-to-peer (inside a shared switch, or through the
  /// root complexes and across the sockets).
  LinkList gpu_to_gpu(size_t k, size_t l) const
  {
    if (hp.nvlink) return {sg4::LinkInRoute(nvlink_tx[k]), sg4::LinkInRoute(nvlink_rx[l])};
    LinkList r{sg4::LinkInRoute(gpu_up[k])};
    if (gpu_switch(k) >= 0 && gpu_switch(k) == gpu_switch(l)) {
      r.emplace_back(gpu_down[l]);
      return r;
    }
    if (gpu_switch(k) >= 0) r.emplace_back(switch_up[size_t(gpu_switch(k))]);
    append(r, p2p_hop(gpu_socket(k), gpu_socket(l)));
    from_root(r, gpu_down[l], gpu_switch(l));
    return r;
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
                         links.socket_hop(s, t), false);
    for (size_t k = 0; k < hp.gpus.size(); ++k) {
      local->add_route(mc.cpus[size_t(s)]->get_netpoint(), mc.gpus[k]->get_netpoint(), nullptr, nullptr,
                       links.host_to_gpu(s, k), false);
      local->add_route(mc.gpus[k]->get_netpoint(), mc.cpus[size_t(s)]->get_netpoint(), nullptr, nullptr,
                       links.gpu_to_host(k, s), false);
    }
  }
  for (size_t k = 0; k < hp.gpus.size(); ++k)
    for (size_t l = 0; l < hp.gpus.size(); ++l)
      if (k != l)
        local->add_route(mc.gpus[k]->get_netpoint(), mc.gpus[l]->get_netpoint(), nullptr, nullptr,
                         links.gpu_to_gpu(k, l), false);
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
  const int sn = nic.socket;
  const int nsw = nic.pcie_switch;
  const auto& cpu = hp.sockets[size_t(sn)].cpu;
  const std::string p = mc.name + ".nic" + std::to_string(j);
  auto* zone = sg4::create_full_zone(p);
  zone->set_parent(root);
  auto* gw = zone->create_router(p + ".gw");
  sg4::Link* up = make_link(zone, p + ".pcie.up", nic.pcie.posted_write_bandwidth());
  sg4::Link* down = make_link(zone, p + ".pcie.down", nic.pcie.read_completion_bandwidth(cpu.read_completion_size));

  std::vector<LinkList> to_nic, from_nic; // per location: NIC DMA read path, NIC DMA write path
  std::vector<std::string> loc_names;
  for (int s = 0; s < nsock; ++s) {
    loc_names.push_back("mem" + std::to_string(s));
    LinkList r = links.socket_hop(s, sn); // NIC DMA read of host memory
    links.from_root(r, down, nsw);
    to_nic.push_back(r);
    LinkList w; // NIC DMA write to host memory
    links.to_root(w, up, nsw);
    append(w, links.socket_hop(sn, s));
    from_nic.push_back(w);
  }
  for (size_t k = 0; k < hp.gpus.size(); ++k) {
    loc_names.push_back("gpu" + std::to_string(k));
    if (hp.same_pcie_switch(int(k), int(j))) { // peer traffic that stays in the switch
      to_nic.push_back({sg4::LinkInRoute(links.gpu_up[k]), sg4::LinkInRoute(down)});
      from_nic.push_back({sg4::LinkInRoute(up), sg4::LinkInRoute(links.gpu_down[k])});
      continue;
    }
    LinkList r; // NIC reads GPU memory through the root complex(es)
    links.to_root(r, links.gpu_up[k], links.gpu_switch(k));
    r.emplace_back(links.gpu_p2p_read[k]);
    append(r, links.p2p_hop(links.gpu_socket(k), sn));
    links.from_root(r, down, nsw);
    to_nic.push_back(r);
    LinkList w; // NIC writes GPU memory
    links.to_root(w, up, nsw);
    append(w, links.p2p_hop(sn, links.gpu_socket(k)));
    links.from_root(w, links.gpu_down[k], links.gpu_switch(k));
    from_nic.push_back(w);
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
  return models::wire_latency(machines_[ma].profile->nics[size_t(nic_a)].nic,
                              machines_[mb].profile->nics[size_t(nic_b)].nic, cluster_.network_switch,
                              ma == mb && nic_a == nic_b);
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
