// Ring allreduce schedule (see ring_schedule.hpp).
#include "core/collectives/ring_schedule.hpp"

#include "core/collectives/ring.hpp"

#include <algorithm>
#include <memory>

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
  int n; ///< the ring's ranks: its segments and 2 (n - 1) steps
  int k; ///< the ranks simulated: 0..k-1, rank k - 1's right is rank 0 (k = n: the whole ring)
  std::vector<int64_t> off;
  RingScheduleOptions opt;
  std::vector<RankState> st;
  int finished = 0;
  double end = 0;
  uint64_t messages = 0;

  double seg_bytes(int idx) const { return 4.0 * double(off[size_t(idx) + 1] - off[size_t(idx)]); }

  void start_step(int r)
  {
    RankState& s = st[size_t(r)];
    const int total = 2 * (n - 1);
    if (s.step == total) {
      ++finished;
      end = std::max(end, f.now());
      return;
    }
    s.sent = false;
    // reduce-scatter step i sends segment (r - i); allgather step i sends segment (r - i + 1)
    const int i = s.step < n - 1 ? s.step : s.step - (n - 1);
    const int idx = s.step < n - 1 ? mod(r - i, n) : mod(r - i + 1, n);
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
    if (s.waiting || s.step >= 2 * (n - 1) || !s.sent || s.received <= s.step) return;
    // The local work before the next step, as ring.cpp runs it (none for an empty segment).
    const bool reduce = s.step < n - 1;
    double t = 0;
    if (reduce) {
      const double got = seg_bytes(mod(r - s.step - 1, n));
      t += work_seconds(opt.reduce_time, got);
      if (s.step == n - 2) t += work_seconds(opt.copy_time, got); // the fully reduced segment into the result
    } else {
      t += work_seconds(opt.copy_time, seg_bytes(mod(r - (s.step - (n - 1)), n)));
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

RingScheduleResult run_folded_ring_allreduce(MessageFabric& fabric, int simulated, int ranks, double bytes,
                                             const RingScheduleOptions& options)
{
  RingScheduleResult out;
  if (ranks <= 1 || simulated < 1 || simulated > ranks) return out;
  Ring ring{fabric, ranks, simulated, ring_segments(int64_t(bytes / 4), ranks), options, {}, 0, 0, 0};
  ring.st.resize(size_t(simulated));
  const double t0 = fabric.now();
  for (int r = 0; r < simulated; ++r)
    ring.start_step(r);
  fabric.run();
  out.seconds = ring.end - t0;
  out.messages = ring.messages;
  return out;
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
