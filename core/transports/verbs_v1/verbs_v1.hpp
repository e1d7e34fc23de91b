// TF contrib verbs, first design (Yahoo, TF r1.2-r1.5; docs/protocols.md, verbs_v1): every tensor is copied into a
// pinned buffer per (peer, tensor name), reused across steps and re-created larger when a tensor outgrows it.
// Control messages (TENSOR_REQUEST, BUFFER_REQUEST, BUFFER_RESPONSE, BUFFER_IDLE) ride one message buffer per
// direction, each message acknowledged through the ACK buffers; the data goes as one WRITE_WITH_IMM of header
// + payload whose immediate is the 32-bit hash of the destination buffer's name. Two copies per transfer
// (producer into its buffer, consumer out of it), registrations on first use and on growth, one transfer in
// flight per (peer, tensor). Tests: tests/sim/transport_suite_test.cpp.
#pragma once

#include "core/transports/transport.hpp"

namespace tp::transports {

std::unique_ptr<Transport> make_verbs_v1_transport(const TaskContext& ctx);
/// The registry entry: name, description, factory, failure behaviour, option knobs (core/transports/registry.cpp).
TransportInfo verbs_v1_transport_info();

/// Hash32 of a buffer name (the immediate that identifies a destination buffer).
uint32_t verbs_v1_buffer_hash(const std::string& name);

} // namespace tp::transports
