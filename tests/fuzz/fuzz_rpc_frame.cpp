// libFuzzer target: what a peer's bytes go through first in every RPC-based transport: the RPC frame decoder and the
// tensor meta-data reader (gRPC RecvTensor, GDR descriptors, verbs/MPI/AR-gRPC control messages carry it).
#include "core/rpc/rpc.hpp"
#include "core/transports/wire_common.hpp"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  auto f = tp::rpc::decode_frame(data, size);
  if (f.ok()) {
    tp::rpc::Reader r(f->body.data(), f->body.size());
    tp::transports::TensorMeta m;
    if (tp::transports::read_meta(r, m)) (void)m.total_bytes();
  }
  tp::rpc::Reader r(data, size);
  tp::transports::TensorMeta m;
  (void)tp::transports::read_meta(r, m);
  return 0;
}
