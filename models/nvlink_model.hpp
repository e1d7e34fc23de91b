// GPU interconnect model: NVLink links from every GPU of a host into a non-blocking NVSwitch fabric (HGX/DGX
// A100, H100, H200 baseboards), so that any two GPUs of the host exchange data at the per-GPU rate of their links,
// per direction, minus the packet headers. Profiles: models/hw/nvlink/*.json. Used by sim/platform.cpp (GPU<->GPU
// routes) and models/latency_model.cpp.
#pragma once

#include <string>

namespace tp::models {

struct NvlinkProfile {
  std::string name;
  int links = 0;                 ///< NVLink links per GPU
  double link_bandwidth = 0;     ///< per link and direction, line rate, bytes/s
  double payload_efficiency = 1; ///< share of the line rate that carries data (packet headers and flow control)
  double latency = 0;            ///< one-way GPU-to-GPU latency through the switch, seconds

  /// Line rate of a GPU's links together, per direction, bytes/s.
  double bandwidth() const { return links * link_bandwidth; }
  /// Data a GPU can send (or receive) per second over its links, bytes/s.
  double goodput() const { return bandwidth() * payload_efficiency; }
};

} // namespace tp::models
