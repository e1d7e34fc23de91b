// Steps and ranks of a recorded trace: every event given the iteration whose window holds it, the job's rank count
// and ranks per node as the trace gives them, and one trace from the files of several ranks of one job (see
// trace.hpp). Tests: tests/traces/trace_steps_test.cpp.
#include "traces/json_events.hpp"
#include "traces/steps_internal.hpp"
#include "traces/trace.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>

namespace tp::traces {

namespace {

constexpr double SLACK = 1e-9; ///< seconds: timestamps are written in (fractions of) microseconds

} // namespace

void assign_steps(Trace& t)
{
  std::vector<double> anchors;
  std::vector<int*> slots;
  auto see = [&](double issued, double start, int& step) {
    anchors.push_back(issued >= 0 ? issued : start);
    slots.push_back(&step);
  };
  for (auto& o : t.ops)
    see(o.issued, o.start, o.step);
  for (auto& x : t.transfers)
    see(-1, x.start, x.step);
  for (auto& c : t.collectives)
    see(c.issued, c.start, c.step);
  auto& steps = t.steps;
  std::stable_sort(steps.begin(), steps.end(),
                   [](const TraceStep& a, const TraceStep& b) { return a.start < b.start; });
  if (steps.empty()) {
    // From the first issue or start to the last end (an event issued before its start, a kernel after its launch,
    // widens the window at its start, not at its end).
    auto [lo, hi] = t.extent();
    for (const double a : anchors)
      lo = std::min(lo, a);
    TraceStep s;
    s.name = "whole trace";
    s.start = std::isinf(lo) ? 0 : lo;
    s.end = std::isinf(hi) ? s.start : std::max(hi, s.start);
    steps.push_back(s);
    if (t.steps_from.empty()) t.steps_from = "no step marks in the trace: the whole trace is one step";
    for (int* slot : slots)
      *slot = 0;
    return;
  }
  constexpr int BEFORE = -1, AFTER = -2;
  double before_lo = INFINITY, after_hi = -INFINITY;
  for (size_t i = 0; i < anchors.size(); ++i) {
    const double a = anchors[i];
    auto it = std::upper_bound(steps.begin(), steps.end(), a + SLACK,
                               [](double v, const TraceStep& s) { return v < s.start; });
    int k = int(it - steps.begin()) - 1;
    if (k < 0) {
      k = BEFORE;
      before_lo = std::min(before_lo, a);
    } else if (size_t(k) + 1 == steps.size() && a > steps[k].end + SLACK) {
      k = AFTER;
      after_hi = std::max(after_hi, a);
    }
    *slots[i] = k;
  }
  const int shift = std::isinf(before_lo) ? 0 : 1;
  if (shift) {
    TraceStep s;
    s.name = "before " + steps.front().name;
    s.start = before_lo;
    s.end = steps.front().start;
    s.partial = true;
    s.why = "cut by the trace's start: what the trace holds before its first step mark";
    steps.insert(steps.begin(), s);
  }
  if (!std::isinf(after_hi)) {
    TraceStep s;
    s.name = "after " + steps.back().name;
    s.start = steps.back().end;
    s.end = after_hi;
    s.partial = true;
    s.why = "cut by the trace's end: what the trace holds after its last step mark";
    steps.push_back(s);
  }
  for (int* slot : slots)
    *slot = *slot == BEFORE ? 0 : *slot == AFTER ? int(steps.size()) - 1 : *slot + shift;
}

JobShape infer_job(const Trace& t)
{
  JobShape j;
  if (t.world_size > 0) {
    j.ranks = t.world_size;
    j.ranks_from = t.world_size_from.empty() ? "the trace's world size" : t.world_size_from;
    return j;
  }
  int group = 0;
  for (const auto& c : t.collectives) {
    group = std::max(group, c.ranks);
    for (int r : c.group_ranks)
      group = std::max(group, r + 1);
  }
  if (group > 0) {
    j.ranks = group;
    j.ranks_from = "the largest process group of its collectives";
    return j;
  }
  // The ranks its events name: Chakra's "rank N" transfer ends, TF's tasks ("/job:worker/replica:0/task:1/...").
  static const std::regex rank_name(R"(^rank (\d+)$)"), task_name(R"(^(/job:[^/]+/replica:\d+/task:\d+))");
  std::set<std::string> ranks, tasks;
  auto name = [&](const std::string& d) {
    std::smatch m;
    if (std::regex_search(d, m, rank_name)) ranks.insert(m[1].str());
    if (std::regex_search(d, m, task_name)) tasks.insert(m[1].str());
  };
  for (const auto& o : t.ops)
    name(o.device);
  for (const auto& x : t.transfers)
    name(x.src_device), name(x.dst_device);
  if (ranks.size() >= 2) {
    j.ranks = int(ranks.size());
    j.ranks_from = "the ranks its transfers name";
  } else if (tasks.size() >= 2) {
    j.ranks = int(tasks.size());
    j.ranks_from = "the TF tasks its devices name (/job:.../task:N)";
  }
  return j;
}

Result<Trace> merge_rank_traces(std::vector<Trace> ts)
{
  if (ts.empty()) return Error::at("", "traces", "at least one trace file", "none");
  if (ts.size() == 1) return std::move(ts.front());
  std::map<int, std::string> seen;
  const Trace* sized = nullptr; // the first file that gives a world size
  for (const auto& t : ts) {
    if (t.format != ts.front().format)
      return Error::at(t.file, "format",
                       "the format of the job's other files (" + ts.front().format + ", as " + ts.front().file + ")",
                       t.format);
    if (t.rank < 0)
      return Error::at(t.file, "rank",
                       "the rank that recorded it (Kineto: distributedInfo.rank), to replay it with the job's other "
                       "files",
                       "none: replay it on its own");
    if (auto it = seen.find(t.rank); it != seen.end())
      return Error::at(t.file, "rank", "a rank of its own (" + it->second + " is rank " + std::to_string(t.rank) + ")",
                       "rank " + std::to_string(t.rank) + " again");
    seen[t.rank] = t.file;
    if (t.world_size > 0) {
      if (sized && sized->world_size != t.world_size)
        return Error::at(t.file, t.world_size_from.empty() ? "world size" : t.world_size_from,
                         "the world size of the job's other files (" + std::to_string(sized->world_size) + ", in " +
                             sized->file + ")",
                         std::to_string(t.world_size));
      if (!sized) sized = &t;
    }
  }
  if (sized)
    for (const auto& t : ts)
      if (t.rank >= sized->world_size)
        return Error::at(t.file, "rank", "a rank below the job's world size " + std::to_string(sized->world_size),
                         std::to_string(t.rank));
  Trace m;
  m.format = ts.front().format;
  m.file = ts.front().file + " and " + std::to_string(ts.size() - 1) + " more rank file(s)";
  m.world_size = sized ? sized->world_size : 0;
  m.world_size_from =
      sized ? "the files' " + (sized->world_size_from.empty() ? std::string("world size") : sized->world_size_from)
            : "";
  m.steps_from = ts.front().steps_from;
  std::map<std::string, size_t> by_name; // step name -> index in m.steps
  for (auto& t : ts) {
    const std::string prefix = "rank " + std::to_string(t.rank) + ": ";
    std::vector<int> to(t.steps.size());
    for (size_t k = 0; k < t.steps.size(); ++k) {
      const TraceStep& s = t.steps[k];
      auto [it, fresh] = by_name.emplace(s.name, m.steps.size());
      if (fresh) {
        m.steps.push_back(s);
      } else {
        TraceStep& into = m.steps[it->second];
        into.start = std::min(into.start, s.start);
        into.end = std::max(into.end, s.end);
        if (s.partial && !into.partial) into.partial = true, into.why = s.why;
      }
      to[k] = int(it->second);
    }
    for (auto& o : t.ops) {
      o.device = prefix + o.device;
      o.rank = t.rank;
      o.step = o.step >= 0 ? to[o.step] : -1;
      m.ops.push_back(std::move(o));
    }
    for (auto& x : t.transfers) {
      x.src_device = prefix + x.src_device;
      x.dst_device = prefix + x.dst_device;
      x.rank = t.rank;
      x.step = x.step >= 0 ? to[x.step] : -1;
      m.transfers.push_back(std::move(x));
    }
    for (auto& c : t.collectives) {
      c.rank = t.rank;
      c.step = c.step >= 0 ? to[c.step] : -1;
      m.collectives.push_back(std::move(c));
    }
    for (const auto& w : t.warnings)
      m.warnings.push_back(t.file + ": " + w);
  }
  // Steps in time order (each file's clock: the order of the first file's marks where they differ little).
  std::vector<size_t> order(m.steps.size());
  for (size_t k = 0; k < order.size(); ++k)
    order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return m.steps[a].start < m.steps[b].start; });
  std::vector<int> rank_of(order.size());
  std::vector<TraceStep> sorted;
  for (size_t k = 0; k < order.size(); ++k) {
    rank_of[order[k]] = int(k);
    sorted.push_back(m.steps[order[k]]);
  }
  m.steps = std::move(sorted);
  auto remap = [&](int& s) {
    if (s >= 0) s = rank_of[s];
  };
  for (auto& o : m.ops)
    remap(o.step);
  for (auto& x : m.transfers)
    remap(x.step);
  for (auto& c : m.collectives)
    remap(c.step);
  return m;
}

namespace detail {

Status mark_tf_steps(const std::string& input, Trace& t)
{
  // A second parse only when a step id may be there (timeline.Timeline writes none).
  if (input.find("\"step_id\"") == std::string::npos && input.find("\"step_num\"") == std::string::npos &&
      input.find("\"group_id\"") == std::string::npos)
    return ok_status();
  std::map<std::string, std::pair<double, double>> window; // step id -> (first start, last end), microseconds
  std::string key_seen;
  auto j = parse_json_events(input, t.file, [&](size_t, json&& e) { // one event at a time, as parse_tf_timeline
    if (!e.is_object() || text(e, "ph") != "X" || !e.contains("args") || !e["args"].is_object()) return;
    const json& args = e["args"];
    std::string id;
    for (const char* key : {"step_id", "step_num", "group_id"})
      if (id.empty() && args.contains(key) && (args[key].is_number_integer() || args[key].is_string())) {
        id = args[key].is_string() ? args[key].get<std::string>() : std::to_string(args[key].get<int64_t>());
        if (key_seen.empty()) key_seen = key;
      }
    double ts = 0, dur = 0;
    if (id.empty() || !number(e, "ts", ts) || !std::isfinite(ts)) return;
    if (!number(e, "dur", dur) || !std::isfinite(dur) || dur < 0) dur = 0;
    auto [it, fresh] = window.emplace(id, std::make_pair(ts, ts + dur));
    if (!fresh) it->second = {std::min(it->second.first, ts), std::max(it->second.second, ts + dur)};
  });
  if (!j.ok()) return j.error();
  for (const auto& [id, w] : window) {
    TraceStep s;
    s.name = "step " + id;
    s.start = w.first * 1e-6;
    s.end = w.second * 1e-6;
    t.steps.push_back(s);
  }
  if (!window.empty()) t.steps_from = "TF step ids (args." + key_seen + ")";
  return ok_status();
}

} // namespace detail

} // namespace tp::traces
