// libFuzzer target: a GDR RecvTensor response body as the consumer reads it: the common RecvTensor header
// (read_recv_tensor_header: kind, meta-data, producer time) and, for kind 1, the remote memory region descriptor
// (gdr_wire::read_remote_region) whose size becomes an RDMA READ (at most a 32-bit SGE length).
#include "core/transports/gdr/gdr_wire.hpp"
#include "core/transports/grpc/grpc.hpp"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  using namespace tp::transports;
  tp::rpc::Reader r(data, size);
  auto h = read_recv_tensor_header(r);
  if (!h.ok() || h->kind != gdr_wire::KIND_GDR) return 0;
  auto region = gdr_wire::read_remote_region(r, h->meta);
  if (region.ok() && (region->bytes == 0 || region->bytes > 0xFFFFFFFFull || region->bytes != h->meta.total_bytes()))
    __builtin_trap();
  return 0;
}
