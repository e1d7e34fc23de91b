// The analytical fabric: messages over directional links, timed on its own event calendar without SimGrid's
// max-min solver. A message holds every shared link of its route, moving at the slowest link's rate, from the
// earliest moment all of them are free for its whole time until its last byte (in the order messages are sent, each
// taking the first such gap: a link is not reserved before its message can start, and a later message that fits in
// the time a link waits for one still held up by its other links uses it), and lands after the route's delay for its
// size (fixed costs, copies outside the links, a staging pipeline's fill: sim/fabric_modes.cpp). Where no link is
// shared this is exactly what the flow model computes; where links are shared the same bytes are served one message
// after the other instead of side by side, so the first finishes earlier than under max-min (docs/model.md, "Fabric
// modes"). Built from the same SimGrid platform as the flow model (routes and link rates are read from it). Tests:
// tests/sim/fabric_modes_test.cpp. Bench: bench/allreduce_scale_bench.
#pragma once

#include "core/collectives/ring_schedule.hpp"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace tp::sim {

struct AnalyticalLink {
  std::string name;
  double bandwidth = 0; ///< bytes/s
  bool shared = true;   ///< false: a fat pipe (every flow gets the full rate)
};

struct AnalyticalRoute {
  std::vector<int> links; ///< indices into the fabric's links
  double latency = 0;     ///< seconds added to every message
  /// Seconds added to a message of that many bytes on top of `latency` (empty: none).
  std::function<double(double bytes)> delay;
};

class AnalyticalFabric final : public collectives::MessageFabric {
public:
  AnalyticalFabric(std::vector<AnalyticalLink> links,
                   std::function<const AnalyticalRoute&(int src, int dst, double bytes)> route);
  double now() const override { return now_; }
  void send(int src, int dst, double bytes, std::function<void()> delivered) override;
  void after(double seconds, std::function<void()> f) override;
  void run() override;
  uint64_t events() const { return events_; }

private:
  /// A calendar entry: small, so that the heap moves little; its callback waits in `callbacks_[slot]`.
  struct Event {
    /// The time's bits: non-negative doubles order as their bits do, and integers compare without a floating-point
    /// compare's unordered check (a 4,096-rank ring 9 % faster; a branch-free compare measured slower). Times are never
    /// negative: now, plus message and delay times, none negative.
    uint64_t t;
    uint64_t seq;
    uint32_t slot;
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  /// Each link's rate and whether it is shared, side by side (every message reads them: the links' names would spread
  /// them over many cache lines).
  std::vector<double> bandwidth_;
  std::vector<char> shared_;
  /// Per link, the intervals messages hold it (start, end), by start, those not yet over (a few at a time).
  std::vector<std::vector<std::pair<double, double>>> busy_;
  std::function<const AnalyticalRoute&(int, int, double)> route_;
  void schedule(double t, std::function<void()> f);
  std::vector<Event> calendar_; ///< a heap by (time, seq), earliest on top
  std::vector<std::function<void()>> callbacks_;
  std::vector<uint32_t> free_slots_;
  double now_ = 0;
  uint64_t seq_ = 0, events_ = 0;
};

} // namespace tp::sim
