// The latency compositions (see latency_model.hpp).
#include "models/latency_model.hpp"

namespace tp::models {

int socket_of(const HostProfile& hp, Location loc)
{
  return loc.is_host() ? loc.index : hp.gpus[size_t(loc.index)].socket;
}

double dma_read_latency(const HostProfile& hp, int nic, Location loc)
{
  const int sn = hp.nics[size_t(nic)].socket;
  const int sl = socket_of(hp, loc);
  double t = hp.sockets[size_t(sn)].cpu.dma_read_latency + hp.nics[size_t(nic)].pcie.link_latency * 2;
  if (loc.is_gpu()) t += hp.gpus[size_t(loc.index)].pcie.link_latency * 2;
  if (sl != sn) t += 2 * hp.socket_link.latency;
  return t;
}

double dma_write_latency(const HostProfile& hp, int nic, Location loc)
{
  const int sn = hp.nics[size_t(nic)].socket;
  const int sl = socket_of(hp, loc);
  double t = hp.sockets[size_t(sn)].cpu.posted_write_latency + hp.nics[size_t(nic)].pcie.link_latency;
  if (loc.is_gpu()) t += hp.gpus[size_t(loc.index)].pcie.link_latency;
  if (sl != sn) t += hp.socket_link.latency;
  return t;
}

double doorbell_latency(const HostProfile& hp, int nic, int socket)
{
  const int sn = hp.nics[size_t(nic)].socket;
  double t = hp.sockets[size_t(sn)].cpu.mmio_write_latency + hp.nics[size_t(nic)].pcie.link_latency;
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
  const int sa = socket_of(hp, a);
  const int sb = socket_of(hp, b);
  // A copy-engine DMA: the device reads (H2D) or writes (D2H); charge one DMA read round trip of the
  // root complex of the GPU's socket, plus the inter-socket hops.
  const Location gpu_side = a.is_gpu() ? a : b;
  const int sg = socket_of(hp, gpu_side);
  double t = hp.sockets[size_t(sg)].cpu.dma_read_latency;
  if (sa != sb) t += 2 * hp.socket_link.latency;
  return t;
}

} // namespace tp::models
