// Staging through registered pinned host memory, and plain allocation.
#include "core/memory/strategies/strategies.hpp"

namespace tp::memory {

namespace {
constexpr verbs::Access ALL_ACCESS =
    verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_WRITE | verbs::Access::REMOTE_READ;
}

StrategyBase::StrategyBase(Runtime& rt, verbs::Device* dev, const StrategyOptions& opt)
    : TensorMemory(rt, dev, opt),
      staging_(rt, dev, AllocAttr::at(Location::host(opt.nic_socket), HostMemoryKind::PINNED), opt.staging_first_region,
               ALL_ACCESS, stats_)
{
}

void StrategyBase::acquire_staged(const Buffer& buffer, std::function<void(Result<NicBuffer>)> done)
{
  auto chunk = staging_.allocate(std::max<uint64_t>(buffer.size, 1));
  if (!chunk.ok()) {
    Error e = chunk.error();
    rt_.post([done, e] { done(e); });
    return;
  }
  auto mr = staging_.lookup(chunk->addr);
  if (!mr) {
    rt_.post([done] { done(Error::at("", "staging buffer", "a registered staging region", "registration failed")); });
    return;
  }
  NicBuffer nb;
  nb.nic = chunk.value();
  nb.mr = *mr;
  nb.staged = true;
  nb.original = buffer;
  nb.token = next_token_++;
  staging_.pay(nb.nic.addr, [nb, done = std::move(done)](Status st) {
    if (!st.ok()) return done(st.error());
    done(nb);
  });
}

bool StrategyBase::release_staged(const NicBuffer& nb)
{
  return nb.staged && staging_.free(nb.nic);
}

Result<Tensor> StrategyBase::allocate_plain(DataType dtype, const TensorShape& shape, Location loc,
                                            AllocatorAttributes attrs, uint64_t proto_bytes)
{
  const uint64_t bytes = bytes_for(dtype, shape, proto_bytes);
  const bool pinned = loc.is_host() && (attrs.gpu_compatible || attrs.nic_compatible);
  const int key = loc.is_gpu() ? 1000 + loc.index : loc.index;
  auto& pool = plain_[{key, pinned}];
  if (!pool)
    pool = std::make_unique<RegionPool>(rt_.memory(),
                                        AllocAttr::at(loc, pinned ? HostMemoryKind::PINNED : HostMemoryKind::PAGEABLE),
                                        opt_.first_region);
  auto b = pool->allocate(bytes);
  if (!b.ok()) return b.error();
  RegionPool* p = pool.get();
  return make_tensor(dtype, shape, proto_bytes, b.value(), [p](const Buffer& buf) { p->free(buf); });
}

} // namespace tp::memory
