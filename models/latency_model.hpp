// The latency compositions of a host and of the fabric, written once: a NIC's DMA read and posted write to a
// memory location (root complex, PCIe links, inter-socket hops), the doorbell, the NIC-to-NIC wire latency and
// a GPU copy engine's DMA. The numbers are the profiles' (models/hw/); the simulator's platform (sim/platform.cpp)
// answers with these. Formulas: docs/model.md. Tests: tests/models/latency_model_test.cpp.
#pragma once

#include "core/memory/location.hpp"
#include "models/host_model.hpp"

namespace tp::models {

/// The CPU socket a location hangs off: its NUMA node for host memory, its PCIe root's socket for a GPU.
int socket_of(const HostProfile& host, Location loc);
/// Round trip of a DMA read issued by NIC `nic` to `loc` (root complex + PCIe links + inter-socket hops), seconds.
double dma_read_latency(const HostProfile& host, int nic, Location loc);
/// One-way latency of a posted write by NIC `nic` to `loc` becoming visible, seconds.
double dma_write_latency(const HostProfile& host, int nic, Location loc);
/// One-way latency of a CPU MMIO write (doorbell) from socket `socket` to NIC `nic`, seconds.
double doorbell_latency(const HostProfile& host, int nic, int socket);
/// NIC-to-NIC one-way latency of a packet from `a` to `b` through switch `sw`: TX pipeline, ports, switch, RX
/// pipeline (no serialization); `same_port`: a NIC's internal loopback (TX and RX pipelines only), seconds.
double wire_latency(const NicProfile& a, const NicProfile& b, const SwitchProfile& sw, bool same_port);
/// Latency of a DMA by a GPU copy engine between `a` and `b` (one of them a GPU) on `host`, seconds.
double local_copy_latency(const HostProfile& host, Location a, Location b);

} // namespace tp::models
