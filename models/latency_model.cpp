// The latency compositions (see latency_model.hpp).
#include "models/latency_model.hpp"

namespace tp::models {

int socket_of(const HostProfile& hp, Location loc)
{
  return loc.is_host() ? loc.index : hp.gpus[size_t(loc.index)].socket;
}

namespace {

/// One way from a device behind PCIe switch `sw` up to its root complex: the switch and its uplink (0 without one).
double switch_to_root(const HostProfile& hp, int sw)
{
  if (sw < 0) return 0;
  const auto& s = hp.pcie_switches[size_t(sw)];
  return s.latency + s.uplink.link_latency;
}

/// One way between NIC `nic` and GPU `gpu` behind one PCIe switch: their links and the switch, no root complex.
double in_switch(const HostProfile& hp, int nic, int gpu)
{
  return hp.nics[size_t(nic)].pcie.link_latency + hp.pcie_switches[size_t(hp.gpus[size_t(gpu)].pcie_switch)].latency +
         hp.gpus[size_t(gpu)].pcie.link_latency;
}

} // namespace

double dma_read_latency(const HostProfile& hp, int nic, Location loc)
{
  // A GPU behind the NIC's own PCIe switch answers through the switch: no root complex on the way.
  if (loc.is_gpu() && hp.same_pcie_switch(loc.index, nic)) return 2 * in_switch(hp, nic, loc.index);
  const int sn = hp.nics[size_t(nic)].socket;
  const int sl = socket_of(hp, loc);
  double t = hp.sockets[size_t(sn)].cpu.dma_read_latency + hp.nics[size_t(nic)].pcie.link_latency * 2;
  t += 2 * switch_to_root(hp, hp.nics[size_t(nic)].pcie_switch);
  if (loc.is_gpu())
    t +=
        2 * (hp.gpus[size_t(loc.index)].pcie.link_latency + switch_to_root(hp, hp.gpus[size_t(loc.index)].pcie_switch));
  if (sl != sn) t += 2 * hp.socket_link.latency;
  return t;
}

double dma_write_latency(const HostProfile& hp, int nic, Location loc)
{
  if (loc.is_gpu() && hp.same_pcie_switch(loc.index, nic)) return in_switch(hp, nic, loc.index);
  const int sn = hp.nics[size_t(nic)].socket;
  const int sl = socket_of(hp, loc);
  double t = hp.sockets[size_t(sn)].cpu.posted_write_latency + hp.nics[size_t(nic)].pcie.link_latency;
  t += switch_to_root(hp, hp.nics[size_t(nic)].pcie_switch);
  if (loc.is_gpu())
    t += hp.gpus[size_t(loc.index)].pcie.link_latency + switch_to_root(hp, hp.gpus[size_t(loc.index)].pcie_switch);
  if (sl != sn) t += hp.socket_link.latency;
  return t;
}

double doorbell_latency(const HostProfile& hp, int nic, int socket)
{
  const int sn = hp.nics[size_t(nic)].socket;
  double t = hp.sockets[size_t(sn)].cpu.mmio_write_latency + hp.nics[size_t(nic)].pcie.link_latency;
  t += switch_to_root(hp, hp.nics[size_t(nic)].pcie_switch);
  if (socket != sn) t += hp.socket_link.latency;
  return t;
}

double wire_latency(const NicProfile& a, const NicProfile& b, const SwitchProfile& sw, bool same_port)
{
  if (same_port) return a.tx_pipeline_latency + a.rx_pipeline_latency; // NIC-internal loopback
  return a.tx_pipeline_latency + a.port_latency + sw.latency + b.port_latency + b.rx_pipeline_latency;
}

double local_copy_latency(const HostProfile& hp, Location a, Location b)
{
  // GPU to GPU over NVLink: one round trip through the NVSwitch fabric (a copy engine's read), no root complex.
  if (a.is_gpu() && b.is_gpu() && hp.nvlink) return 2 * hp.nvlink->latency;
  const int sa = socket_of(hp, a);
  const int sb = socket_of(hp, b);
  // A copy-engine DMA: the device reads (H2D) or writes (D2H); charge one DMA read round trip of the
  // root complex of the GPU's socket, plus the inter-socket hops.
  const Location gpu_side = a.is_gpu() ? a : b;
  const int sg = socket_of(hp, gpu_side);
  double t = hp.sockets[size_t(sg)].cpu.dma_read_latency;
  t += 2 * switch_to_root(hp, hp.gpus[size_t(gpu_side.index)].pcie_switch);
  if (sa != sb) t += 2 * hp.socket_link.latency;
  return t;
}

} // namespace tp::models
