// Assembly of a task's memory, rendezvous, log and transport.
#include "core/transports/task_runtime.hpp"

namespace tp::transports {

Result<std::unique_ptr<TaskRuntime>> TaskRuntime::create(const TaskSpec& spec, const std::string& process, Runtime& rt,
                                                         verbs::Device* dev, StreamNetwork& streams,
                                                         const ClusterSpec& cluster)
{
  const TransportInfo* info = find_transport(spec.transport);
  if (!info) {
    std::string names;
    for (const auto& n : transport_names())
      names += (names.empty() ? "" : ", ") + n;
    return Error::at("", "transport", "one of " + names, "\"" + spec.transport + "\"");
  }
  if (info->needs_rdma && !dev)
    return Error::at("", "transport " + spec.transport, "a process with an RDMA device", "none");
  std::unique_ptr<TaskRuntime> t(new TaskRuntime(spec, rt));
  // A transport without RDMA never registers memory: its allocator gets no device.
  t->memory_ = memory::make_tensor_memory(rt, info->needs_rdma ? dev : nullptr, spec.memory);
  t->rendezvous_ = std::make_unique<rendezvous::RendezvousMgr>(spec.task, t->memory_.get());
  TaskContext ctx;
  ctx.task = spec.task;
  ctx.process = process;
  ctx.runtime = &rt;
  ctx.device = dev;
  ctx.streams = &streams;
  ctx.memory = t->memory_.get();
  ctx.rendezvous = t->rendezvous_.get();
  ctx.cluster = cluster;
  ctx.log = &t->log_;
  ctx.incarnation = spec.incarnation;
  ctx.cpu_numa_node = spec.cpu_numa_node;
  ctx.library_call_seconds = spec.library_call_seconds;
  ctx.options = spec.options;
  ctx.collective_library_only = spec.collective_library_only;
  TaskRuntime* self = t.get();
  ctx.on_fatal = [self](const Error& e) {
    if (self->fatal_handler_) self->fatal_handler_(e);
  };
  t->transport_ = info->make(ctx);
  t->rendezvous_->set_remote_hook(t->transport_.get());
  return t;
}

Result<Tensor> TaskRuntime::make_tensor(DataType dtype, const TensorShape& shape, Location loc,
                                        AllocatorAttributes attrs, uint64_t proto_bytes)
{
  return memory_->allocate(dtype, shape, loc, attrs, proto_bytes);
}

} // namespace tp::transports
