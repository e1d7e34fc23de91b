// MemorySpace of a simulated process: virtual address ranges per location (a NUMA node's DRAM or a GPU's
// memory), capacity-checked against the host profile, optionally backed by real bytes (materialized mode).
// Tests: tests/sim/sim_memory_test.cpp.
#pragma once

#include "core/memory/buffer.hpp"

#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tp::sim {

class SimMemory final : public MemorySpace {
public:
  struct Region {
    Location location;
    double capacity = 0; ///< bytes
  };
  SimMemory(std::string owner, std::vector<Region> regions, bool materialize_default);
  // Not copied or moved: containing()'s kept answers point into this object's map.
  SimMemory(const SimMemory&) = delete;
  SimMemory& operator=(const SimMemory&) = delete;

  Result<Buffer> allocate(uint64_t size, const AllocAttr& attr) override;
  void free(const Buffer& buffer) override;
  uint8_t* resolve(uint64_t addr, uint64_t len) override;
  uint64_t backed_length(uint64_t addr, uint64_t len) override;
  std::optional<Buffer> find(uint64_t addr) const override;
  bool materialize_by_default() const override { return materialize_default_; }
  /// Bytes currently allocated in a location.
  double used(Location loc) const;

private:
  struct Space {
    Region region;
    uint64_t base = 0;
    uint64_t next = 0;
    double used = 0;
  };
  struct Allocation {
    Buffer buffer;
    std::unique_ptr<uint8_t[]> bytes;
    uint64_t backed = 0; ///< materialized leading bytes
  };
  Space* space_for(Location loc);
  uint8_t* allocation_data(uint64_t addr);
  /// The allocation that holds `addr`, or null; the last few found are kept, since a transfer asks about the same
  /// buffers piece after piece (an RDMA READ of a tensor chunk by chunk, the message slots that acknowledge them).
  const Allocation* containing(uint64_t addr) const;
  const Space* space_for(Location loc) const;

  std::string owner_;
  std::vector<Space> spaces_;
  std::map<uint64_t, Allocation> allocations_; // by start address
  /// containing()'s last answers (an entry is reset when its allocation is freed), and the next entry to replace.
  mutable std::array<const Allocation*, 4> last_found_{};
  mutable size_t next_replaced_ = 0;
  /// Allocations with materialized bytes: while none, resolve() finds nothing without a look-up (a training run's
  /// tensors are timed only, and every copy and sum asks).
  size_t backed_allocations_ = 0;
  bool materialize_default_;
};

} // namespace tp::sim
