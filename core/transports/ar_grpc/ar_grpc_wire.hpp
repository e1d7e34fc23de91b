// AR-gRPC's RecvTensor messages as they ride the Messenger (eager or rendezvous): the request (call id, step,
// rendezvous key) and the response (call id, then an error status or the tensor's meta-data, the tensor bytes
// being the message's payload). Encoding, and the decoder applied to a peer's header together with the payload
// length the Messenger announced. Apart from ar_grpc.cpp so that tests and the fuzz target
// (tests/fuzz/fuzz_ar_grpc.cpp) reach it: a malformed message is an Error, never a payload copied into a
// destination that does not hold it.
#pragma once

#include "core/common/result.hpp"
#include "core/transports/wire_common.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tp::transports::ar_grpc_wire {

constexpr uint8_t REQUEST = 1, RESPONSE = 2;

struct Frame {
  uint8_t type = REQUEST;
  uint64_t id = 0; ///< the consumer's call id
  // REQUEST
  uint64_t step = 0;
  std::string key;
  // RESPONSE
  bool is_error = false;
  std::string error_code, error_text; ///< is_error
  TensorMeta meta;                    ///< !is_error
  /// Payload bytes the response must carry: the tensor's bytes (0 when dead).
  uint64_t payload_bytes() const { return type == RESPONSE && !is_error && !meta.is_dead ? meta.total_bytes() : 0; }
};

std::vector<uint8_t> encode(const Frame& f);
/// Decode a message header that arrived with `payload_len` payload bytes. Checks the type, every field, that
/// nothing trails, and that the payload is exactly what the response's meta-data announces (none otherwise).
Result<Frame> decode(const std::vector<uint8_t>& header, uint64_t payload_len);

} // namespace tp::transports::ar_grpc_wire
