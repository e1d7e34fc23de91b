// on_demand / on_demand_cached: register each buffer when a transfer needs it (section 3.1). With the cache,
// registrations are kept in an LRU keyed by address range and reused; evictions deregister.
#include "core/memory/strategies/strategies.hpp"

#include <list>

namespace tp::memory {

namespace {

class OnDemand final : public StrategyBase {
public:
  OnDemand(Runtime& rt, verbs::Device* dev, const StrategyOptions& opt)
      : StrategyBase(rt, dev, opt), cached_(opt.kind == StrategyKind::ON_DEMAND_CACHED)
  {
  }
  StrategyKind kind() const override { return opt_.kind; }

  Result<Tensor> allocate(DataType dtype, const TensorShape& shape, Location loc, AllocatorAttributes attrs,
                          uint64_t proto_bytes) override
  {
    return allocate_plain(dtype, shape, loc, attrs, proto_bytes);
  }

  void acquire(const Buffer& buffer, verbs::Access access, std::function<void(Result<NicBuffer>)> done) override
  {
    if (buffer.location.is_gpu() && !gpudirect(buffer.location)) return acquire_staged(buffer, std::move(done));
    if (cached_) {
      for (auto it = lru_.begin(); it != lru_.end(); ++it)
        if (it->mr.addr <= buffer.addr && buffer.addr + buffer.size <= it->mr.addr + it->mr.length &&
            verbs::has(it->mr.access, access)) {
          ++stats_.cache_hits;
          ++it->refs;
          lru_.splice(lru_.begin(), lru_, it);
          NicBuffer nb{buffer, lru_.front().mr, false, buffer, next_token_++};
          rt_.post([nb, done = std::move(done)] { done(nb); });
          return;
        }
      ++stats_.cache_misses;
    }
    const uint64_t token = next_token_++;
    register_buffer(buffer, access | verbs::Access::LOCAL_WRITE,
                    [this, buffer, token, done = std::move(done)](Result<verbs::MemoryRegion> mr) {
                      if (!mr.ok()) return done(mr.error());
                      if (cached_) {
                        lru_.push_front(Entry{mr.value(), 1});
                        evict();
                      }
                      done(NicBuffer{buffer, mr.value(), false, buffer, token});
                    });
  }

  void release(const NicBuffer& nb) override
  {
    if (release_staged(nb)) return;
    if (!cached_) return deregister_buffer(nb.mr);
    for (auto& e : lru_)
      if (e.mr.lkey == nb.mr.lkey && e.refs > 0) {
        --e.refs;
        break;
      }
    evict();
  }

private:
  struct Entry {
    verbs::MemoryRegion mr;
    uint32_t refs = 0; ///< acquisitions not yet released: never evicted while in use
  };

  /// Deregister least recently used entries beyond the capacity, skipping entries in use.
  void evict()
  {
    auto it = lru_.end();
    while (lru_.size() > opt_.cache_entries && it != lru_.begin()) {
      --it;
      if (it->refs == 0) {
        deregister_buffer(it->mr);
        it = lru_.erase(it);
      }
    }
  }
  bool cached_;
  std::list<Entry> lru_;
};

} // namespace

std::unique_ptr<TensorMemory> make_on_demand(Runtime& rt, verbs::Device* dev, const StrategyOptions& opt)
{
  return std::make_unique<OnDemand>(rt, dev, opt);
}

} // namespace tp::memory
