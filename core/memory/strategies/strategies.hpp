// Internal: the strategy implementations behind make_tensor_memory(), and their shared staging path.
#pragma once

#include "core/memory/registered_pool.hpp"
#include "core/memory/tensor_memory.hpp"

#include <map>
#include <memory>
#include <unordered_map>

namespace tp::memory {

/// Common base: a pinned, registered host staging pool on the NIC's NUMA node and plain allocation.
class StrategyBase : public TensorMemory {
public:
  StrategyBase(Runtime& rt, verbs::Device* dev, const StrategyOptions& opt);
  /// Stage `buffer` through a registered pinned host chunk (copies are the transport's copy_in/copy_out).
  void acquire_staged(const Buffer& buffer, std::function<void(Result<NicBuffer>)> done);
  void acquire_staged_copy(const Buffer& buffer, std::function<void(Result<NicBuffer>)> done) override
  {
    acquire_staged(buffer, std::move(done));
  }
  /// Return a staging chunk (true if `nb` was staged here).
  bool release_staged(const NicBuffer& nb);
  /// Plain (unregistered) allocation from the process's MemorySpace; pinned host if gpu_compatible/on_host asks.
  Result<Tensor> allocate_plain(DataType dtype, const TensorShape& shape, Location loc, AllocatorAttributes attrs,
                                uint64_t proto_bytes);

protected:
  RegisteredPool staging_;
  /// Unregistered pools per (location, pinned): TF's BFC allocators, so that addresses recur across steps.
  std::map<std::pair<int, bool>, std::unique_ptr<RegionPool>> plain_;
};

std::unique_ptr<TensorMemory> make_on_demand(Runtime& rt, verbs::Device* dev, const StrategyOptions& opt);
std::unique_ptr<TensorMemory> make_staging_copy(Runtime& rt, verbs::Device* dev, const StrategyOptions& opt);
/// pool_visitor (graph_aware = false) and the graph-aware unified allocator (graph_aware = true).
std::unique_ptr<TensorMemory> make_pool_visitor(Runtime& rt, verbs::Device* dev, const StrategyOptions& opt,
                                                bool graph_aware);

} // namespace tp::memory
