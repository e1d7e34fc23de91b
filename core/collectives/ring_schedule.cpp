// Ring allreduce schedule (see ring_schedule.hpp).
#include "core/collectives/ring_schedule.hpp"

#include "core/collectives/ring.hpp"

#include <memory>

namespace tp::collectives {

namespace {

struct RankState {
  int step = 0;
  std::vector<uint8_t> got; ///< per step: the left's segment arrived
  bool sent = false;        ///< own send of the current step delivered
  bool waiting = false;     ///< in the reduce
};

struct Ring {
  MessageFabric& f;
  int n;
  std::vector<int64_t> off;
  RingScheduleOptions opt;
  std::vector<RankState> st;
  int finished = 0;
  double end = 0;
  uint64_t messages = 0;

  double seg_bytes(int idx) const { return 4.0 * double(off[size_t(idx) + 1] - off[size_t(idx)]); }
  static int mod(int a, int n) { return ((a % n) + n) % n; }

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
    const int right = mod(r + 1, n);
    f.send(r, right, seg_bytes(idx), [this, r, right, step] {
      st[size_t(r)].sent = true;
      st[size_t(right)].got[size_t(step)] = 1;
      progress(r);
      progress(right);
    });
  }

  void progress(int r)
  {
    RankState& s = st[size_t(r)];
    if (s.waiting || s.step >= 2 * (n - 1) || !s.sent || !s.got[size_t(s.step)]) return;
    // The local work before the next step, as ring.cpp runs it (none for an empty segment).
    const bool reduce = s.step < n - 1;
    auto time_of = [](const std::function<double(double)>& f, double bytes) { return f && bytes > 0 ? f(bytes) : 0.0; };
    double t = 0;
    if (reduce) {
      const double got = seg_bytes(mod(r - s.step - 1, n));
      t += time_of(opt.reduce_time, got);
      if (s.step == n - 2) t += time_of(opt.copy_time, got); // the fully reduced segment into the result
    } else {
      t += time_of(opt.copy_time, seg_bytes(mod(r - (s.step - (n - 1)), n)));
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
  RingScheduleResult out;
  if (ranks <= 1) return out;
  Ring ring{fabric, ranks, ring_segments(int64_t(bytes / 4), ranks), options, {}, 0, 0, 0};
  ring.st.resize(size_t(ranks));
  for (auto& s : ring.st)
    s.got.assign(size_t(2 * (ranks - 1)), 0);
  const double t0 = fabric.now();
  for (int r = 0; r < ranks; ++r)
    ring.start_step(r);
  fabric.run();
  out.seconds = ring.end - t0;
  out.messages = ring.messages;
  return out;
}

double ring_allreduce_alpha_beta(int ranks, double bytes, double alpha, double beta)
{
  if (ranks <= 1) return 0;
  return 2.0 * (ranks - 1) * (alpha + bytes / ranks / beta);
}

} // namespace tp::collectives
