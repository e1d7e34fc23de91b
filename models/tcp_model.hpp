// Kernel TCP/IP stack model for byte streams (gRPC, out-of-band set-up): segmentation with header bytes
// per segment, one-way stack latency per message, and the CPU-bound throughput of one connection.
// Profiles: models/hw/tcp/*.json.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

namespace tp::models {

struct TcpProfile {
  std::string name;
  double mss = 1448;               ///< payload bytes per segment
  double segment_overhead = 78;    ///< header bytes per segment on the wire (TCP+IP+L2 framing)
  double stack_latency = 0;        ///< one-way latency of send+receive stack traversal, seconds
  double connection_bandwidth = 0; ///< CPU-bound throughput of one connection, bytes/s (0 = no cap)

  double wire_bytes(double n) const
  {
    const double segs = n <= 0 ? 1 : std::ceil(n / mss);
    return n + segs * segment_overhead;
  }
};

} // namespace tp::models
