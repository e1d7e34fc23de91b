// libFuzzer target: the verbs v1 message header a peer RDMA-writes into our message and tensor buffers
// (verbs_v1_wire::decode), and the payload size check of a tensor header against the buffer it arrived in.
#include "core/transports/verbs_v1/verbs_v1_wire.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  using namespace tp::transports::verbs_v1_wire;
  // The receiver decodes at most HEADER bytes, whatever the buffer holds.
  auto m = decode(data, std::min<size_t>(size, HEADER));
  if (!m.ok()) return 0;
  (void)m->meta.total_bytes();
  // A tensor buffer of the size the fuzzer's own header asked for (within the decoder's limits), and a small one.
  for (uint64_t buffer : {m->buffer_size, uint64_t(HEADER), uint64_t(HEADER + 4096)}) {
    auto n = payload_bytes(*m, buffer);
    if (n.ok() && (buffer < HEADER || *n > buffer - HEADER)) __builtin_trap();
  }
  // What decodes re-encodes to something that decodes the same.
  auto again = decode(encode(*m).data(), encode(*m).size());
  if (!again.ok() || again->name != m->name || !again->meta.same(m->meta)) __builtin_trap();
  return 0;
}
