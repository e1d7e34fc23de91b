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
  /// CPU-bound throughput of one connection of an RPC stack (gRPC: HTTP/2 over TCP, one core per connection,
  /// system calls and wake-ups included), bytes/s (0 = no cap). The byte streams of tensorpath carry RPCs.
  double rpc_connection_bandwidth = 0;
  double stream_bandwidth_cap() const
  {
    double c = connection_bandwidth;
    if (rpc_connection_bandwidth > 0 && (c <= 0 || rpc_connection_bandwidth < c)) c = rpc_connection_bandwidth;
    return c;
  }

  double wire_bytes(double n) const
  {
    const double segs = n <= 0 ? 1 : std::ceil(n / mss);
    return n + segs * segment_overhead;
  }
};

} // namespace tp::models
