// A BFC-like pool of memory regions in one location: chunks are carved first-fit out of regions that are
// obtained from the MemorySpace as needed (first region 2 MiB or the request rounded up, then doubling, as
// TF's BFC allocator with growth). A region-created hook lets the owner register each region once (TF's
// allocator visitors). Tests: tests/sim/tensor_memory_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "core/memory/buffer.hpp"

#include <functional>
#include <map>
#include <vector>

namespace tp::memory {

class RegionPool {
public:
  struct Region {
    Buffer buffer;
    std::map<uint64_t, uint64_t> free; ///< offset -> length of free chunks (coalesced)
  };
  using RegionHook = std::function<void(size_t region_index, const Buffer& region)>;

  RegionPool(MemorySpace& space, AllocAttr attr, uint64_t first_region_bytes, RegionHook on_new_region = {})
      : space_(space), attr_(attr), next_region_(first_region_bytes), hook_(std::move(on_new_region))
  {
  }
  /// A chunk of `bytes` (rounded up to 256 B), from an existing region or a new one.
  Result<Buffer> allocate(uint64_t bytes);
  /// Return a chunk obtained from allocate(); false if it is not ours.
  bool free(const Buffer& chunk);
  /// Index of the region holding `addr`, or -1.
  int region_of(uint64_t addr) const;
  const Region& region(size_t i) const { return regions_[i]; }
  size_t region_count() const { return regions_.size(); }
  uint64_t reserved_bytes() const;

private:
  MemorySpace& space_;
  AllocAttr attr_;
  uint64_t next_region_;
  RegionHook hook_;
  std::vector<Region> regions_;
};

} // namespace tp::memory
