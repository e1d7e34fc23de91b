// The links between host memory, GPUs and NICs (see the header).
#include "models/host_paths.hpp"

#include <algorithm>
#include <limits>

namespace tp::models {

namespace {

void socket_hop(HostPath& p, int from, int to)
{
  if (from != to) p.push_back({HostLink::SOCKET, from, to});
}

/// GPU peer traffic across the socket link: its own limit, then the link itself.
void p2p_hop(HostPath& p, int from, int to)
{
  if (from == to) return;
  p.push_back({HostLink::SOCKET_P2P, from, to});
  p.push_back({HostLink::SOCKET, from, to});
}

/// From a device's own link up to its socket's root complex (through its switch's uplink, if any).
void to_root(HostPath& p, HostLink device_up, int pcie_switch)
{
  p.push_back(device_up);
  if (pcie_switch >= 0) p.push_back({HostLink::SWITCH_UP, pcie_switch});
}

/// From the root complex down to a device.
void from_root(HostPath& p, HostLink device_down, int pcie_switch)
{
  if (pcie_switch >= 0) p.push_back({HostLink::SWITCH_DOWN, pcie_switch});
  p.push_back(device_down);
}

int gpu_socket(const HostProfile& h, int k)
{
  return h.gpus[size_t(k)].socket;
}
int gpu_switch(const HostProfile& h, int k)
{
  return h.gpus[size_t(k)].pcie_switch;
}

} // namespace

double link_rate(const HostProfile& h, const HostLink& l)
{
  const auto completion = [&h](int socket) { return h.sockets[size_t(socket)].cpu.read_completion_size; };
  switch (l.kind) {
  case HostLink::GPU_UP:
    return h.gpus[size_t(l.index)].pcie.posted_write_bandwidth();
  case HostLink::GPU_DOWN:
    return h.gpus[size_t(l.index)].pcie.read_completion_bandwidth(completion(gpu_socket(h, l.index)));
  case HostLink::GPU_P2P_READ:
    return h.gpus[size_t(l.index)].gpu.p2p_read_bandwidth;
  case HostLink::SWITCH_UP:
    return h.pcie_switches[size_t(l.index)].uplink.posted_write_bandwidth();
  case HostLink::SWITCH_DOWN: {
    const auto& sw = h.pcie_switches[size_t(l.index)];
    return sw.uplink.read_completion_bandwidth(completion(sw.socket));
  }
  case HostLink::SOCKET:
    return h.socket_link.bandwidth;
  case HostLink::SOCKET_P2P:
    return h.socket_link.gpu_p2p_bandwidth;
  case HostLink::NVLINK_TX:
  case HostLink::NVLINK_RX:
    return h.nvlink ? h.nvlink->goodput() : 0;
  case HostLink::NIC_UP:
    return h.nics[size_t(l.index)].pcie.posted_write_bandwidth();
  case HostLink::NIC_DOWN: {
    const auto& nic = h.nics[size_t(l.index)];
    return nic.pcie.read_completion_bandwidth(completion(nic.socket));
  }
  }
  return 0;
}

double slowest_rate(const HostProfile& h, const HostPath& p)
{
  double r = std::numeric_limits<double>::infinity();
  for (const auto& l : p)
    r = std::min(r, link_rate(h, l));
  return r;
}

HostPath host_to_gpu(const HostProfile& h, int s, int gpu)
{
  HostPath p;
  socket_hop(p, s, gpu_socket(h, gpu));
  from_root(p, {HostLink::GPU_DOWN, gpu}, gpu_switch(h, gpu));
  return p;
}

HostPath gpu_to_host(const HostProfile& h, int gpu, int s)
{
  HostPath p;
  to_root(p, {HostLink::GPU_UP, gpu}, gpu_switch(h, gpu));
  socket_hop(p, gpu_socket(h, gpu), s);
  return p;
}

HostPath gpu_to_gpu(const HostProfile& h, int k, int l)
{
  if (h.nvlink) return {{HostLink::NVLINK_TX, k}, {HostLink::NVLINK_RX, l}};
  HostPath p{{HostLink::GPU_UP, k}};
  if (gpu_switch(h, k) >= 0 && gpu_switch(h, k) == gpu_switch(h, l)) {
    p.push_back({HostLink::GPU_DOWN, l});
    return p;
  }
  if (gpu_switch(h, k) >= 0) p.push_back({HostLink::SWITCH_UP, gpu_switch(h, k)});
  p2p_hop(p, gpu_socket(h, k), gpu_socket(h, l));
  from_root(p, {HostLink::GPU_DOWN, l}, gpu_switch(h, l));
  return p;
}

HostPath nic_reads(const HostProfile& h, int nic, Location loc)
{
  const int sn = h.nics[size_t(nic)].socket;
  const int nsw = h.nics[size_t(nic)].pcie_switch;
  HostPath p;
  if (loc.is_host()) {
    socket_hop(p, loc.index, sn);
  } else if (h.same_pcie_switch(loc.index, nic)) { // peer traffic that stays in the switch
    p.push_back({HostLink::GPU_UP, loc.index});
    p.push_back({HostLink::NIC_DOWN, nic});
    return p;
  } else { // the NIC reads GPU memory through the root complex(es)
    to_root(p, {HostLink::GPU_UP, loc.index}, gpu_switch(h, loc.index));
    p.push_back({HostLink::GPU_P2P_READ, loc.index});
    p2p_hop(p, gpu_socket(h, loc.index), sn);
  }
  from_root(p, {HostLink::NIC_DOWN, nic}, nsw);
  return p;
}

HostPath nic_writes(const HostProfile& h, int nic, Location loc)
{
  const int sn = h.nics[size_t(nic)].socket;
  const int nsw = h.nics[size_t(nic)].pcie_switch;
  if (loc.is_gpu() && h.same_pcie_switch(loc.index, nic))
    return {{HostLink::NIC_UP, nic}, {HostLink::GPU_DOWN, loc.index}};
  HostPath p;
  to_root(p, {HostLink::NIC_UP, nic}, nsw);
  if (loc.is_host()) {
    socket_hop(p, sn, loc.index);
  } else {
    p2p_hop(p, sn, gpu_socket(h, loc.index));
    from_root(p, {HostLink::GPU_DOWN, loc.index}, gpu_switch(h, loc.index));
  }
  return p;
}

} // namespace tp::models
