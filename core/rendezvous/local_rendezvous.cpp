// Per-key FIFOs of sends or receivers.
#include "core/rendezvous/local_rendezvous.hpp"

namespace tp::rendezvous {

Status LocalRendezvous::send(const ParsedKey& key, const Tensor& tensor, bool is_dead)
{
  if (abort_) return *abort_;
  auto& q = table_[key.full];
  if (q.empty() || q.front().is_send) {
    Item it;
    it.is_send = true;
    it.tensor = tensor;
    it.is_dead = is_dead;
    q.push_back(std::move(it));
    return ok_status();
  }
  Item waiter = std::move(q.front());
  q.pop_front();
  waiter_keys_.erase(waiter.id);
  if (q.empty()) table_.erase(key.full);
  waiter.done(RecvOutcome{tensor, is_dead});
  return ok_status();
}

uint64_t LocalRendezvous::recv_async(const ParsedKey& key, RecvCallback done)
{
  if (abort_) {
    done(*abort_);
    return 0;
  }
  auto& q = table_[key.full];
  if (!q.empty() && q.front().is_send) {
    Item s = std::move(q.front());
    q.pop_front();
    if (q.empty()) table_.erase(key.full);
    done(RecvOutcome{std::move(s.tensor), s.is_dead});
    return 0;
  }
  Item w;
  w.done = std::move(done);
  w.id = next_id_++;
  const uint64_t id = w.id;
  q.push_back(std::move(w));
  waiter_keys_[id] = key.full;
  return id;
}

bool LocalRendezvous::cancel(uint64_t waiter_id)
{
  auto k = waiter_keys_.find(waiter_id);
  if (k == waiter_keys_.end()) return false;
  auto& q = table_[k->second];
  for (auto it = q.begin(); it != q.end(); ++it)
    if (!it->is_send && it->id == waiter_id) {
      RecvCallback done = std::move(it->done);
      q.erase(it);
      if (q.empty()) table_.erase(k->second);
      waiter_keys_.erase(k);
      done(Error::status("Cancelled", "RecvAsync was cancelled"));
      return true;
    }
  return false;
}

void LocalRendezvous::start_abort(const Error& status)
{
  if (abort_) return;
  abort_ = status;
  auto table = std::move(table_);
  table_.clear();
  waiter_keys_.clear();
  for (auto& [key, q] : table)
    for (auto& item : q)
      if (!item.is_send) item.done(status);
}

size_t LocalRendezvous::pending_sends() const
{
  size_t n = 0;
  for (const auto& [k, q] : table_)
    for (const auto& it : q)
      n += it.is_send ? 1 : 0;
  return n;
}

size_t LocalRendezvous::pending_receivers() const
{
  size_t n = 0;
  for (const auto& [k, q] : table_)
    for (const auto& it : q)
      n += it.is_send ? 0 : 1;
  return n;
}

} // namespace tp::rendezvous
