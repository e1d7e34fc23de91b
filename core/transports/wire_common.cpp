// Meta-data encoding and byte helpers.
#include "core/transports/wire_common.hpp"

#include <cstring>

namespace tp::transports {

void write_meta(rpc::Writer& w, const TensorMeta& m)
{
  w.u8(uint8_t(m.dtype));
  w.u8(m.is_dead ? 1 : 0);
  w.u8(uint8_t(m.shape.dims.size()));
  for (int64_t d : m.shape.dims)
    w.u64(uint64_t(d));
  w.u64(m.proto_bytes);
}

bool read_meta(rpc::Reader& r, TensorMeta& m)
{
  uint8_t dtype, dead, ndims;
  if (!r.u8(dtype) || dtype > uint8_t(DataType::INVALID) || !r.u8(dead) || dead > 1 || !r.u8(ndims) || ndims > 16)
    return false;
  m.dtype = DataType(dtype);
  m.is_dead = dead == 1;
  m.shape.dims.clear();
  uint64_t elements = 1;
  for (uint8_t i = 0; i < ndims; ++i) {
    uint64_t d;
    if (!r.u64(d) || d > (1ull << 40)) return false;
    if (d != 0 && elements > uint64_t(MAX_TENSOR_ELEMENTS) / d) return false;
    elements *= d;
    m.shape.dims.push_back(int64_t(d));
  }
  return r.u64(m.proto_bytes) && m.proto_bytes < (1ull << 40);
}

std::vector<uint8_t> real_bytes(MemorySpace& space, const Buffer& b, uint64_t len)
{
  if (len == 0) return {};
  const uint8_t* p = space.resolve(b.addr, len);
  if (!p) return {};
  return std::vector<uint8_t>(p, p + len);
}

void put_bytes(MemorySpace& space, const Buffer& b, const std::vector<uint8_t>& bytes)
{
  if (bytes.empty()) return;
  if (uint8_t* p = space.resolve(b.addr, bytes.size())) std::memcpy(p, bytes.data(), bytes.size());
}

} // namespace tp::transports
