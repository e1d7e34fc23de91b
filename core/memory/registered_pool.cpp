// Registration at region creation, time paid on first use.
#include "core/memory/registered_pool.hpp"
#include "core/memory/tensor_memory.hpp"

namespace tp::memory {

RegisteredPool::RegisteredPool(Runtime& rt, verbs::Device* dev, AllocAttr attr, uint64_t first_region,
                               verbs::Access access, MemoryStats& stats)
    : rt_(rt), dev_(dev), access_(access), stats_(stats),
      pool_(rt.memory(), attr, first_region, [this](size_t i, const Buffer& region) {
        if (mrs_.size() <= i) {
          mrs_.resize(i + 1);
          owed_.resize(i + 1, false);
        }
        if (!dev_) return;
        auto mr = dev_->reg_mr(region.addr, region.size, access_);
        if (!mr.ok()) {
          last_error_ = mr.error();
          return;
        }
        mrs_[i] = mr.value();
        owed_[i] = true; // counted (stats_.registrations) when its time is paid
        stats_.registered_bytes += double(region.size);
      })
{
}

Result<Buffer> RegisteredPool::allocate(uint64_t bytes)
{
  last_error_.reset();
  auto b = pool_.allocate(bytes);
  if (b.ok() && last_error_) return *last_error_;
  return b;
}

std::optional<verbs::MemoryRegion> RegisteredPool::lookup(uint64_t addr) const
{
  const int r = pool_.region_of(addr);
  if (r < 0 || size_t(r) >= mrs_.size()) return std::nullopt;
  return mrs_[size_t(r)];
}

void RegisteredPool::pay(uint64_t addr, WorkDone done)
{
  const int r = pool_.region_of(addr);
  if (r < 0 || size_t(r) >= owed_.size() || !owed_[size_t(r)]) {
    rt_.post([done] { done(ok_status()); });
    return;
  }
  owed_[size_t(r)] = false;
  ++stats_.registrations;
  const Buffer region = pool_.region(size_t(r)).buffer;
  const double t0 = rt_.now();
  MemoryStats* stats = &stats_;
  Runtime* rt = &rt_;
  rt_.execute(Work::registration(region), [stats, rt, t0, done](Status st) {
    stats->registration_seconds += rt->now() - t0;
    done(st);
  });
}

} // namespace tp::memory
