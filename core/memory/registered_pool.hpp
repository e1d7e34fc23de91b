// A RegionPool whose regions are registered with the NIC once, when they are created (TF's allocator
// visitors). Registration is bookkeeping at creation; its time is owed by the region and paid by the first
// acquire() that uses it, so that it lands on the transfer that first needs the memory.
#pragma once

#include "core/device/device.hpp"
#include "core/memory/region_pool.hpp"
#include "core/runtime/runtime.hpp"

#include <optional>
#include <vector>

namespace tp::memory {

struct MemoryStats;

class RegisteredPool {
public:
  RegisteredPool(Runtime& rt, verbs::Device* dev, AllocAttr attr, uint64_t first_region, verbs::Access access,
                 MemoryStats& stats);
  Result<Buffer> allocate(uint64_t bytes);
  bool free(const Buffer& chunk) { return pool_.free(chunk); }
  /// The MR of the region holding addr (nullopt if not ours or the region failed to register).
  std::optional<verbs::MemoryRegion> lookup(uint64_t addr) const;
  /// Charge the registration time of addr's region if still owed, then call done.
  void pay(uint64_t addr, WorkDone done);
  uint64_t reserved_bytes() const { return pool_.reserved_bytes(); }

private:
  Runtime& rt_;
  verbs::Device* dev_;
  verbs::Access access_;
  MemoryStats& stats_;
  RegionPool pool_;
  std::vector<std::optional<verbs::MemoryRegion>> mrs_;
  std::vector<bool> owed_;
  std::optional<Error> last_error_;
};

} // namespace tp::memory
