// pool_visitor: tensors come from per-location BFC-like pools whose regions are registered once (section 3.3):
// host pools always, GPU pools only for GPUDirect-capable GPUs; anything else is staged.
// graph_aware (section 3.4): only allocations marked nic_compatible come from the registered pools; the rest
// is plain memory, so the pinned footprint is what crosses hosts, not the whole pool.
#include "core/memory/strategies/strategies.hpp"

#include <map>

namespace tp::memory {

namespace {

constexpr verbs::Access ALL_ACCESS =
    verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_WRITE | verbs::Access::REMOTE_READ;

class PoolVisitor final : public StrategyBase {
public:
  PoolVisitor(Runtime& rt, verbs::Device* dev, const StrategyOptions& opt, bool graph_aware)
      : StrategyBase(rt, dev, opt), graph_aware_(graph_aware)
  {
  }
  StrategyKind kind() const override { return graph_aware_ ? StrategyKind::GRAPH_AWARE : StrategyKind::POOL_VISITOR; }

  Result<Tensor> allocate(DataType dtype, const TensorShape& shape, Location loc, AllocatorAttributes attrs,
                          uint64_t proto_bytes) override
  {
    const bool registered_pool = (loc.is_host() || gpudirect(loc)) && (!graph_aware_ || attrs.nic_compatible);
    if (!registered_pool) return allocate_plain(dtype, shape, loc, attrs, proto_bytes);
    RegisteredPool& pool = pool_for(loc);
    auto b = pool.allocate(bytes_for(dtype, shape, proto_bytes));
    if (!b.ok()) return b.error();
    return make_tensor(dtype, shape, proto_bytes, b.value(), [&pool](const Buffer& buf) { pool.free(buf); });
  }

  void acquire(const Buffer& buffer, verbs::Access, std::function<void(Result<NicBuffer>)> done) override
  {
    for (auto& [key, pool] : pools_) {
      auto mr = pool->lookup(buffer.addr);
      if (!mr) continue;
      NicBuffer nb{buffer, *mr, false, buffer, next_token_++};
      pool->pay(buffer.addr, [nb, done = std::move(done)](Status st) {
        if (!st.ok()) return done(st.error());
        done(nb);
      });
      return;
    }
    acquire_staged(buffer, std::move(done)); // not from a registered pool: stage it
  }

  void release(const NicBuffer& nb) override { release_staged(nb); }

private:
  RegisteredPool& pool_for(Location loc)
  {
    const int key = loc.is_gpu() ? 1000 + loc.index : loc.index;
    auto it = pools_.find(key);
    if (it == pools_.end())
      it = pools_
               .emplace(key, std::make_unique<RegisteredPool>(rt_, dev_, AllocAttr::at(loc, HostMemoryKind::PINNED),
                                                              opt_.first_region, ALL_ACCESS, stats_))
               .first;
    return *it->second;
  }

  bool graph_aware_;
  std::map<int, std::unique_ptr<RegisteredPool>> pools_;
};

} // namespace

std::unique_ptr<TensorMemory> make_pool_visitor(Runtime& rt, verbs::Device* dev, const StrategyOptions& opt,
                                                bool graph_aware)
{
  return std::make_unique<PoolVisitor>(rt, dev, opt, graph_aware);
}

} // namespace tp::memory
