// Per-message costs of RC on the wire, written once: the ACK / NAK packet, the RDMA READ request, the payload at
// the wire's goodput and the header bytes the goodput does not charge. Used by the simulated NIC (sim/rc_requester.cpp,
// sim/rc_responder.cpp, sim/rc_loss.cpp); the numbers are a NIC's profile (models/hw/nic/*.json). Formulas:
// docs/model.md. Tests: tests/models/latency_model_test.cpp.
#pragma once

#include "models/nic_model.hpp"

#include <algorithm>
#include <cstdint>

namespace tp::models {

/// Serialization of an ACK (or NAK) packet by the NIC that sends it, seconds.
inline double ack_packet_time(const NicProfile& sender)
{
  return sender.ack_packet_bytes / sender.line_rate;
}

/// An ACK / NAK from `sender` reaching the requester: the wire latency back plus its serialization, seconds.
inline double ack_time(const NicProfile& sender, double wire_latency)
{
  return wire_latency + ack_packet_time(sender);
}

/// Serialization of an RDMA READ request (an ACK-sized packet plus the RETH) by the requester's NIC, seconds.
inline double read_request_time(const NicProfile& requester)
{
  return (requester.ack_packet_bytes + requester.rdma_header_bytes) / requester.line_rate;
}

/// Time for `bytes` of payload at the wire's goodput with full-MTU packets (NicProfile::wire_goodput), seconds.
inline double goodput_time(const NicProfile& nic, double bytes)
{
  return bytes / nic.wire_goodput();
}

/// The exact header bytes of every packet of an `n`-byte message minus what the fluid goodput already charges,
/// as time on the line, seconds (never negative).
inline double extra_header_time(const NicProfile& nic, uint64_t n, bool rdma_header, bool imm)
{
  const double exact = nic.wire_bytes(n, rdma_header, imm);
  const double fluid = double(n) / nic.payload_efficiency();
  return std::max(0.0, exact - fluid) / nic.line_rate;
}

} // namespace tp::models
