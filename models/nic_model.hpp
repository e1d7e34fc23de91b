// RDMA NIC model: link layer, data rate, MTU packetization with per-packet header bytes, NIC pipeline
// latencies and per-WQE processing time. Profiles: models/hw/nic/*.json. Used by sim/sim_device.
#pragma once

#include <cstdint>
#include <string>

namespace tp::models {

/// ETHERNET: a plain Ethernet NIC (TCP only, no RDMA offload).
enum class LinkLayerKind { INFINIBAND, ROCE_V1, ROCE_V2, ETHERNET };
const char* to_string(LinkLayerKind k);

struct NicProfile {
  std::string name;
  std::string description;
  std::string file; ///< the file it was read from: `pcie` is resolved beside it first
  LinkLayerKind link_layer = LinkLayerKind::INFINIBAND;
  double line_rate = 0;           ///< data rate after line encoding, bytes/s
  uint32_t mtu = 4096;            ///< active path MTU, bytes of payload per packet
  double packet_overhead = 0;     ///< header + trailer bytes per data packet on the wire (incl. preamble/IFG)
  double rdma_header_bytes = 16;  ///< RETH, added to the first packet of RDMA WRITE / READ request
  double imm_header_bytes = 4;    ///< ImmDt, added to the last packet of *_WITH_IMM
  double ack_packet_bytes = 0;    ///< size of an ACK / read request / NAK packet on the wire
  std::string pcie;               ///< default PCIe attachment (profile name)
  double port_latency = 0;        ///< one-way PHY+MAC+cable latency of the port, seconds
  double tx_pipeline_latency = 0; ///< NIC send-side processing latency, seconds
  double rx_pipeline_latency = 0; ///< NIC receive-side processing latency, seconds
  double wqe_processing_time = 0; ///< per-WQE service time of one QP's send engine, seconds
  double max_message_rate = 0;    ///< NIC-wide messages/s (0 = unlimited)
  uint32_t max_inline_data = 0;   ///< bytes that may be posted inline (no WQE fetch, no payload DMA read)

  /// Packets needed for a message of n bytes (a zero-length message is one packet).
  bool rdma_capable() const { return link_layer != LinkLayerKind::ETHERNET; }
  uint64_t packets(uint64_t n) const { return n == 0 ? 1 : (n + mtu - 1) / mtu; }
  /// Fraction of the line rate that carries payload with full-MTU packets.
  double payload_efficiency() const { return double(mtu) / (double(mtu) + packet_overhead); }
  /// Payload goodput of the wire with full-MTU packets, bytes/s.
  double wire_goodput() const { return line_rate * payload_efficiency(); }
  /// Bytes on the wire for a message of n payload bytes (headers of every packet included).
  double wire_bytes(uint64_t n, bool rdma_header, bool imm) const
  {
    return double(n) + double(packets(n)) * packet_overhead + (rdma_header ? rdma_header_bytes : 0) +
           (imm ? imm_header_bytes : 0);
  }
};

} // namespace tp::models
