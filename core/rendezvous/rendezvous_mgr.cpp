// Step tables, local vs remote receive, same-address-space device copies.
#include "core/rendezvous/rendezvous_mgr.hpp"
#include "core/memory/tensor_memory.hpp"

namespace tp::rendezvous {

LocalRendezvous& RendezvousMgr::find(int64_t step_id)
{
  auto& p = steps_[step_id];
  if (!p) p = std::make_unique<LocalRendezvous>();
  return *p;
}

Status RendezvousMgr::send(int64_t step_id, const ParsedKey& key, const Tensor& tensor, bool is_dead)
{
  if (key.src.task_name() != task_)
    return Error::at("", "Send " + key.full, "a key whose source device is in " + task_, key.src.task_name());
  return find(step_id).send(key, tensor, is_dead);
}

void RendezvousMgr::recv_local_async(int64_t step_id, const ParsedKey& key, RecvCallback done)
{
  find(step_id).recv_async(key, std::move(done));
}

void RendezvousMgr::recv_async(int64_t step_id, const ParsedKey& key, const RecvArgs& args, RecvCallback done)
{
  if (key.dst.task_name() != task_) {
    done(Error::at("", "RecvAsync " + key.full, "a key whose destination device is in " + task_, key.dst.task_name()));
    return;
  }
  if (!key.src.same_address_space(key.dst)) {
    if (!hook_) {
      done(Error::status("Unavailable", "no transport for a remote receive of " + key.full));
      return;
    }
    if (find(step_id).aborted()) {
      find(step_id).recv_async(key, std::move(done)); // reports the sticky abort status
      return;
    }
    // Registered so that an abort of the step reaches it; whichever comes first (answer or abort) wins.
    auto once = std::make_shared<RecvCallback>(std::move(done));
    const uint64_t id = next_call_++;
    remote_calls_[step_id][id] = RemoteCall{once};
    hook_->recv_from_remote_async(step_id, key, args, [this, step_id, id, once](Result<RecvOutcome> r) {
      auto s = remote_calls_.find(step_id);
      if (s != remote_calls_.end()) {
        s->second.erase(id);
        if (s->second.empty()) remote_calls_.erase(s);
      }
      if (!*once) return; // aborted meanwhile: the caller already has its error
      auto cb = std::move(*once);
      *once = nullptr;
      cb(std::move(r));
    });
    return;
  }
  // Same address space: take the tensor from the local table, then copy it to the destination device when
  // it lives elsewhere (TF's CopyTensor::ViaDMA).
  memory::TensorMemory* mem = memory_;
  RecvArgs a = args;
  find(step_id).recv_async(key, [mem, a, done = std::move(done)](Result<RecvOutcome> r) {
    if (!r.ok() || r->is_dead || !r->tensor.storage || !mem || r->tensor.location() == a.dst_location)
      return done(std::move(r));
    const Tensor src = r->tensor;
    auto dst = mem->allocate(src.dtype, src.shape, a.dst_location, a.alloc_attrs, src.proto_bytes);
    if (!dst.ok()) return done(dst.error());
    Tensor out = dst.value();
    mem->copy(*out.buffer(), *src.buffer(), src.total_bytes(), [out, src, done](Status st) {
      if (!st.ok()) return done(st.error());
      done(RecvOutcome{out, false});
    });
  });
}

void RendezvousMgr::abort_remote_calls(int64_t step_id, const Error& status)
{
  auto s = remote_calls_.find(step_id);
  if (s == remote_calls_.end()) return;
  auto calls = std::move(s->second);
  remote_calls_.erase(s);
  for (auto& [id, c] : calls)
    if (*c.done) {
      auto cb = std::move(*c.done);
      *c.done = nullptr;
      cb(status);
    }
}

void RendezvousMgr::abort_step(int64_t step_id, const Error& status)
{
  find(step_id).start_abort(status);
  abort_remote_calls(step_id, status);
}

void RendezvousMgr::cleanup(int64_t step_id)
{
  auto it = steps_.find(step_id);
  if (it == steps_.end()) return;
  auto table = std::move(it->second);
  steps_.erase(it);
  const Error e = Error::status("Aborted", "step " + std::to_string(step_id) + " was cleaned up");
  table->start_abort(e);
  abort_remote_calls(step_id, e);
}

} // namespace tp::rendezvous
