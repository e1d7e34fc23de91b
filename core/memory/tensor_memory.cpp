// Shared pieces of the strategies: timed copies and registrations, tensor construction, names, factory.
#include "core/memory/tensor_memory.hpp"
#include "core/memory/strategies/strategies.hpp"

#include <algorithm>

namespace tp::memory {

const char* to_string(StrategyKind k)
{
  switch (k) {
  case StrategyKind::ON_DEMAND:
    return "on_demand";
  case StrategyKind::ON_DEMAND_CACHED:
    return "on_demand_cached";
  case StrategyKind::STAGING_COPY:
    return "staging_copy";
  case StrategyKind::POOL_VISITOR:
    return "pool_visitor";
  case StrategyKind::GRAPH_AWARE:
    return "graph_aware";
  }
  return "?";
}

std::vector<std::string> strategy_names()
{
  return {"on_demand", "on_demand_cached", "staging_copy", "pool_visitor", "graph_aware"};
}

Result<StrategyKind> parse_strategy(const std::string& name)
{
  for (StrategyKind k : {StrategyKind::ON_DEMAND, StrategyKind::ON_DEMAND_CACHED, StrategyKind::STAGING_COPY,
                         StrategyKind::POOL_VISITOR, StrategyKind::GRAPH_AWARE})
    if (name == to_string(k)) return k;
  return Error::at("", "memory strategy", "one of on_demand, on_demand_cached, staging_copy, pool_visitor, graph_aware",
                   "\"" + name + "\"");
}

bool TensorMemory::gpudirect(Location loc) const
{
  return loc.is_gpu() &&
         std::find(opt_.gpudirect_gpus.begin(), opt_.gpudirect_gpus.end(), loc.index) != opt_.gpudirect_gpus.end();
}

uint64_t TensorMemory::bytes_for(DataType dtype, const TensorShape& shape, uint64_t proto_bytes)
{
  return is_pod(dtype) ? uint64_t(shape.num_elements()) * dtype_size(dtype) : proto_bytes;
}

Result<Tensor> TensorMemory::make_tensor(DataType dtype, const TensorShape& shape, uint64_t proto_bytes, Buffer b,
                                         std::function<void(const Buffer&)> release)
{
  Tensor t;
  t.dtype = dtype;
  t.shape = shape;
  t.proto_bytes = is_pod(dtype) ? 0 : proto_bytes;
  t.storage = std::make_shared<TensorStorage>(b, std::move(release));
  return t;
}

void TensorMemory::copy(const Buffer& dst, const Buffer& src, uint64_t bytes, WorkDone done, bool queued)
{
  const double t0 = rt_.now();
  ++stats_.copies;
  stats_.copy_bytes += double(bytes);
  MemoryStats* stats = &stats_;
  Runtime* rt = &rt_;
  Work w = Work::memcpy(dst, src, bytes);
  w.queued = queued;
  rt_.execute(w, [stats, rt, t0, done = std::move(done)](Status st) {
    stats->copy_seconds += rt->now() - t0;
    done(st);
  });
}

void TensorMemory::copy_in(const NicBuffer& nb, uint64_t bytes, WorkDone done)
{
  if (!nb.staged || bytes == 0) {
    rt_.post([done = std::move(done)] { done(ok_status()); });
    return;
  }
  copy(nb.nic, nb.original, bytes, std::move(done));
}

void TensorMemory::copy_out(const NicBuffer& nb, uint64_t bytes, WorkDone done)
{
  if (!nb.staged || bytes == 0) {
    rt_.post([done = std::move(done)] { done(ok_status()); });
    return;
  }
  copy(nb.original, nb.nic, bytes, std::move(done));
}

void TensorMemory::register_buffer(const Buffer& b, verbs::Access access,
                                   std::function<void(Result<verbs::MemoryRegion>)> done)
{
  if (!dev_) {
    rt_.post([done] { done(Error::at("", "register_buffer", "a process with an RDMA device", "none")); });
    return;
  }
  const double t0 = rt_.now();
  rt_.execute(Work::registration(b), [this, b, access, t0, done = std::move(done)](Status st) {
    stats_.registration_seconds += rt_.now() - t0;
    if (!st.ok()) return done(st.error());
    auto mr = dev_->reg_mr(b.addr, std::max<uint64_t>(b.size, 1), access);
    if (!mr.ok()) return done(mr.error());
    ++stats_.registrations;
    stats_.registered_bytes += double(b.size);
    done(mr.value());
  });
}

void TensorMemory::deregister_buffer(const verbs::MemoryRegion& mr)
{
  if (!dev_) return;
  (void)dev_->dereg_mr(mr);
  ++stats_.deregistrations;
  stats_.registered_bytes -= double(mr.length);
  const double t0 = rt_.now();
  Buffer b;
  b.addr = mr.addr;
  b.size = mr.length;
  rt_.execute(Work::registration(b, true), [this, t0](Status) { stats_.registration_seconds += rt_.now() - t0; });
}

std::unique_ptr<TensorMemory> make_tensor_memory(Runtime& rt, verbs::Device* dev, const StrategyOptions& opt)
{
  switch (opt.kind) {
  case StrategyKind::ON_DEMAND:
  case StrategyKind::ON_DEMAND_CACHED:
    return make_on_demand(rt, dev, opt);
  case StrategyKind::STAGING_COPY:
    return make_staging_copy(rt, dev, opt);
  case StrategyKind::POOL_VISITOR:
    return make_pool_visitor(rt, dev, opt, false);
  case StrategyKind::GRAPH_AWARE:
    return make_pool_visitor(rt, dev, opt, true);
  }
  return nullptr;
}

} // namespace tp::memory
