// libFuzzer target: the RDMA channel set-up message (task, QP endpoint, fixed buffers) that every RDMA transport
// (verbs v1/v2, GDR, MPI, AR-gRPC) exchanges over RPC before its QP connects: decode_channel_hello.
#include "core/transports/rdma/rdma_channels.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  const std::vector<uint8_t> in(data, data + size);
  auto h = tp::transports::decode_channel_hello(in);
  if (h.ok() && (h->buffers.size() > 1024 || h->task.size() > 1024 || (h->ep.qp_num >> 24) != 0)) __builtin_trap();
  return 0;
}
