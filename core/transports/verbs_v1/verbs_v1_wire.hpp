// verbs v1's message header (the fixed HEADER bytes at offset 0 of the message buffer and of every tensor buffer):
// encoding, and the decoder applied to what a peer RDMA-wrote there. Apart from verbs_v1.cpp so that tests and
// the fuzz target (tests/fuzz/fuzz_verbs_v1.cpp) reach it: a malformed header is an Error, never a read past it.
#pragma once

#include "core/common/result.hpp"
#include "core/transports/wire_common.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tp::transports::verbs_v1_wire {

constexpr uint64_t HEADER = 720; ///< fixed header at offset 0 of every message and tensor buffer
/// Largest tensor buffer a peer may ask for (BUFFER_REQUEST/RESPONSE): 1 TiB.
constexpr uint64_t MAX_BUFFER = 1ull << 40;

// ERROR_STATUS is tensorpath's: TF v1 CHECK-fails the producer instead (the process dies and the master aborts
// the step); the message makes the consumer's Recv report that outcome without killing a simulated process.
enum class MsgType : uint8_t {
  ACK = 1,
  TENSOR_REQUEST,
  BUFFER_REQUEST,
  BUFFER_RESPONSE,
  BUFFER_IDLE,
  TENSOR_WRITE,
  ERROR_STATUS
};

struct Msg {
  MsgType type = MsgType::ACK;
  std::string name;
  int64_t step = 0;
  uint64_t buffer_size = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  TensorMeta meta;
  std::string error_code, error_text;
};

std::vector<uint8_t> encode(const Msg& m);
/// Decode the header in the first `n` bytes of `p` (n <= HEADER). Checks the type, the string lengths, the
/// meta-data and, for BUFFER_REQUEST/RESPONSE, that the buffer size is within [HEADER, MAX_BUFFER].
Result<Msg> decode(const uint8_t* p, size_t n);
/// The payload bytes a tensor header announces (0 for a dead tensor), checked against the tensor buffer it
/// arrived in (`buffer_size` bytes, HEADER included): an Error if the peer claims more than the buffer holds.
Result<uint64_t> payload_bytes(const Msg& m, uint64_t buffer_size);

} // namespace tp::transports::verbs_v1_wire
