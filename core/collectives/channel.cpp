// Rank-to-rank messages over the rendezvous (see channel.hpp).
#include "core/collectives/channel.hpp"

#include "core/rendezvous/rendezvous_key.hpp"
#include "core/transports/task_runtime.hpp"

namespace tp::collectives {

Channel::Channel(transports::TaskRuntime& task, RankTable ranks, int rank)
    : task_(task), ranks_(std::move(ranks)), rank_(rank)
{
}

Channel::Channel(transports::TaskRuntime& task, std::vector<RankInfo> ranks, int rank)
    : Channel(task, std::make_shared<const std::vector<RankInfo>>(std::move(ranks)), rank)
{
}

std::string Channel::key(const std::string& name, int from, int to) const
{
  return rendezvous::create_key(info(from).device, 1, info(to).device, name);
}

Status Channel::send(int64_t step, const std::string& name, int peer, const Tensor& t)
{
  auto k = rendezvous::parse_key(key(name, rank_, peer));
  if (!k.ok()) return k.error();
  return task_.rendezvous().send(step, k.value(), t, false);
}

void Channel::recv(int64_t step, const std::string& name, int peer, std::function<void(Result<Tensor>)> done)
{
  auto k = rendezvous::parse_key(key(name, peer, rank_));
  if (!k.ok()) {
    done(k.error());
    return;
  }
  auto d = rendezvous::parse_device_name(info(rank_).device);
  rendezvous::RecvArgs args;
  args.dst_location = transports::device_location(d.value(), task_.spec().cpu_numa_node);
  args.alloc_attrs.nic_compatible = true;
  task_.rendezvous().recv_async(step, k.value(), args, [done = std::move(done)](Result<rendezvous::RecvOutcome> r) {
    if (!r.ok())
      done(r.error());
    else
      done(r->tensor);
  });
}

Tensor Channel::view(const Tensor& t, int64_t offset, int64_t count)
{
  Tensor v;
  v.dtype = t.dtype;
  v.shape = TensorShape{{count}};
  const uint64_t es = dtype_size(t.dtype);
  auto parent = t.storage;
  if (!parent) return v; // a view of an empty tensor: no storage
  v.storage = std::make_shared<TensorStorage>(parent->buffer().slice(uint64_t(offset) * es, uint64_t(count) * es),
                                              [parent](const Buffer&) {});
  return v;
}

} // namespace tp::collectives
