// The default gRPC transport of TensorFlow (protocols.md 1.4): RecvTensor request/response over the byte
// stream (TCP over Ethernet or IPoIB, from the host's tcp profile), HTTP/2 framing on the wire, the
// <= 1 KiB copy / > 1 KiB zero-copy encoding rule at the producer, the consumer's copy out of the slices,
// GPU tensors staged through pinned host memory. Tests: tests/core/transports/transports_test.cpp.
#pragma once

#include "core/transports/transport.hpp"

#include <memory>

namespace tp::transports {

std::unique_ptr<Transport> make_grpc_transport(const TaskContext& ctx);

/// Bytes gRPC puts on the wire for a message of `n` bytes: 5-byte length prefix, 9-byte HTTP/2 frame header per
/// 16 KiB DATA frame, and the HEADERS/trailer frames of a unary call (`header_bytes`).
uint64_t grpc_wire_bytes(uint64_t n, uint64_t header_bytes);

} // namespace tp::transports
