// Step replay over a recorded trace (see replay.hpp).
#include "traces/replay.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace tp::traces {

namespace {

struct Event {
  double start, duration, new_duration;
  std::vector<std::string> lanes;
  bool comm;
};

struct Lane {
  double old_end = -INFINITY; ///< recorded end of the last event on the lane
  double new_end = -INFINITY; ///< replayed end
};

} // namespace

ReplayResult replay_step(const Trace& t, const std::vector<double>& transfer_seconds,
                         const std::vector<double>& collective_seconds)
{
  std::vector<Event> ev;
  std::set<std::string> devices;
  for (const auto& o : t.ops)
    devices.insert(o.device);
  for (const auto& x : t.transfers)
    devices.insert(x.src_device), devices.insert(x.dst_device);
  const std::vector<std::string> all(devices.begin(), devices.end());
  for (const auto& o : t.ops)
    ev.push_back({o.start, o.duration, o.duration, {o.device}, false});
  for (size_t i = 0; i < t.transfers.size(); ++i) {
    const auto& x = t.transfers[i];
    const double d = i < transfer_seconds.size() && transfer_seconds[i] >= 0 ? transfer_seconds[i] : x.duration;
    ev.push_back({x.start, x.duration, d, {x.src_device, x.dst_device}, true});
  }
  for (size_t i = 0; i < t.collectives.size(); ++i) {
    const auto& c = t.collectives[i];
    const double d = i < collective_seconds.size() && collective_seconds[i] >= 0 ? collective_seconds[i] : c.duration;
    ev.push_back({c.start, c.duration, d, all.empty() ? std::vector<std::string>{"all"} : all, true});
  }
  ReplayResult r;
  if (ev.empty()) return r;
  std::stable_sort(ev.begin(), ev.end(), [](const Event& a, const Event& b) { return a.start < b.start; });
  const double origin = ev.front().start;
  std::map<std::string, Lane> lanes;
  double old_last = origin, new_last = origin;
  for (const auto& e : ev) {
    double start = origin + (e.start - origin); // no lane seen yet: as recorded
    bool first = true;
    for (const auto& l : e.lanes) {
      Lane& lane = lanes[l];
      if (std::isinf(lane.old_end)) continue;
      // Keep the recorded gap after the lane's previous event (negative: the events overlapped on the lane).
      const double s = lane.new_end + (e.start - lane.old_end);
      start = first ? s : std::max(start, s);
      first = false;
    }
    const double end = start + e.new_duration;
    for (const auto& l : e.lanes) {
      Lane& lane = lanes[l];
      if (e.start + e.duration >= lane.old_end) { // the lane's latest event
        lane.old_end = e.start + e.duration;
        lane.new_end = end;
      }
    }
    old_last = std::max(old_last, e.start + e.duration);
    new_last = std::max(new_last, end);
    if (e.comm) {
      r.recorded_communication += e.duration;
      r.replayed_communication += e.new_duration;
    }
  }
  r.recorded_span = old_last - origin;
  r.replayed_span = new_last - origin;
  return r;
}

} // namespace tp::traces
