// Ring allreduce schedule (see ring_schedule.hpp).
#include "core/collectives/ring_schedule.hpp"

#include "core/collectives/ring.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <memory>
#include <optional>

namespace tp::collectives {

namespace {

int mod(int a, int n)
{
  return ((a % n) + n) % n;
}

/// Seconds of a step's local work on a segment (none without a cost function or for an empty segment).
double work_seconds(const std::function<double(double)>& f, double bytes)
{
  return f && bytes > 0 ? f(bytes) : 0.0;
}

struct RankState {
  int step = 0;
  /// The left's segments arrived so far: they come in step order (the left sends step s + 1 only once its step-s
  /// message has landed), so step s's has arrived when received > s (one counter per rank, not one flag per step).
  int received = 0;
  bool sent = false;        ///< own send of the current step delivered
  bool waiting = false;     ///< in the reduce
};

struct Ring {
  MessageFabric& f;
  int n; ///< the ring's ranks: its segments (and, unless shortened, its n - 1 steps of each phase)
  int k; ///< the ranks simulated: 0..k-1, rank k - 1's right is rank 0 (k = n: the whole ring)
  std::vector<int64_t> off;
  RingScheduleOptions opt;
  int reduce_steps = 0; ///< steps of the reduce-scatter (n - 1; fewer in a shortened run, one segment size only)
  int gather_steps = 0; ///< steps of the allgather (likewise)
  /// When set: rank r starts step s at (*starts)[r (reduce_steps + gather_steps + 1) + s] (s = the total: done).
  std::vector<double>* starts = nullptr;
  std::vector<RankState> st;
  int finished = 0;
  double end = 0;
  uint64_t messages = 0;

  int total_steps() const { return reduce_steps + gather_steps; }

  double seg_bytes(int idx) const { return 4.0 * double(off[size_t(idx) + 1] - off[size_t(idx)]); }

  void start_step(int r)
  {
    RankState& s = st[size_t(r)];
    const int total = total_steps();
    if (starts) (*starts)[size_t(r) * size_t(total + 1) + size_t(s.step)] = f.now();
    if (s.step == total) {
      ++finished;
      end = std::max(end, f.now());
      return;
    }
    s.sent = false;
    // reduce-scatter step i sends segment (r - i); allgather step i sends segment (r - i + 1)
    const int i = s.step < reduce_steps ? s.step : s.step - reduce_steps;
    const int idx = s.step < reduce_steps ? mod(r - i, n) : mod(r - i + 1, n);
    const int step = s.step;
    ++messages;
    const int right = r + 1 == k ? 0 : r + 1;
    // Rank and step in one word: with `this` the callback fits std::function's own storage (no allocation per message).
    const uint64_t rank_step = uint64_t(uint32_t(r)) << 32 | uint32_t(step);
    f.send(r, right, seg_bytes(idx), [this, rank_step] {
      const int r = int(rank_step >> 32), step = int(uint32_t(rank_step));
      const int right = r + 1 == k ? 0 : r + 1;
      st[size_t(r)].sent = true;
      RankState& in = st[size_t(right)];
      in.received = std::max(in.received, step + 1); // == step + 1: the left's messages land in step order
      progress(r);
      progress(right);
    });
  }

  void progress(int r)
  {
    RankState& s = st[size_t(r)];
    if (s.waiting || s.step >= total_steps() || !s.sent || s.received <= s.step) return;
    // The local work before the next step, as ring.cpp runs it (none for an empty segment).
    const bool reduce = s.step < reduce_steps;
    double t = 0;
    if (reduce) {
      const double got = seg_bytes(mod(r - s.step - 1, n));
      t += work_seconds(opt.reduce_time, got);
      if (s.step == reduce_steps - 1)
        t += work_seconds(opt.copy_time, got); // the fully reduced segment into the result
    } else {
      t += work_seconds(opt.copy_time, seg_bytes(mod(r - (s.step - reduce_steps), n)));
    }
    s.waiting = true;
    auto next = [this, r] {
      RankState& s = st[size_t(r)];
      s.waiting = false;
      ++s.step;
      start_step(r);
      progress(r);
    };
    if (t > 0)
      f.after(t, next);
    else
      next();
  }
};

} // namespace

RingScheduleResult run_ring_allreduce(MessageFabric& fabric, int ranks, double bytes,
                                      const RingScheduleOptions& options)
{
  return run_folded_ring_allreduce(fabric, ranks, ranks, bytes, options);
}

namespace {

/// The folded ring with `reduce_steps` and `gather_steps` steps (n - 1 each for the real ring), recording each
/// rank's step starts in `starts` when set.
RingScheduleResult run_ring_steps(MessageFabric& fabric, int simulated, int ranks, double bytes,
                                  const RingScheduleOptions& options, int reduce_steps, int gather_steps,
                                  std::vector<double>* starts)
{
  RingScheduleResult out;
  if (ranks <= 1 || simulated < 1 || simulated > ranks) return out;
  Ring ring{fabric,       ranks,        simulated, ring_segments(int64_t(bytes / 4), ranks), options,
            reduce_steps, gather_steps, starts,    std::vector<RankState>(size_t(simulated))};
  if (starts) starts->assign(size_t(simulated) * size_t(reduce_steps + gather_steps + 1), 0.0);
  const double t0 = fabric.now();
  for (int r = 0; r < simulated; ++r)
    ring.start_step(r);
  fabric.run();
  out.seconds = ring.end - t0;
  out.messages = ring.messages;
  return out;
}

/// A stretch of steps whose start times repeat: every `cycle` steps each rank starts `advance` seconds later.
struct SteadyStretch {
  int cycle = 0;
  double advance = 0;
  bool found() const { return cycle > 0; }
};

/// Whether two step intervals are equal up to floating-point rounding: of the times around `t` they are differences
/// of (a few ulps of t), and of the interval itself.
bool same_interval(double a, double b, double t)
{
  return std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b)) + 64 * DBL_EPSILON * std::abs(t);
}

/// The steady stretch among steps [lo, hi] of a run's step starts (`starts`, `steps` + 1 per rank): the shortest
/// cycle c, from the earliest step s0, such that every rank starts each step of [s0, s0 + window + c] exactly c steps'
/// advance after the step c before it, the window covering twice the ranks' largest spread over the cycle's steps
/// (how many steps apart two ranks are at one instant) and at least RING_STEADY_WINDOW steps.
SteadyStretch find_steady_stretch(const std::vector<double>& starts, int ranks, int steps, int lo, int hi)
{
  const size_t row = size_t(steps) + 1;
  auto at = [&](int r, int s) { return starts[size_t(r) * row + size_t(s)]; };
  // How far apart (in steps) the ranks are when rank 0 starts step s (computed once per step).
  std::vector<int> spreads(size_t(hi) + 1, -1);
  auto spread_at = [&](int s) {
    if (spreads[size_t(s)] >= 0) return spreads[size_t(s)];
    int spread = 0;
    const double t = at(0, s);
    for (int r = 1; r < ranks; ++r) {
      const double* first = &starts[size_t(r) * row];
      const int j = int(std::upper_bound(first, first + row, t) - first) - 1; // rank r's step at t
      spread = std::max(spread, std::abs(j - s));
    }
    return spreads[size_t(s)] = spread;
  };
  for (int c = 1; c <= RING_STEADY_MAX_CYCLE; ++c)
    for (int s0 = lo; s0 + c + RING_STEADY_WINDOW <= hi; ++s0) {
      const double advance = at(0, s0 + c) - at(0, s0);
      if (!(advance > 0)) continue;
      int spread = 0;
      for (int s = s0; s <= s0 + c; ++s)
        spread = std::max(spread, spread_at(s));
      const int window = std::max(RING_STEADY_WINDOW, 2 * spread + 2 * c);
      if (s0 + c + window > hi) continue;
      bool steady = true;
      for (int s = s0; s <= s0 + window && steady; ++s)
        for (int r = 0; r < ranks && steady; ++r)
          steady = same_interval(at(r, s + c) - at(r, s), advance, at(r, s + c));
      if (steady) return {c, advance};
    }
  return {};
}

/// Whether run_steady_ring_allreduce tries a cut of `cut` steps per phase on a ring of `ranks`.
bool ring_steady_cut_allowed(int cut, int ranks)
{
  const int64_t phase = ranks - 1;
  return cut == RING_STEADY_PHASE ? 2 * int64_t(cut) < phase : 4 * int64_t(cut) <= phase;
}

} // namespace

RingScheduleResult run_folded_ring_allreduce(MessageFabric& fabric, int simulated, int ranks, double bytes,
                                             const RingScheduleOptions& options)
{
  return run_ring_steps(fabric, simulated, ranks, bytes, options, ranks - 1, ranks - 1, nullptr);
}

namespace {

/// The steady-state count of a ring whose segments have one size (run_steady_ring_allreduce), or none where no try
/// finds it; `timed` adds the messages the tries timed.
std::optional<RingScheduleResult> steady_one_size(const std::function<std::unique_ptr<MessageFabric>()>& fabric,
                                                  int simulated, int ranks, double bytes,
                                                  const RingScheduleOptions& options, uint64_t& timed)
{
  const int phase = ranks - 1; // steps of each phase
  for (int cut = RING_STEADY_PHASE; ring_steady_cut_allowed(cut, ranks); cut *= 2) {
    // A shortened run: each phase's steps cut to `cut` (plus what makes the cut a whole number of cycles). A
    // drift between ranks (one a fraction of a ns faster per step until it meets a constraint) can outlast a short
    // cut, so longer ones are tried, up to a quarter of the phase: the longer tries cost at most about half the
    // whole ring's messages (ring_steady_tries_messages).
    int reduce = cut, gather = cut;
    std::vector<double> starts;
    for (int attempt = 0; attempt < 2; ++attempt) {
      const RingScheduleResult run =
          run_ring_steps(*fabric(), simulated, ranks, bytes, options, reduce, gather, &starts);
      timed += run.messages;
      const int steps = reduce + gather;
      // The reduce-scatter's start times up to its last step's start (its extra copy comes after); the allgather's
      // from its first step's start to the end.
      const SteadyStretch first = find_steady_stretch(starts, simulated, steps, 0, reduce - 1);
      const SteadyStretch second = find_steady_stretch(starts, simulated, steps, reduce, steps);
      if (!first.found() || !second.found()) break;
      const int extra_reduce = (phase - reduce) % first.cycle, extra_gather = (phase - gather) % second.cycle;
      if (extra_reduce == 0 && extra_gather == 0) {
        RingScheduleResult out;
        out.seconds = run.seconds + double((phase - reduce) / first.cycle) * first.advance +
                      double((phase - gather) / second.cycle) * second.advance;
        out.messages = 2 * uint64_t(phase) * uint64_t(simulated);
        return out;
      }
      reduce += extra_reduce; // once more, cut at a whole number of cycles
      gather += extra_gather;
    }
  }
  return std::nullopt;
}

} // namespace

RingScheduleResult run_steady_ring_allreduce(const std::function<std::unique_ptr<MessageFabric>()>& fabric,
                                             int simulated, int ranks, double bytes, const RingScheduleOptions& options)
{
  uint64_t timed = 0;
  if (ranks > 1 && simulated >= 1 && simulated <= ranks) {
    const RingSegmentSizes sizes = ring_segment_sizes(bytes, ranks);
    if (sizes.one_size()) {
      if (auto out = steady_one_size(fabric, simulated, ranks, bytes, options, timed)) {
        out->simulated_messages = timed;
        return *out;
      }
    }
  }
  auto f = fabric();
  RingScheduleResult out = run_folded_ring_allreduce(*f, simulated, ranks, bytes, options);
  out.simulated_messages = timed + out.messages;
  return out;
}

uint64_t ring_steady_tries_messages(int simulated, int ranks)
{
  uint64_t m = 0;
  for (int cut = RING_STEADY_PHASE; ring_steady_cut_allowed(cut, ranks); cut *= 2)
    m += 2 * uint64_t(cut) + 2 * uint64_t(cut + RING_STEADY_MAX_CYCLE); // a try, and its realignment
  return m * uint64_t(simulated);
}

uint64_t ring_steady_tries_messages(int simulated, int ranks, double bytes)
{
  return ring_segment_sizes(bytes, ranks).one_size() ? ring_steady_tries_messages(simulated, ranks) : 0;
}

RingSegmentSizes ring_segment_sizes(double bytes, int ranks)
{
  const int64_t count = int64_t(bytes / 4);
  RingSegmentSizes s;
  if (ranks < 1) return s;
  s.larger_count = count % ranks == 0 ? ranks : count % ranks; // ring_segments: the first count mod N one longer
  s.smaller = 4.0 * double(count / ranks);
  s.larger = count % ranks == 0 ? s.smaller : s.smaller + 4.0;
  return s;
}

RingScheduleResult ring_allreduce_uncontended(int ranks, double bytes,
                                              const std::function<RingHopTime(int rank, double bytes)>& hop,
                                              const RingScheduleOptions& options, int period)
{
  RingScheduleResult out;
  if (ranks <= 1) return out;
  const int n = ranks;
  const RingSegmentSizes sizes = ring_segment_sizes(bytes, n);
  const double size[2] = {sizes.larger, sizes.smaller};
  const int64_t larger = sizes.larger_count;
  auto size_of = [larger](int idx) { return idx < larger ? 0 : 1; };
  std::vector<RingHopTime> hops(2 * size_t(n));
  bool alike = true; // every rank's hops the same
  for (int r = 0; r < n; ++r)
    for (int k = 0; k < 2; ++k) {
      hops[2 * size_t(r) + size_t(k)] = hop(r, size[k]);
      const RingHopTime& a = hops[2 * size_t(r) + size_t(k)];
      const RingHopTime& b = hops[size_t(k)];
      alike = alike && a.busy == b.busy && a.delay == b.delay;
    }
  // The local work after a step, as Ring::progress sums it: t = 0, then += reduce (+= copy on the last reduce step),
  // or += copy in the allgather; per segment size.
  double reduce_work[2], last_reduce_work[2], copy_work[2];
  for (int k = 0; k < 2; ++k) {
    double t = 0;
    t += work_seconds(options.reduce_time, size[k]);
    reduce_work[k] = t;
    t += work_seconds(options.copy_time, size[k]);
    last_reduce_work[k] = t;
    double c = 0;
    c += work_seconds(options.copy_time, size[k]);
    copy_work[k] = c;
  }
  const int steps = 2 * (n - 1);
  auto work = [&](int step, int k) {
    return step < n - 1 ? (step == n - 2 ? last_reduce_work[k] : reduce_work[k]) : copy_work[k];
  };
  out.messages = uint64_t(steps) * uint64_t(n);
  if (alike && larger == n) { // lock step: one segment size (class 0) and every rank's hop the same
    double start = 0;
    for (int step = 0; step < steps; ++step) {
      const double landed = (start + hops[0].busy) + hops[0].delay; // own send and the left's land together
      start = landed + work(step, 0);
    }
    out.seconds = start;
    return out;
  }
  // Hops that repeat every `period` ranks with one segment size: every rank's times repeat too (rank r's depend on
  // its own hop and its left's times only), so one period's ranks are computed, rank 0's left being the period's
  // last, with the same operations as over every rank.
  int m = n;
  if (period > 0 && period < n && n % period == 0 && larger == n) {
    bool periodic = true;
    for (int r = period; r < n && periodic; ++r)
      periodic = hops[2 * size_t(r)].busy == hops[2 * size_t(r % period)].busy &&
                 hops[2 * size_t(r)].delay == hops[2 * size_t(r % period)].delay;
    if (periodic) m = period;
  }
  std::vector<double> start(size_t(m), 0.0), landed(size_t(m), 0.0);
  for (int step = 0; step < steps; ++step) {
    const bool reduce = step < n - 1;
    const int i = reduce ? step : step - (n - 1);
    // Rank r sends segment (r - sent) mod N and works on the one it received, (r - sent - 1) mod N: reduce-scatter
    // step i sends r - i, the allgather's r - i + 1 (Ring::start_step and Ring::progress).
    const int sent = reduce ? i : i - 1;
    int idx = mod(-sent, n); // rank 0's
    for (int r = 0; r < m; ++r, idx = idx + 1 == n ? 0 : idx + 1) {
      const RingHopTime& h = hops[2 * size_t(r) + size_t(size_of(idx))];
      landed[size_t(r)] = (start[size_t(r)] + h.busy) + h.delay;
    }
    const double work_of[2] = {work(step, 0), work(step, 1)};
    idx = mod(-sent - 1, n);
    double left_landed = landed[size_t(m) - 1];
    for (int r = 0; r < m; ++r, idx = idx + 1 == n ? 0 : idx + 1) {
      const double own = landed[size_t(r)];
      start[size_t(r)] = std::max(own, left_landed) + work_of[size_of(idx)];
      left_landed = own;
    }
  }
  out.seconds = *std::max_element(start.begin(), start.end());
  return out;
}

double ring_allreduce_alpha_beta(int ranks, double bytes, double alpha, double beta)
{
  if (ranks <= 1) return 0;
  return 2.0 * (ranks - 1) * (alpha + bytes / ranks / beta);
}

} // namespace tp::collectives
