// A machine and a cluster, composed from component profiles: sockets (CPU + memory per NUMA node),
// the inter-socket link, GPUs and NICs each on a PCIe link under a socket (directly on its root complex, or behind
// a PCIe switch that shares one uplink and lets a GPU and a NIC under it reach each other without the root
// complex), the GPUs' NVLink/NVSwitch fabric, the registration and TCP models; a cluster is groups of identical
// hosts behind one switch or a Clos topology. Loaded by models/catalog.
#pragma once

#include "models/cpu_model.hpp"
#include "models/gpu_model.hpp"
#include "models/nic_model.hpp"
#include "models/nvlink_model.hpp"
#include "models/pcie_model.hpp"
#include "models/registration_model.hpp"
#include "models/socket_link_model.hpp"
#include "models/switch_model.hpp"
#include "models/tcp_model.hpp"
#include "models/topology_model.hpp"

#include <optional>
#include <string>
#include <vector>

namespace tp::models {

struct SocketSpec {
  CpuProfile cpu;
  double memory = 0; ///< bytes of DRAM on this NUMA node
};

/// A PCIe switch under a socket's root complex: devices behind it share its uplink to the root, and reach each
/// other through the switch alone (peer-to-peer that never crosses the root complex).
struct PcieSwitchSpec {
  int socket = 0;
  PcieProfile uplink; ///< the switch's link to the root complex
  double latency = 0; ///< one traversal of the switch (ingress port to egress port), seconds
};

struct GpuSpec {
  GpuProfile gpu;
  int socket = 0;
  PcieProfile pcie;
  int pcie_switch = -1; ///< index into HostProfile::pcie_switches; -1: on the root complex
};

struct NicSpec {
  NicProfile nic;
  int socket = 0;
  PcieProfile pcie;
  int pcie_switch = -1; ///< index into HostProfile::pcie_switches; -1: on the root complex
};

struct HostProfile {
  std::string name;
  std::string file; ///< where it was loaded from (for error messages)
  std::vector<SocketSpec> sockets;
  SocketLinkProfile socket_link; ///< meaningful with 2 sockets
  std::vector<GpuSpec> gpus;
  std::vector<NicSpec> nics;
  std::vector<PcieSwitchSpec> pcie_switches;
  std::optional<NvlinkProfile> nvlink; ///< the GPUs' NVLink fabric; none: GPU peer traffic goes over PCIe
  RegistrationProfile registration;
  TcpProfile tcp;

  /// The NIC a process using GPU `gpu` talks through, as NCCL pairs them (the network device closest to the GPU in
  /// the PCIe topology, one per GPU where there are enough): behind the GPU's own PCIe switch, the k-th GPU there takes
  /// the k-th NIC there (modulo their count); else the first NIC on the GPU's socket, else NIC 0. On a host with one
  /// NIC: that NIC.
  int nic_for_gpu(int gpu) const;
  /// True when GPU `gpu` and NIC `nic` sit behind the same PCIe switch (their peer traffic stays in it).
  bool same_pcie_switch(int gpu, int nic) const
  {
    const int s = gpus[size_t(gpu)].pcie_switch;
    return s >= 0 && s == nics[size_t(nic)].pcie_switch;
  }
};

struct HostGroup {
  std::string prefix; ///< hosts are named prefix0, prefix1, ...
  int count = 1;
  HostProfile host;
};

struct ClusterProfile {
  std::string name;
  std::vector<HostGroup> groups;
  SwitchProfile network_switch;
  /// The network between the hosts when it is more than one switch (a Clos); none: one non-blocking switch.
  std::optional<TopologyProfile> topology;
  /// Host names in order (prefix + index over all groups).
  std::vector<std::string> host_names() const;
  /// Profile of the i-th host (in host_names() order).
  const HostProfile& host(size_t i) const;
  size_t host_count() const;
  /// The switch a host's port is on: the topology's leaves, else the one switch.
  const SwitchProfile& leaf_switch() const { return topology ? topology->switch_model : network_switch; }
};

/// Build a cluster of `count` copies of `host` behind `sw` (used by perftest and tests).
ClusterProfile make_cluster(const HostProfile& host, int count, const SwitchProfile& sw, const std::string& prefix);

} // namespace tp::models
