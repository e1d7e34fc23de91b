// verbs v2's control message (TENSOR_REQUEST, META_DATA_UPDATE, TENSOR_RE_REQUEST, ERROR_STATUS;
// docs/protocols.md, verbs_v2): encoding, and the decoder applied to what a peer RDMA-wrote into our message buffer.
// Apart from verbs_v2.cpp so that tests and the fuzz target (tests/fuzz/fuzz_verbs_v2.cpp) reach it: a malformed
// message is an Error, never a read past the bytes that arrived.
#pragma once

#include "core/common/result.hpp"
#include "core/transports/wire_common.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tp::transports::verbs_v2_wire {

constexpr uint32_t IMM_MESSAGE = 0xFFFFFFFF;
constexpr uint32_t IMM_ACK = 0xFFFFFFFE;
constexpr uint32_t MAX_INDEX = 0xFFFFFFFD;      ///< request indices travel as immediates: below IMM_ACK
constexpr uint64_t HEADER_BYTES = 583;          ///< kMessageTotalBytes on x86-64 (docs/protocols.md, verbs_v1)
constexpr uint64_t MESSAGE_BUFFER = 583 + 4096; ///< header + error-status area

enum class MsgType : uint8_t { TENSOR_REQUEST = 1, META_DATA_UPDATE = 2, TENSOR_RE_REQUEST = 3, ERROR_STATUS = 4 };

struct Msg {
  MsgType type = MsgType::TENSOR_REQUEST;
  std::string name;
  int64_t step = 0;
  uint32_t index = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  TensorMeta meta;
  std::string error_code, error_text;
};

std::vector<uint8_t> encode(const Msg& m);
/// Decode a message of `n` bytes (what the WRITE_WITH_IMM carried, at most MESSAGE_BUFFER). Checks the type, the
/// string lengths, the meta-data and that the request index is not one of the reserved immediates.
Result<Msg> decode(const uint8_t* p, size_t n);

} // namespace tp::transports::verbs_v2_wire
