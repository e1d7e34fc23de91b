// Ring allreduces of a training run timed on the analytical fabric instead of moved segment by segment through
// the transport (TrainingJob::collective_mode = analytical): every rank's call for one collective is collected;
// when the last rank has called, the ring's time on the analytical fabric (the mpi transport's paths between the
// ranks, read from the platform; a fresh calendar: nothing else moving on those links) plus its local work runs from
// that moment, and every rank gets a result tensor then. The coordinator, the step graph and everything else are
// unchanged. Bytes are not summed (use the protocol mode to check data). With network model roce, each ring also waits
// what the roce model finds beyond max-min for a ring of its size on a leaf-spine RoCE fabric (PFC pauses, DCQCN's
// rate cuts), and the wait is charged to the critical path's retry. Tests: tests/sim/fabric_modes_test.cpp,
// tests/sim/training_test.cpp.
#pragma once

#include "core/collectives/engine.hpp"
#include "sim/fabric_modes.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace tp::sim {

class AnalyticalCollectives final : public collectives::RingRunner {
public:
  /// What a ring of some size takes beyond the analytical fabric's time on another fabric: `network`, a longer
  /// transfer (an oversubscribed fabric's max-min), and `congestion`, a wait (a congestion model's excess over it).
  struct Extra {
    double network = 0, congestion = 0;
  };
  using Excess = std::function<Result<Extra>(double bytes)>;
  /// Called with each ring's charged wait: from, until.
  using OnWait = std::function<void(double from, double until)>;

  /// `ring_ranks` > the routes' ranks: every ring is one of that many ranks whose routes repeat the given ones
  /// (TrainingJob::symmetric_ranks; analytical_ring's ring_ranks); 0: the routes' ranks.
  AnalyticalCollectives(RingRoutes routes, collectives::RingScheduleOptions adds, int ring_ranks = 0);
  /// The ring's first hosts' ranks (sim::ring_period): a ring of one segment size on shared links is timed folded onto
  /// them where the routes repeat them (analytical_ring's `period`).
  void set_period(RingPeriod period) { period_ = std::move(period); }
  /// Network model roce: every ring also takes `excess(bytes)` (cached per size); its congestion is reported through
  /// `on_wait`.
  void set_congestion(Excess excess, OnWait on_wait)
  {
    excess_ = std::move(excess);
    on_wait_ = std::move(on_wait);
  }
  void allreduce(collectives::Channel& ch, int64_t step, const std::string& name, Tensor t,
                 std::function<void(Result<Tensor>)> done) override;
  uint64_t rings() const { return rings_; }
  /// Tensor sizes whose ring ran on routes that share links (timed one message after the other, not by the
  /// recurrence: a bandwidth-bound one can take up to 1.8x the flow model's time, docs/model.md "Fabric modes").
  uint64_t shared_link_sizes() const { return shared_link_sizes_; }
  /// Tensor sizes whose ring shares links but is latency-bound: timed by its recurrence, sharing adding at most
  /// sim::RING_CONTENTION_TOLERANCE of it (analytical_ring).
  uint64_t bounded_sizes() const { return bounded_sizes_; }
  /// Of the shared-link sizes, those timed folded onto the ring's first hosts' ranks (set_period).
  uint64_t folded_sizes() const { return folded_sizes_; }

private:
  struct Waiting {
    collectives::Channel* ch;
    Tensor t;
    std::function<void(Result<Tensor>)> done;
  };
  RingRoutes routes_;
  std::optional<RingPeriod> period_;
  collectives::RingScheduleOptions adds_;
  int ring_ranks_ = 0;
  struct StepAndName {
    size_t operator()(const std::pair<int64_t, std::string>& k) const
    {
      return std::hash<std::string>()(k.second) ^ std::hash<int64_t>()(k.first) * 0x9e3779b97f4a7c15ULL;
    }
  };
  /// Each rank's call, until the last rank's (looked up once per rank and ring: hashed, never walked).
  std::unordered_map<std::pair<int64_t, std::string>, std::vector<Waiting>, StepAndName> pending_;
  std::map<double, double> seconds_by_bytes_; ///< the ring's time per tensor size (sizes repeat every step)
  std::map<double, Result<Extra>> excess_by_bytes_;
  Excess excess_;
  OnWait on_wait_;
  uint64_t rings_ = 0;
  uint64_t shared_link_sizes_ = 0, bounded_sizes_ = 0, folded_sizes_ = 0;
};

} // namespace tp::sim
