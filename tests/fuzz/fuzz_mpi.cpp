// libFuzzer target: what an MPI transport peer SENDs into our bounce buffers: the Messenger's prefix
// (messenger_wire::decode, MPI's limits: 1 KiB headers, 12 KiB eager payloads), the MPI envelope
// (mpi_wire::decode_envelope: tag, body, payload rules) and the request or response inside it
// (decode_request, decode_response with the payload it announces).
#include "core/transports/mpi/mpi_wire.hpp"
#include "core/transports/rdma/messenger_wire.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  using namespace tp::transports;
  const messenger_wire::Arrival a{size, 1024, 12 << 10};
  auto p = messenger_wire::decode(data, std::min<uint64_t>(size, messenger_wire::prefix_region(a.max_header)), a);
  if (!p.ok()) return 0;
  auto env = mpi_wire::decode_envelope(p->header, p->payload_len);
  if (!env.ok()) return 0;
  if (env->tag == mpi_wire::TAG_REQUEST) {
    auto q = mpi_wire::decode_request(env->body);
    if (q.ok() && mpi_wire::decode_request(mpi_wire::encode(*q))->key != q->key) __builtin_trap();
  } else if (env->tag == mpi_wire::TAG_RESPONSE) {
    auto r = mpi_wire::decode_response(env->body, p->payload_len);
    if (r.ok()) {
      if (r->payload_bytes() != p->payload_len) __builtin_trap();
      auto again = mpi_wire::decode_response(mpi_wire::encode(*r), p->payload_len);
      // encode keeps at most 512 bytes of an error text: compare the rest
      if (!again.ok() || again->key != r->key || !again->meta.same(r->meta) || again->carried != r->carried)
        __builtin_trap();
    }
  }
  return 0;
}
