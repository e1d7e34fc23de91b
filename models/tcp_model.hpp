// Kernel TCP/IP stack model for byte streams (gRPC, out-of-band set-up): segmentation with header bytes
// per segment, one-way stack latency per message, the CPU-bound throughput of one connection, and what that CPU
// work costs at each end (per byte and per RPC message), which the simulator runs on the process's threads
// (docs/model.md "The CPU of a process"). Profiles: models/hw/tcp/*.json.
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
  /// CPU seconds of one RPC message at one end beyond its bytes (gRPC's call handling: HTTP/2 HEADERS, the
  /// completion-queue hop, the call object), 0 = not charged.
  double rpc_message_cpu = 0;
  double stream_bandwidth_cap() const
  {
    double c = connection_bandwidth;
    if (rpc_connection_bandwidth > 0 && (c <= 0 || rpc_connection_bandwidth < c)) c = rpc_connection_bandwidth;
    return c;
  }

  /// CPU seconds per byte at one end of a connection: sending (copies into slices, HTTP/2 framing, the TCP send
  /// path) or receiving (the TCP receive path, frame parsing, copies out of the slices). One connection's messages
  /// are handled by one thread at each end, so the thread of the slower end is what caps a connection at
  /// stream_bandwidth_cap(): its cost is 1 / cap. Both ends are charged that (the faster end's own cost is not
  /// measured apart; at most this). 0: no cap, no cost.
  double cpu_per_byte() const
  {
    const double c = stream_bandwidth_cap();
    return c > 0 ? 1.0 / c : 0.0;
  }
  /// CPU seconds of one message of `bytes` at one end.
  double message_cpu(double bytes) const { return rpc_message_cpu + bytes * cpu_per_byte(); }

  double wire_bytes(double n) const
  {
    const double segs = n <= 0 ? 1 : std::ceil(n / mss);
    return n + segs * segment_overhead;
  }
};

} // namespace tp::models
