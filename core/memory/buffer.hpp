// Buffers are address ranges with a location. In simulation a buffer need not be backed by memory
// (a 528 MB VGG16 replica per worker must not allocate 528 MB); in materialized mode it carries real
// bytes so that tests can check that the right bytes landed. Backends allocate them through MemorySpace.
#pragma once

#include "core/common/result.hpp"
#include "core/memory/location.hpp"

#include <cstdint>
#include <optional>

namespace tp {

/// Host memory kind: pageable (malloc) or page-locked (cudaHostAlloc / registered pool).
enum class HostMemoryKind : uint8_t { PAGEABLE, PINNED };

/// A contiguous address range in one process. Addresses are unique within a MemorySpace.
struct Buffer {
  uint64_t addr = 0;
  uint64_t size = 0;
  Location location;
  HostMemoryKind host_kind = HostMemoryKind::PAGEABLE; ///< meaningful for host buffers only
  uint8_t* data = nullptr;                             ///< real bytes, or nullptr when not materialized

  bool materialized() const { return data != nullptr; }
  bool valid() const { return size == 0 || addr != 0; }
  /// Sub-range [offset, offset+len) of this buffer; precondition: inside the buffer.
  Buffer slice(uint64_t offset, uint64_t len) const
  {
    Buffer b = *this;
    b.addr += offset;
    b.size = len;
    if (data) b.data = data + offset;
    return b;
  }
};

/// Allocation request attributes.
struct AllocAttr {
  Location location;
  HostMemoryKind host_kind = HostMemoryKind::PAGEABLE;
  /// Back the range with real bytes. nullopt: follow the MemorySpace's default mode.
  std::optional<bool> materialize;
  /// When the range is not materialized: still back its first `materialize_prefix` bytes (a protocol header in
  /// front of a simulated payload, as TF verbs v1 writes them in one buffer).
  uint64_t materialize_prefix = 0;

  static AllocAttr at(Location loc, HostMemoryKind kind = HostMemoryKind::PAGEABLE)
  {
    AllocAttr a;
    a.location = loc;
    a.host_kind = kind;
    return a;
  }
};

/// The address space of one (simulated or real) process.
class MemorySpace {
public:
  virtual ~MemorySpace() = default;
  /// Allocate `size` bytes. Fails with an Error when the location does not exist or memory is exhausted.
  virtual Result<Buffer> allocate(uint64_t size, const AllocAttr& attr) = 0;
  /// Release a buffer returned by allocate().
  virtual void free(const Buffer& buffer) = 0;
  /// Pointer to the bytes of [addr, addr+len), or nullptr when that range is not materialized.
  virtual uint8_t* resolve(uint64_t addr, uint64_t len) = 0;
  /// How many leading bytes of [addr, addr+len) are materialized (all of them, a prefix, or none).
  virtual uint64_t backed_length(uint64_t addr, uint64_t len) { return resolve(addr, len) ? len : 0; }
  /// The buffer (allocation) containing addr, if any.
  virtual std::optional<Buffer> find(uint64_t addr) const = 0;
  /// Whether new allocations are materialized by default.
  virtual bool materialize_by_default() const = 0;
};

} // namespace tp
