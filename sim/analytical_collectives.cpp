// Analytical ring allreduces for training runs, with a congestion model's excess when set (see
// analytical_collectives.hpp).
#include "sim/analytical_collectives.hpp"

#include "core/transports/task_runtime.hpp"

namespace tp::sim {

AnalyticalCollectives::AnalyticalCollectives(RingRoutes routes, collectives::RingScheduleOptions adds, int ring_ranks)
    : routes_(std::move(routes)), adds_(adds), ring_ranks_(ring_ranks)
{
}

void AnalyticalCollectives::allreduce(collectives::Channel& ch, int64_t step, const std::string& name, Tensor t,
                                      std::function<void(Result<Tensor>)> done)
{
  auto& w = pending_[{step, name}];
  if (w.empty()) w.reserve(size_t(ch.size())); // every rank's, once: no reallocation per rank
  w.push_back({&ch, std::move(t), std::move(done)});
  if (int(w.size()) < ch.size()) return;
  std::vector<Waiting> all = std::move(w);
  pending_.erase({step, name});
  ++rings_;
  const double bytes = double(all[0].t.total_bytes());
  auto it = seconds_by_bytes_.find(bytes);
  if (it == seconds_by_bytes_.end()) {
    bool closed_form = true;
    const auto ring = analytical_ring(routes_, bytes, adds_, &closed_form, ring_ranks_, period_ ? &*period_ : nullptr);
    it = seconds_by_bytes_.emplace(bytes, ring.seconds).first;
    if (!closed_form) ++(ring.contention_bound > 0 ? bounded_sizes_ : shared_link_sizes_);
    if (ring.folded_ranks > 0) ++folded_sizes_;
  }
  double seconds = it->second;
  if (excess_) {
    auto e = excess_by_bytes_.find(bytes);
    if (e == excess_by_bytes_.end()) e = excess_by_bytes_.emplace(bytes, excess_(bytes)).first;
    if (!e->second.ok()) {
      for (auto& x : all)
        x.done(e->second.error());
      return;
    }
    // The longer transfer first, then the wait (the ring's last bytes held up): only the wait is charged as such.
    seconds += e->second->network;
    const double waited = e->second->congestion;
    if (waited > 0 && on_wait_) {
      const double now = all[0].ch->task().runtime().now();
      on_wait_(now + seconds, now + seconds + waited);
    }
    seconds += waited;
  }
  for (auto& x : all) {
    Runtime& rt = x.ch->task().runtime();
    auto out =
        x.ch->task().make_tensor(DataType::FLOAT, x.t.shape, x.t.location(), AllocatorAttributes{false, false, true});
    rt.after(seconds, [out, done = std::move(x.done)]() mutable {
      if (out.ok())
        done(out.value());
      else
        done(out.error());
    });
  }
}

} // namespace tp::sim
