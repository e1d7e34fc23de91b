// The Messenger's message prefix (type, message id, the protocol's header, payload length, RTS source and
// chunking, FIN/READY chunk): encoding, and the decoder applied to each bounce buffer a peer SENT into. Apart
// from messenger.cpp so that tests and the fuzz target (tests/fuzz/fuzz_ar_grpc.cpp) reach it: a malformed or
// inconsistent prefix (an eager payload longer than what arrived, an RTS with no chunk size) is an Error, never a
// read past the bounce buffer or a division by zero.
#pragma once

#include "core/common/result.hpp"

#include <cstdint>
#include <vector>

namespace tp::transports::messenger_wire {

constexpr uint8_t EAGER = 1, RTS = 2, FIN = 3, PING = 4, PONG = 5, READY = 6;
constexpr uint8_t PIPELINED = 1;             ///< RTS flag: chunks become readable one by one, each announced by a READY
constexpr uint64_t MAX_PAYLOAD = 1ull << 40; ///< largest rendezvous payload: 1 TiB

struct Prefix {
  uint8_t type = 0;
  uint64_t msg_id = 0;
  std::vector<uint8_t> header;
  uint64_t payload_len = 0;
  uint64_t addr = 0;
  uint32_t rkey = 0;
  uint64_t chunk = 0;     ///< RTS: the chunk size; FIN: the chunks it acknowledges from fin_chunk on (0 or 1: one)
  uint32_t fin_chunk = 0; ///< FIN, READY: the (first) chunk
  uint8_t flags = 0;
};

/// Bytes before an eager payload in a bounce buffer: the largest header plus the prefix's own fields.
constexpr uint64_t prefix_region(uint64_t max_header)
{
  return max_header + 64;
}

std::vector<uint8_t> encode(const Prefix& p);

/// What the receiver knows about a bounce buffer that arrived.
struct Arrival {
  uint64_t received = 0;       ///< bytes the SEND carried (prefix region + eager payload)
  uint64_t max_header = 1024;  ///< MessengerOptions::max_header
  uint64_t eager_capacity = 0; ///< payload room after the prefix region (MessengerOptions::eager_threshold)
};

/// Decode the prefix from the first `n` bytes of a bounce buffer (n <= prefix_region). Checks the fields and
/// their consistency with `a`: an eager payload fits the bounce buffer and arrived whole; an RTS has a payload of
/// at most MAX_PAYLOAD, a non-zero chunk size and at most 2^32 - 1 chunks; known flags only.
Result<Prefix> decode(const uint8_t* d, size_t n, const Arrival& a);

/// Chunks a FIN acknowledges: its `chunk` field for a chunk train, one for the protocol's own FIN (0).
inline uint64_t fin_chunks(const Prefix& p)
{
  return p.chunk > 0 ? p.chunk : 1;
}

/// Rendezvous chunks of an RTS (decode checked that they fit 32 bits).
inline uint32_t chunk_count(const Prefix& p)
{
  return uint32_t(p.payload_len / p.chunk + (p.payload_len % p.chunk != 0));
}

} // namespace tp::transports::messenger_wire
