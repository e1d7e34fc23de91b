// The bytes on the process link (process_link.hpp) between the software verbs devices of two OS processes, and their
// decoders. These bytes come from another process, so every decoder checks sizes, counts and lengths and answers a
// malformed message with "no" (the link drops the connection, the responder NAKs the request), never an
// out-of-bounds access. Fuzzed by tests/fuzz/fuzz_process_link.cpp; all fields little-endian.
//   frame     u8 type (HELLO / REQUEST / RESPONSE), u32 body length (at most MAX_FRAME_BODY), body
//   hello     u16 first lid, u64 arena base, u64 arena capacity (the arena's memfd rides along as SCM_RIGHTS)
//   request   u64 seq, u64 remote address, u64 length, u16 source lid, u16 destination lid, u32 source qpn,
//             u32 destination qpn, u32 immediate, u32 rkey, u32 SGE count, u32 inline length, u8 opcode,
//             then per SGE u64 address, u64 length (in the requester's arena), then the inline bytes
//   response  u64 seq, u32 qpn, u16 lid (the requester's), u8 verdict, u8 RNR timer
#pragma once

#include "core/device/verbs_types.hpp"
#include "core/rpc/rpc.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

namespace tp::emu::wire {

constexpr uint8_t HELLO = 1, REQUEST = 2, RESPONSE = 3;
constexpr size_t FRAME_HEAD_BYTES = 5;
/// A frame carries a work request's header, never its payload (that moves through the shared arenas).
constexpr uint32_t MAX_FRAME_BODY = 1u << 20;
constexpr size_t HELLO_BODY_BYTES = 18;
constexpr size_t REQUEST_HEADER_BYTES = 53;
constexpr size_t RESPONSE_BYTES = 16;
/// At most this many SGEs per request (the soft device's max_sge is lower); at most verbs::MAX_MESSAGE_BYTES per
/// message.
constexpr uint32_t MAX_SGES = 64;

struct FrameHead {
  uint8_t type = 0;
  uint32_t length = 0;
};

inline std::array<uint8_t, FRAME_HEAD_BYTES> encode_head(uint8_t type, uint32_t length)
{
  std::array<uint8_t, FRAME_HEAD_BYTES> h{type};
  for (int i = 0; i < 4; ++i)
    h[size_t(1 + i)] = uint8_t(length >> (8 * i));
  return h;
}

/// A frame head that a peer may send: a known type and a body no longer than MAX_FRAME_BODY.
inline std::optional<FrameHead> decode_head(const uint8_t* h)
{
  FrameHead f;
  f.type = h[0];
  f.length = uint32_t(h[1]) | uint32_t(h[2]) << 8 | uint32_t(h[3]) << 16 | uint32_t(h[4]) << 24;
  if (f.type != HELLO && f.type != REQUEST && f.type != RESPONSE) return std::nullopt;
  if (f.length > MAX_FRAME_BODY) return std::nullopt;
  return f;
}

/// Read frames from a byte stream (`recv(p, n)`: exactly n bytes or false) into `body` until the stream ends or a
/// frame is malformed; `on_frame(type, body)` returns false to stop. Returns how many frames were read.
template <class Recv, class OnFrame> size_t read_frames(Recv&& recv, std::vector<uint8_t>& body, OnFrame&& on_frame)
{
  size_t frames = 0;
  for (;;) {
    uint8_t raw[FRAME_HEAD_BYTES];
    if (!recv(raw, sizeof raw)) return frames;
    const auto head = decode_head(raw);
    if (!head) return frames;
    body.resize(head->length);
    if (head->length > 0 && !recv(body.data(), head->length)) return frames;
    ++frames;
    if (!on_frame(head->type, body)) return frames;
  }
}

struct Hello {
  uint16_t first_lid = 0;
  uint64_t arena_base = 0;
  uint64_t arena_capacity = 0;
};

/// The whole hello frame, head included.
inline std::vector<uint8_t> encode_hello(const Hello& h)
{
  rpc::Writer w;
  for (uint8_t b : encode_head(HELLO, HELLO_BODY_BYTES))
    w.u8(b);
  w.u16(h.first_lid);
  w.u64(h.arena_base);
  w.u64(h.arena_capacity);
  return w.take();
}

/// A whole hello frame: its head says HELLO with an 18-byte body, and the arena is not empty.
inline std::optional<Hello> decode_hello(const uint8_t* data, size_t size)
{
  if (size != FRAME_HEAD_BYTES + HELLO_BODY_BYTES) return std::nullopt;
  const auto head = decode_head(data);
  if (!head || head->type != HELLO || head->length != HELLO_BODY_BYTES) return std::nullopt;
  rpc::Reader r(data + FRAME_HEAD_BYTES, HELLO_BODY_BYTES);
  Hello h;
  if (!r.u16(h.first_lid) || !r.u64(h.arena_base) || !r.u64(h.arena_capacity)) return std::nullopt;
  if (h.arena_capacity == 0 || h.arena_base + h.arena_capacity < h.arena_base) return std::nullopt;
  return h;
}

struct RequestHeader {
  uint64_t seq = 0;
  uint64_t remote_addr = 0;
  uint64_t len = 0;
  uint16_t src_lid = 0, dst_lid = 0;
  uint32_t src_qpn = 0, dst_qpn = 0;
  uint32_t imm_data = 0;
  uint32_t rkey = 0;
  verbs::WrOpcode opcode = verbs::WrOpcode::SEND;
};

struct Sge {
  uint64_t addr = 0;
  uint64_t length = 0;
};

/// A decoded request; `inline_data` points into the body it was decoded from.
struct Request {
  RequestHeader h;
  std::vector<Sge> sges;
  const uint8_t* inline_data = nullptr;
  uint32_t inline_len = 0;
};

inline std::vector<uint8_t> encode_request(const RequestHeader& h, const std::vector<Sge>& sges,
                                           const uint8_t* inline_data, uint32_t inline_len)
{
  rpc::Writer w;
  w.u64(h.seq);
  w.u64(h.remote_addr);
  w.u64(h.len);
  w.u16(h.src_lid);
  w.u16(h.dst_lid);
  w.u32(h.src_qpn);
  w.u32(h.dst_qpn);
  w.u32(h.imm_data);
  w.u32(h.rkey);
  w.u32(uint32_t(sges.size()));
  w.u32(inline_len);
  w.u8(uint8_t(h.opcode));
  for (const auto& s : sges) {
    w.u64(s.addr);
    w.u64(s.length);
  }
  auto out = w.take();
  if (inline_len > 0) out.insert(out.end(), inline_data, inline_data + inline_len);
  return out;
}

/// Just the header (seq, lid and qpn to answer to), when the whole request does not decode.
inline std::optional<RequestHeader> decode_request_header(const uint8_t* data, size_t size, uint32_t* n_sge = nullptr,
                                                          uint32_t* inline_len = nullptr)
{
  rpc::Reader r(data, size);
  RequestHeader h;
  uint32_t sges = 0, inl = 0;
  uint8_t opcode = 0;
  if (!r.u64(h.seq) || !r.u64(h.remote_addr) || !r.u64(h.len) || !r.u16(h.src_lid) || !r.u16(h.dst_lid) ||
      !r.u32(h.src_qpn) || !r.u32(h.dst_qpn) || !r.u32(h.imm_data) || !r.u32(h.rkey) || !r.u32(sges) || !r.u32(inl) ||
      !r.u8(opcode))
    return std::nullopt;
  h.opcode = verbs::WrOpcode(opcode);
  if (n_sge) *n_sge = sges;
  if (inline_len) *inline_len = inl;
  return h;
}

/// A request that a responder may act on: a known opcode, at most MAX_SGES SGEs, no more bytes than the frame holds
/// and no fewer, a length within MAX_MESSAGE_BYTES that equals what the SGEs or the inline bytes hold (a READ's SGEs
/// say where its bytes go), and inline bytes only on a SEND or WRITE.
inline std::optional<Request> decode_request(const uint8_t* data, size_t size)
{
  uint32_t n_sge = 0, inline_len = 0;
  auto h = decode_request_header(data, size, &n_sge, &inline_len);
  if (!h) return std::nullopt;
  if (uint8_t(h->opcode) > uint8_t(verbs::WrOpcode::RDMA_READ)) return std::nullopt;
  if (n_sge > MAX_SGES || h->len > verbs::MAX_MESSAGE_BYTES) return std::nullopt;
  if (inline_len > 0 && (n_sge > 0 || h->opcode == verbs::WrOpcode::RDMA_READ)) return std::nullopt;
  if (size != REQUEST_HEADER_BYTES + size_t(n_sge) * 16 + inline_len) return std::nullopt;
  Request req;
  req.h = *h;
  rpc::Reader r(data + REQUEST_HEADER_BYTES, size - REQUEST_HEADER_BYTES);
  uint64_t total = 0;
  req.sges.resize(n_sge);
  for (auto& s : req.sges) {
    if (!r.u64(s.addr) || !r.u64(s.length)) return std::nullopt;
    if (s.length > verbs::MAX_MESSAGE_BYTES) return std::nullopt;
    total += s.length; // at most 64 x 2^31: no overflow
  }
  if (inline_len > 0) {
    req.inline_data = data + REQUEST_HEADER_BYTES;
    req.inline_len = inline_len;
    total = inline_len;
  }
  if (total != h->len) return std::nullopt;
  return req;
}

struct Response {
  uint64_t seq = 0;
  uint32_t qpn = 0;
  uint16_t lid = 0;
  uint8_t verdict = 0;
  uint8_t rnr_timer = 0;
};

inline std::vector<uint8_t> encode_response(const Response& resp)
{
  rpc::Writer w;
  w.u64(resp.seq);
  w.u32(resp.qpn);
  w.u16(resp.lid);
  w.u8(resp.verdict);
  w.u8(resp.rnr_timer);
  return w.take();
}

/// Exactly RESPONSE_BYTES; the verdict's range is the caller's to check.
inline std::optional<Response> decode_response(const uint8_t* data, size_t size)
{
  if (size != RESPONSE_BYTES) return std::nullopt;
  rpc::Reader r(data, size);
  Response resp;
  if (!r.u64(resp.seq) || !r.u32(resp.qpn) || !r.u16(resp.lid) || !r.u8(resp.verdict) || !r.u8(resp.rnr_timer))
    return std::nullopt;
  return resp;
}

} // namespace tp::emu::wire
