// Inter-socket link model (Intel QPI / UPI): per-direction bandwidth and the extra latency a PCIe DMA
// pays when its memory is on the other socket; also the GPU peer-to-peer limit across it.
// Profiles: models/hw/socket_link/*.json.
#pragma once

#include <string>

namespace tp::models {

struct SocketLinkProfile {
  std::string name;
  double bandwidth = 0;         ///< per direction, bytes/s
  double latency = 0;           ///< one-way extra latency of crossing the link, seconds
  double gpu_p2p_bandwidth = 0; ///< GPU<->GPU or NIC<->GPU peer traffic across the link, bytes/s
};

} // namespace tp::models
