// libFuzzer target: the verbs v2 control message a peer RDMA-writes into our message buffer
// (verbs_v2_wire::decode: TENSOR_REQUEST, META_DATA_UPDATE, TENSOR_RE_REQUEST, ERROR_STATUS).
#include "core/transports/verbs_v2/verbs_v2_wire.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  using namespace tp::transports::verbs_v2_wire;
  // The receiver decodes at most its message buffer, whatever length the completion reports.
  auto m = decode(data, std::min<size_t>(size, MESSAGE_BUFFER));
  if (!m.ok()) return 0;
  (void)m->meta.total_bytes();
  if (m->index > MAX_INDEX) __builtin_trap();
  const auto bytes = encode(*m);
  auto again = decode(bytes.data(), bytes.size());
  if (!again.ok() || again->name != m->name || again->index != m->index || !again->meta.same(m->meta)) __builtin_trap();
  return 0;
}
