// Analytical fabric (see analytical_fabric.hpp).
#include "sim/analytical_fabric.hpp"

#include <algorithm>
#include <bit>
#include <limits>

namespace tp::sim {

AnalyticalFabric::AnalyticalFabric(std::vector<AnalyticalLink> links,
                                   std::function<const AnalyticalRoute&(int, int, double)> route)
    : busy_(links.size()), route_(std::move(route))
{
  bandwidth_.reserve(links.size());
  shared_.reserve(links.size());
  for (const auto& l : links) {
    bandwidth_.push_back(l.bandwidth);
    shared_.push_back(l.shared);
  }
}

void AnalyticalFabric::send(int src, int dst, double bytes, std::function<void()> delivered)
{
  const AnalyticalRoute& r = route_(src, dst, bytes);
  double rate = std::numeric_limits<double>::infinity();
  for (int l : r.links)
    rate = std::min(rate, bandwidth_[size_t(l)]);
  const double busy = bytes > 0 && rate < std::numeric_limits<double>::infinity() ? bytes / rate : 0.0;
  // The earliest start from now at which every shared link of the route is free for `busy`: a gap that an earlier
  // message left on a link while it waited for its other links is used (a link is not reserved before its message
  // can start).
  double start = now_;
  if (busy > 0) {
    for (bool moved = true; moved;) {
      moved = false;
      for (int l : r.links) {
        if (!shared_[size_t(l)]) continue;
        auto& held = busy_[size_t(l)]; // by start, not overlapping
        size_t ended = 0;              // those over by now are forgotten
        while (ended < held.size() && held[ended].second <= now_)
          ++ended;
        if (ended > 0) held.erase(held.begin(), held.begin() + std::ptrdiff_t(ended));
        for (const auto& [from, to] : held) {
          if (from >= start + busy) break; // by start: none after it overlaps
          if (to > start) {                // overlaps [start, start + busy): after it
            start = to;
            moved = true;
          }
        }
      }
    }
    for (int l : r.links)
      if (shared_[size_t(l)]) {
        auto& held = busy_[size_t(l)];
        held.insert(std::lower_bound(held.begin(), held.end(), std::make_pair(start, start + busy)),
                    {start, start + busy});
      }
  }
  const double delay = r.latency + (r.delay ? r.delay(bytes) : 0.0);
  schedule(start + busy + delay, std::move(delivered));
}

void AnalyticalFabric::after(double seconds, std::function<void()> f)
{
  schedule(now_ + std::max(0.0, seconds), std::move(f));
}

void AnalyticalFabric::schedule(double t, std::function<void()> f)
{
  uint32_t slot;
  if (free_slots_.empty()) {
    slot = uint32_t(callbacks_.size());
    callbacks_.push_back(std::move(f));
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    callbacks_[slot] = std::move(f);
  }
  t += 0.0; // -0.0 to +0.0: its bits would order it after every positive time
  calendar_.push_back(Event{std::bit_cast<uint64_t>(t), seq_++, slot});
  std::push_heap(calendar_.begin(), calendar_.end(), std::greater<Event>());
}

void AnalyticalFabric::run()
{
  while (!calendar_.empty()) {
    std::pop_heap(calendar_.begin(), calendar_.end(), std::greater<Event>());
    const Event e = calendar_.back();
    calendar_.pop_back();
    std::function<void()> f = std::move(callbacks_[e.slot]);
    free_slots_.push_back(e.slot);
    now_ = std::bit_cast<double>(e.t);
    ++events_;
    f();
  }
}

} // namespace tp::sim
