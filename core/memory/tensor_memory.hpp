// Tensor allocation and NIC registration strategies (docs/protocols.md, memory registration), selectable per run:
//   on_demand         register each buffer for each transfer, deregister after
//   on_demand_cached  the same with an LRU registration cache
//   staging_copy      pre-registered pinned staging buffers; every transfer copies in/out
//   pool_visitor      allocator regions registered once when the pool grows: 2 MiB first region, doubling
//   graph_aware       the zero-copy poster's unified allocator: only tensors marked nic_compatible (they feed or
//                     come out of a cross-host Send/Recv) live in registered pools; GPU tensors go GPUDirect when
//                     the GPU shares the NIC's socket, else through pinned host staging
// Transports ask for a NIC view of a buffer with acquire(); a staged view needs copy_in/copy_out, which are
// timed and counted here. Tests: tests/sim/tensor_memory_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "core/device/device.hpp"
#include "core/runtime/runtime.hpp"
#include "core/tensor/tensor.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tp::memory {

enum class StrategyKind { ON_DEMAND, ON_DEMAND_CACHED, STAGING_COPY, POOL_VISITOR, GRAPH_AWARE };
const char* to_string(StrategyKind k);
/// By name ("on_demand", "on_demand_cached", "staging_copy", "pool_visitor", "graph_aware").
Result<StrategyKind> parse_strategy(const std::string& name);
std::vector<std::string> strategy_names();

struct StrategyOptions {
  StrategyKind kind = StrategyKind::POOL_VISITOR;
  size_t cache_entries = 128;         ///< on_demand_cached: registrations kept
  uint64_t first_region = 2ull << 20; ///< pools: first region size (BFC default 2 MiB)
  uint64_t staging_first_region = 2ull << 20;
  /// GPUs whose memory the NIC may access directly (nv_peer_mem loaded and the GPU on the NIC's socket).
  std::vector<int> gpudirect_gpus;
  int nic_socket = 0; ///< host staging lives on the NIC's NUMA node
};

struct MemoryStats {
  uint64_t registrations = 0;
  uint64_t deregistrations = 0;
  double registered_bytes = 0; ///< currently registered
  double registration_seconds = 0;
  uint64_t copies = 0;
  double copy_bytes = 0;
  double copy_seconds = 0;
  uint64_t cache_hits = 0;
  uint64_t cache_misses = 0;
};

/// What the NIC reads or writes for a buffer: the buffer itself (registered) or a registered staging copy.
struct NicBuffer {
  Buffer nic;             ///< the bytes the NIC touches
  verbs::MemoryRegion mr; ///< covers `nic`
  bool staged = false;    ///< `nic` is a staging buffer; copy_in/copy_out move the data
  Buffer original;
  uint64_t token = 0; ///< identifies the acquisition for release()
};

class TensorMemory {
public:
  virtual ~TensorMemory() = default;
  virtual StrategyKind kind() const = 0;

  /// A tensor of `dtype`/`shape` (or `proto_bytes` for STRING) in `loc`, from the strategy's allocator.
  virtual Result<Tensor> allocate(DataType dtype, const TensorShape& shape, Location loc, AllocatorAttributes attrs,
                                  uint64_t proto_bytes = 0) = 0;
  /// A NIC view of `buffer` with `access` (registration or staging as the strategy says; times charged).
  virtual void acquire(const Buffer& buffer, verbs::Access access, std::function<void(Result<NicBuffer>)> done) = 0;
  /// A NIC view through a registered host staging copy even where the NIC could reach `buffer` itself (a GPU
  /// whose memory the NIC reads slowly through the root complex). copy_in/copy_out move the data.
  virtual void acquire_staged_copy(const Buffer& buffer, std::function<void(Result<NicBuffer>)> done) = 0;
  /// Give a view back (on-demand deregistration, staging buffer to the pool). Timed work is started; no callback.
  virtual void release(const NicBuffer& nb) = 0;

  /// original -> staging (no-op if not staged). Counts a copy.
  void copy_in(const NicBuffer& nb, uint64_t bytes, WorkDone done);
  /// staging -> original (no-op if not staged). Counts a copy.
  void copy_out(const NicBuffer& nb, uint64_t bytes, WorkDone done);
  /// Register an arbitrary buffer (timed), e.g. a transport's own message or tensor buffers.
  void register_buffer(const Buffer& b, verbs::Access access, std::function<void(Result<verbs::MemoryRegion>)> done);
  /// Deregister (timed; fire and forget).
  void deregister_buffer(const verbs::MemoryRegion& mr);
  /// A plain copy between two buffers, timed and counted (transports' own copies go through here). `queued`: issued
  /// right behind another copy on the same stream (its launch cost hides behind that copy's transfer).
  void copy(const Buffer& dst, const Buffer& src, uint64_t bytes, WorkDone done, bool queued = false);

  const MemoryStats& stats() const { return stats_; }
  Runtime& runtime() { return rt_; }
  verbs::Device* device() { return dev_; }

protected:
  TensorMemory(Runtime& rt, verbs::Device* dev, StrategyOptions opt) : rt_(rt), dev_(dev), opt_(std::move(opt)) {}
  bool gpudirect(Location loc) const;
  Result<Tensor> make_tensor(DataType dtype, const TensorShape& shape, uint64_t proto_bytes, Buffer b,
                             std::function<void(const Buffer&)> release);
  static uint64_t bytes_for(DataType dtype, const TensorShape& shape, uint64_t proto_bytes);

  Runtime& rt_;
  verbs::Device* dev_;
  StrategyOptions opt_;
  MemoryStats stats_;
  uint64_t next_token_ = 1;
};

/// The strategy `opt.kind` for one process (`dev` may be null for transports without RDMA).
std::unique_ptr<TensorMemory> make_tensor_memory(Runtime& rt, verbs::Device* dev, const StrategyOptions& opt);

} // namespace tp::memory
