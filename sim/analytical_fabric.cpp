// Analytical fabric (see analytical_fabric.hpp).
#include "sim/analytical_fabric.hpp"

#include <algorithm>
#include <limits>

namespace tp::sim {

AnalyticalFabric::AnalyticalFabric(std::vector<AnalyticalLink> links,
                                   std::function<const AnalyticalRoute&(int, int, double)> route)
    : links_(std::move(links)), free_at_(links_.size(), 0.0), route_(std::move(route))
{
}

void AnalyticalFabric::send(int src, int dst, double bytes, std::function<void()> delivered)
{
  const AnalyticalRoute& r = route_(src, dst, bytes);
  double start = now_, rate = std::numeric_limits<double>::infinity();
  for (int l : r.links) {
    rate = std::min(rate, links_[size_t(l)].bandwidth);
    if (links_[size_t(l)].shared) start = std::max(start, free_at_[size_t(l)]);
  }
  const double busy = bytes > 0 && rate < std::numeric_limits<double>::infinity() ? bytes / rate : 0.0;
  for (int l : r.links)
    if (links_[size_t(l)].shared) free_at_[size_t(l)] = start + busy;
  const double delay = r.latency + (r.delay ? r.delay(bytes) : 0.0);
  calendar_.push(Event{start + busy + delay, seq_++, std::move(delivered)});
}

void AnalyticalFabric::after(double seconds, std::function<void()> f)
{
  calendar_.push(Event{now_ + std::max(0.0, seconds), seq_++, std::move(f)});
}

void AnalyticalFabric::run()
{
  while (!calendar_.empty()) {
    Event e = calendar_.top();
    calendar_.pop();
    now_ = e.t;
    ++events_;
    e.f();
  }
}

} // namespace tp::sim
