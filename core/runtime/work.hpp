// Work items: local operations whose cost a backend either models (simulator) or really performs
// (emulator): memcpy, serialize/deserialize, reduce, memory (de)registration, GPU kernels, CPU time.
// Protocol code describes *what* happens; the backend decides *how long* it takes.
#pragma once

#include "core/memory/buffer.hpp"

#include <cstdint>
#include <string>

namespace tp {

enum class WorkKind : uint8_t {
  MEMCPY,      ///< copy src -> dst (host<->host memcpy, host<->GPU DMA, GPU<->GPU copy)
  SERIALIZE,   ///< encode `bytes` (protobuf-like) on a CPU of src's NUMA node
  DESERIALIZE, ///< decode `bytes`
  REDUCE,      ///< dst[i] += src[i] over `bytes` of float32 (or the given element type)
  REGISTER,    ///< ibv_reg_mr of `bytes` at src (pinning + NIC translation table update)
  DEREGISTER,  ///< ibv_dereg_mr of `bytes`
  GPU_KERNEL,  ///< a kernel on GPU src.location of `seconds` (measured) duration
  CPU,         ///< `seconds` of CPU time on src's NUMA node
};
const char* to_string(WorkKind k);

enum class ElementType : uint8_t { F32, F64, I32, I64, F16 };
size_t element_size(ElementType t);

struct Work {
  WorkKind kind = WorkKind::CPU;
  Buffer src;
  Buffer dst;
  uint64_t bytes = 0; ///< size of the operation (defaults to src.size where it applies)
  double seconds = 0; ///< for GPU_KERNEL and CPU
  ElementType element = ElementType::F32;
  int threads = 1; ///< REDUCE on a host: cores used (0 = all of the socket's, as TF's intra-op pool does)
  /// MEMCPY over PCIe: queued behind another copy on the same stream, so its launch cost (cudaMemcpyAsync) is
  /// hidden by the previous transfer and the copy engine goes on without a gap. MEMCPY within one GPU: a part of
  /// the kernel launched for an earlier copy (a batched copy kernel), so no launch of its own.
  bool queued = false;
  std::string label; ///< for traces

  static Work memcpy(const Buffer& dst, const Buffer& src, uint64_t bytes)
  {
    Work w;
    w.kind = WorkKind::MEMCPY;
    w.src = src;
    w.dst = dst;
    w.bytes = bytes;
    return w;
  }
  static Work reduce(const Buffer& dst, const Buffer& src, uint64_t bytes, ElementType t = ElementType::F32)
  {
    Work w;
    w.kind = WorkKind::REDUCE;
    w.src = src;
    w.dst = dst;
    w.bytes = bytes;
    w.element = t;
    return w;
  }
  static Work registration(const Buffer& region, bool deregister = false)
  {
    Work w;
    w.kind = deregister ? WorkKind::DEREGISTER : WorkKind::REGISTER;
    w.src = region;
    w.bytes = region.size;
    return w;
  }
  static Work serialize(const Buffer& on, uint64_t bytes, bool decode = false)
  {
    Work w;
    w.kind = decode ? WorkKind::DESERIALIZE : WorkKind::SERIALIZE;
    w.src = on;
    w.bytes = bytes;
    return w;
  }
  static Work gpu_kernel(int gpu, double seconds, std::string label = {})
  {
    Work w;
    w.kind = WorkKind::GPU_KERNEL;
    w.src.location = Location::gpu(gpu);
    w.seconds = seconds;
    w.label = std::move(label);
    return w;
  }
  static Work cpu(int numa_node, double seconds, std::string label = {})
  {
    Work w;
    w.kind = WorkKind::CPU;
    w.src.location = Location::host(numa_node);
    w.seconds = seconds;
    w.label = std::move(label);
    return w;
  }
};

} // namespace tp
