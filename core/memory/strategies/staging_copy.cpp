// staging_copy: every transfer goes through pre-registered pinned staging buffers (section 3.2): one copy
// in at the producer, one copy out at the consumer, registrations only when the staging pool grows.
#include "core/memory/strategies/strategies.hpp"

namespace tp::memory {

namespace {

class StagingCopy final : public StrategyBase {
public:
  using StrategyBase::StrategyBase;
  StrategyKind kind() const override { return StrategyKind::STAGING_COPY; }
  Result<Tensor> allocate(DataType dtype, const TensorShape& shape, Location loc, AllocatorAttributes attrs,
                          uint64_t proto_bytes) override
  {
    return allocate_plain(dtype, shape, loc, attrs, proto_bytes);
  }
  void acquire(const Buffer& buffer, verbs::Access, std::function<void(Result<NicBuffer>)> done) override
  {
    acquire_staged(buffer, std::move(done));
  }
  void release(const NicBuffer& nb) override { release_staged(nb); }
};

} // namespace

std::unique_ptr<TensorMemory> make_staging_copy(Runtime& rt, verbs::Device* dev, const StrategyOptions& opt)
{
  return std::make_unique<StagingCopy>(rt, dev, opt);
}

} // namespace tp::memory
