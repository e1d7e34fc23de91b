// The MPI transport's messages as they ride the Messenger: an envelope (tag, body) around the request (step,
// rendezvous key, request id; tag 1010), the response (step, key, then an error status or the tensor's meta-data;
// tag 2020) and the data (an empty body, the tensor as payload; tag 3030). Encoding, and the decoders applied to
// a peer's header together with the payload length the Messenger announced. Apart from mpi.cpp so that tests and
// the fuzz target (tests/fuzz/fuzz_mpi.cpp) reach it: a malformed message is an Error.
#pragma once

#include "core/common/result.hpp"
#include "core/transports/wire_common.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tp::transports::mpi_wire {

constexpr uint32_t TAG_REQUEST = 1010, TAG_RESPONSE = 2020, TAG_DATA = 3030;

/// How a response carries the tensor.
enum class Carried : uint8_t {
  DATA_FOLLOWS = 0, ///< meta-data only: the bytes follow as a TAG_DATA message (the optimal path)
  IN_PAYLOAD = 1,   ///< the serialized tensor is this message's payload
  ERROR = 2,        ///< no tensor: an error status
};

struct Envelope {
  uint32_t tag = TAG_REQUEST;
  std::vector<uint8_t> body;
};

struct Request {
  uint64_t step = 0;
  std::string key;
  uint64_t request_id = 0;
};

struct Response {
  uint64_t step = 0;
  std::string key;
  Carried carried = Carried::IN_PAYLOAD;
  std::string error_code, error_text; ///< ERROR (encode keeps at most 64 and 512 bytes)
  TensorMeta meta;                    ///< otherwise
  /// Payload bytes the response message itself carries: the tensor's bytes when IN_PAYLOAD (0 when dead).
  uint64_t payload_bytes() const { return carried == Carried::IN_PAYLOAD && !meta.is_dead ? meta.total_bytes() : 0; }
};

std::vector<uint8_t> encode(const Envelope& e);
std::vector<uint8_t> encode(const Request& r);
std::vector<uint8_t> encode(const Response& r);
/// The envelope of a message that arrived with `payload_len` payload bytes: a known tag, a body of at most 1 MiB
/// and nothing after it; requests carry no payload, data messages no body.
Result<Envelope> decode_envelope(const std::vector<uint8_t>& header, uint64_t payload_len);
Result<Request> decode_request(const std::vector<uint8_t>& body);
/// A response body; its message carried `payload_len` payload bytes, which must be what it announces.
Result<Response> decode_response(const std::vector<uint8_t>& body, uint64_t payload_len);

} // namespace tp::transports::mpi_wire
