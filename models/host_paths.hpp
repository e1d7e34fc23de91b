// The links a transfer inside one host crosses, written once: which PCIe links, switch uplinks, socket-link
// directions and NVLink ports lie between host memory, GPUs and NICs, and the rate of each as its profile gives
// it. The simulator's platform (sim/platform.cpp) turns every link into a SimGrid link and routes along these paths;
// the closed-form models (models/nccl/collective_model.cpp) take a path's slowest link. PCIe links are per
// direction: "up" = device -> root complex (the device's posted writes), "down" = root -> device (read
// completions). A device behind a PCIe switch adds the switch's uplink to every path that leaves the switch; a GPU
// and a NIC behind the same switch reach each other through it alone (no root complex, no peer-read limit of the
// root). Tests: tests/models/host_paths_test.cpp.
#pragma once

#include "core/memory/location.hpp"
#include "models/host_model.hpp"

#include <vector>

namespace tp::models {

struct HostLink {
  enum Kind {
    GPU_UP,       ///< GPU `index`'s PCIe link, device -> root
    GPU_DOWN,     ///< GPU `index`'s PCIe link, root -> device
    GPU_P2P_READ, ///< a peer reading GPU `index`'s memory through the root complex
    SWITCH_UP,    ///< PCIe switch `index`'s uplink, switch -> root
    SWITCH_DOWN,  ///< root -> switch `index`
    SOCKET,       ///< the socket link from socket `index` to socket `to`
    SOCKET_P2P,   ///< GPU peer traffic's own limit on that socket link direction
    NVLINK_TX,    ///< GPU `index` into the NVSwitch fabric
    NVLINK_RX,    ///< the NVSwitch fabric into GPU `index`
    NIC_UP,       ///< NIC `index`'s PCIe link, device -> root (its DMA writes)
    NIC_DOWN,     ///< NIC `index`'s PCIe link, root -> device (read completions of its DMA reads)
  } kind;
  int index = 0;
  int to = -1; ///< SOCKET, SOCKET_P2P: the socket the link goes to
  bool operator==(const HostLink& o) const { return kind == o.kind && index == o.index && to == o.to; }
};
using HostPath = std::vector<HostLink>;

/// The rate of one link, bytes/s, as the profile gives it (posted writes up, read completions of the root's CPU down).
double link_rate(const HostProfile& h, const HostLink& l);
/// The slowest link of a path, bytes/s (infinity for an empty path).
double slowest_rate(const HostProfile& h, const HostPath& p);

/// Host memory of socket `s` to GPU `gpu` (a copy engine's H2D), and back (D2H).
HostPath host_to_gpu(const HostProfile& h, int s, int gpu);
HostPath gpu_to_host(const HostProfile& h, int gpu, int s);
/// GPU k to GPU l: over NVLink when the host has it, else PCIe peer-to-peer (inside a shared switch, or through the
/// root complexes and, across sockets, both limits of the socket link).
HostPath gpu_to_gpu(const HostProfile& h, int k, int l);
/// NIC `nic` DMA-reading `loc` (host memory of a socket, or a GPU's memory), and DMA-writing it.
HostPath nic_reads(const HostProfile& h, int nic, Location loc);
HostPath nic_writes(const HostProfile& h, int nic, Location loc);

} // namespace tp::models
