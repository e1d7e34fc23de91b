// Step replay over a recorded trace (see replay.hpp).
#include "traces/replay.hpp"
#include "core/common/median.hpp"

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
  int list; ///< 0 ops, 1 transfers, 2 collectives
  size_t index;
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
  std::map<int, std::set<std::string>> devices; // per rank (-1: a trace of one file)
  for (const auto& o : t.ops)
    devices[o.rank].insert(o.device);
  for (const auto& x : t.transfers)
    devices[x.rank].insert(x.src_device), devices[x.rank].insert(x.dst_device);
  auto lanes_of = [&](int rank) {
    const auto& d = devices[rank];
    return d.empty() ? std::vector<std::string>{"all of rank " + std::to_string(rank)}
                     : std::vector<std::string>(d.begin(), d.end());
  };
  ReplayResult r;
  for (size_t i = 0; i < t.ops.size(); ++i)
    ev.push_back({t.ops[i].start, t.ops[i].duration, t.ops[i].duration, {t.ops[i].device}, false, 0, i});
  for (size_t i = 0; i < t.transfers.size(); ++i) {
    const auto& x = t.transfers[i];
    const double d = i < transfer_seconds.size() && transfer_seconds[i] >= 0 ? transfer_seconds[i] : x.duration;
    ev.push_back({x.start, x.duration, d, {x.src_device, x.dst_device}, true, 1, i});
    r.transfer_duration.push_back(d);
  }
  for (size_t i = 0; i < t.collectives.size(); ++i) {
    const auto& c = t.collectives[i];
    const double d = i < collective_seconds.size() && collective_seconds[i] >= 0 ? collective_seconds[i] : c.duration;
    ev.push_back({c.start, c.duration, d, lanes_of(c.rank), true, 2, i});
    r.collective_duration.push_back(d);
  }
  r.op_start.assign(t.ops.size(), 0);
  r.transfer_start.assign(t.transfers.size(), 0);
  r.collective_start.assign(t.collectives.size(), 0);
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
    (e.list == 0 ? r.op_start : e.list == 1 ? r.transfer_start : r.collective_start)[e.index] = start;
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

namespace {

using Intervals = std::vector<std::pair<double, double>>;

/// The intervals merged where they overlap, in order.
Intervals merged(Intervals v)
{
  std::sort(v.begin(), v.end());
  Intervals out;
  for (const auto& [a, b] : v)
    if (!out.empty() && a <= out.back().second)
      out.back().second = std::max(out.back().second, b);
    else
      out.push_back({a, b});
  return out;
}

double length(const Intervals& v)
{
  double s = 0;
  for (const auto& [a, b] : v)
    s += b - a;
  return s;
}

/// Length of the intersection of two merged lists.
double common(const Intervals& x, const Intervals& y)
{
  double s = 0;
  for (size_t i = 0, j = 0; i < x.size() && j < y.size();) {
    s += std::max(0.0, std::min(x[i].second, y[j].second) - std::max(x[i].first, y[j].first));
    (x[i].second < y[j].second ? i : j)++;
  }
  return s;
}

struct Side { ///< one rank's events in one step, recorded or replayed
  Intervals compute, comm;
  StepTimes times() const
  {
    StepTimes s;
    const Intervals c = merged(compute), m = merged(comm);
    double lo = INFINITY, hi = -INFINITY;
    for (const auto* v : {&c, &m})
      if (!v->empty()) lo = std::min(lo, v->front().first), hi = std::max(hi, v->back().second);
    s.time = hi > lo ? hi - lo : 0;
    s.compute = length(c);
    s.communication = length(m);
    s.overlap = common(c, m);
    return s;
  }
};

} // namespace

std::vector<StepReport> step_reports(const Trace& t, const ReplayResult& r)
{
  // per step, per rank: (recorded, replayed)
  std::vector<std::map<int, std::pair<Side, Side>>> sides(t.steps.size());
  std::vector<size_t> events(t.steps.size(), 0);
  auto add = [&](int step, int rank, bool comm, double start, double dur, double new_start, double new_dur) {
    if (step < 0 || size_t(step) >= t.steps.size()) return;
    auto& [rec, rep] = sides[step][rank];
    (comm ? rec.comm : rec.compute).push_back({start, start + dur});
    (comm ? rep.comm : rep.compute).push_back({new_start, new_start + new_dur});
    ++events[step];
  };
  const bool replayed = r.op_start.size() == t.ops.size() && r.transfer_start.size() == t.transfers.size() &&
                        r.collective_start.size() == t.collectives.size();
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const auto& o = t.ops[i];
    add(o.step, o.rank, false, o.start, o.duration, replayed ? r.op_start[i] : o.start, o.duration);
  }
  for (size_t i = 0; i < t.transfers.size(); ++i) {
    const auto& x = t.transfers[i];
    add(x.step, x.rank, true, x.start, x.duration, replayed ? r.transfer_start[i] : x.start,
        replayed ? r.transfer_duration[i] : x.duration);
  }
  for (size_t i = 0; i < t.collectives.size(); ++i) {
    const auto& c = t.collectives[i];
    add(c.step, c.rank, true, c.start, c.duration, replayed ? r.collective_start[i] : c.start,
        replayed ? r.collective_duration[i] : c.duration);
  }
  std::vector<StepReport> out;
  for (size_t k = 0; k < t.steps.size(); ++k) {
    if (events[k] == 0) continue;
    StepReport s;
    s.name = t.steps[k].name;
    s.partial = t.steps[k].partial;
    s.why = t.steps[k].why;
    s.marked = t.steps[k].end - t.steps[k].start;
    s.events = events[k];
    for (const auto& [rank, pair] : sides[k]) { // the longest rank's
      const StepTimes rec = pair.first.times(), rep = pair.second.times();
      if (rec.time >= s.recorded.time) s.recorded = rec;
      if (rep.time >= s.replayed.time) s.replayed = rep;
    }
    out.push_back(s);
  }
  return out;
}

StepSummary summarize_steps(const std::vector<StepReport>& reports)
{
  std::vector<double> rec, rep;
  for (const auto& s : reports)
    if (!s.partial) rec.push_back(s.recorded.time), rep.push_back(s.replayed.time);
  StepSummary m;
  m.steps = rec.size();
  if (rec.empty()) return m;
  m.recorded_median = median(rec);
  m.replayed_median = median(rep);
  for (size_t i = 0; i < rec.size(); ++i)
    m.recorded_mean += rec[i] / double(rec.size()), m.replayed_mean += rep[i] / double(rec.size());
  return m;
}

} // namespace tp::traces
