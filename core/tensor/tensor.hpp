// Tensors as the rendezvous and the transports see them: dtype, shape and a reference-counted buffer
// (an address range in a MemorySpace, possibly virtual). Sharing a Tensor shares its buffer, as TF's
// TensorBuffer refcount does (GDR keeps a producer tensor alive until the consumer releases it).
#pragma once

#include "core/memory/buffer.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tp {

/// POD dtypes plus STRING, the stand-in for every non-POD dtype (serialized as a proto on the wire).
enum class DataType : uint8_t { FLOAT, DOUBLE, HALF, INT32, INT64, STRING, INVALID };
const char* to_string(DataType t);
/// Bytes per element (0 for STRING and INVALID).
size_t dtype_size(DataType t);
inline bool is_pod(DataType t)
{
  return t != DataType::STRING && t != DataType::INVALID;
}

/// The most elements a tensor may have: what a tensor's meta-data may announce on the wire (read_meta refuses
/// more), far above any memory. 2^50 float32 elements are 4 PiB.
constexpr int64_t MAX_TENSOR_ELEMENTS = int64_t(1) << 50;

struct TensorShape {
  std::vector<int64_t> dims;
  int64_t num_elements() const
  {
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    return n;
  }
  friend bool operator==(const TensorShape&, const TensorShape&) = default;
  std::string to_string() const;
};

/// What an allocation is for (TF's AllocatorAttributes): where it must be reachable from.
struct AllocatorAttributes {
  bool on_host = false;        ///< host memory even for a GPU device
  bool gpu_compatible = false; ///< pinned host memory (a GPU can DMA it)
  bool nic_compatible = false; ///< NIC-registered memory (an RDMA transfer will use it in place)
};

/// Storage of a tensor: a buffer and what to do when the last reference goes away.
class TensorStorage {
public:
  TensorStorage(Buffer b, std::function<void(const Buffer&)> release) : buffer_(b), release_(std::move(release)) {}
  ~TensorStorage()
  {
    if (release_) release_(buffer_);
  }
  TensorStorage(const TensorStorage&) = delete;
  TensorStorage& operator=(const TensorStorage&) = delete;
  const Buffer& buffer() const { return buffer_; }

private:
  Buffer buffer_;
  std::function<void(const Buffer&)> release_;
};

struct Tensor {
  DataType dtype = DataType::INVALID;
  TensorShape shape;
  std::shared_ptr<TensorStorage> storage; ///< null for an empty or dead tensor
  /// For STRING tensors: the serialized (proto) size in bytes; ignored for POD dtypes.
  uint64_t proto_bytes = 0;

  /// Bytes of content: elements x element size for POD, proto_bytes for STRING.
  uint64_t total_bytes() const
  {
    return is_pod(dtype) ? uint64_t(shape.num_elements()) * dtype_size(dtype) : proto_bytes;
  }
  const Buffer* buffer() const { return storage ? &storage->buffer() : nullptr; }
  Location location() const { return storage ? storage->buffer().location : Location::host(0); }
  bool same_meta(const Tensor& o) const { return dtype == o.dtype && shape == o.shape && proto_bytes == o.proto_bytes; }
};

} // namespace tp
