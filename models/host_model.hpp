// A machine and a cluster, composed from component profiles: sockets (CPU + memory per NUMA node),
// the inter-socket link, GPUs and NICs each on a PCIe link under a socket, the registration and TCP
// models; a cluster is groups of identical hosts behind one switch. Loaded by models/catalog.
#pragma once

#include "models/cpu_model.hpp"
#include "models/gpu_model.hpp"
#include "models/nic_model.hpp"
#include "models/pcie_model.hpp"
#include "models/registration_model.hpp"
#include "models/socket_link_model.hpp"
#include "models/switch_model.hpp"
#include "models/tcp_model.hpp"

#include <string>
#include <vector>

namespace tp::models {

struct SocketSpec {
  CpuProfile cpu;
  double memory = 0; ///< bytes of DRAM on this NUMA node
};

struct GpuSpec {
  GpuProfile gpu;
  int socket = 0;
  PcieProfile pcie;
};

struct NicSpec {
  NicProfile nic;
  int socket = 0;
  PcieProfile pcie;
};

struct HostProfile {
  std::string name;
  std::string file; ///< where it was loaded from (for error messages)
  std::vector<SocketSpec> sockets;
  SocketLinkProfile socket_link; ///< meaningful with 2 sockets
  std::vector<GpuSpec> gpus;
  std::vector<NicSpec> nics;
  RegistrationProfile registration;
  TcpProfile tcp;
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
  /// Host names in order (prefix + index over all groups).
  std::vector<std::string> host_names() const;
  /// Profile of the i-th host (in host_names() order).
  const HostProfile& host(size_t i) const;
  size_t host_count() const;
};

/// Build a cluster of `count` copies of `host` behind `sw` (used by perftest and tests).
ClusterProfile make_cluster(const HostProfile& host, int count, const SwitchProfile& sw, const std::string& prefix);

} // namespace tp::models
