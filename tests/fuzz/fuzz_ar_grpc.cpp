// libFuzzer target: what an AR-gRPC peer SENDs into our bounce buffers: the Messenger's prefix
// (messenger_wire::decode: type, id, header, payload length, RTS source and chunking, checked against the bytes
// that arrived) and, inside it, the AR-gRPC request or response header with the payload it announces
// (ar_grpc_wire::decode). The first input byte picks the receiver's limits (max_header, eager capacity) among
// the ones the transports use.
#include "core/transports/ar_grpc/ar_grpc_wire.hpp"
#include "core/transports/rdma/messenger_wire.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  using namespace tp::transports;
  if (size < 1) return 0;
  messenger_wire::Arrival a;
  a.max_header = (data[0] & 1) ? 1024 : 64;
  a.eager_capacity = (data[0] & 2) ? 64 << 10 : 16 << 10;
  ++data;
  --size;
  // The bytes that arrived: the whole input (prefix region + eager payload); decode sees at most the region.
  a.received = size;
  const uint64_t region = messenger_wire::prefix_region(a.max_header);
  auto p = messenger_wire::decode(data, std::min<uint64_t>(size, region), a);
  if (!p.ok()) return 0;
  if (p->type == messenger_wire::EAGER && p->payload_len > 0 &&
      (p->payload_len > a.eager_capacity || region + p->payload_len > a.received))
    __builtin_trap();
  if (p->type == messenger_wire::RTS) (void)messenger_wire::chunk_count(*p);
  auto f = ar_grpc_wire::decode(p->header, p->payload_len);
  if (!f.ok()) return 0;
  if (f->payload_bytes() != p->payload_len) __builtin_trap();
  auto again = ar_grpc_wire::decode(ar_grpc_wire::encode(*f), p->payload_len);
  if (!again.ok() || again->key != f->key || !again->meta.same(f->meta)) __builtin_trap();
  return 0;
}
