// The message schedule of a ring allreduce (reduce-scatter then allgather, Baidu's segments), run on any
// MessageFabric: the SimGrid flow model (one comm per message, max-min sharing: sim/flow_fabric) or the
// analytical fabric (own event calendar, links reserved one message after the other: sim/analytical_fabric) for
// collectives too large to simulate message by message through the transports. Each rank does at step s:
// send its segment to the right, wait for the left's segment and for its own send, add (reduce-scatter only),
// go on (the adds and copies of RingScheduleOptions between steps). Tests: tests/sim/fabric_modes_test.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace tp::collectives {

class MessageFabric {
public:
  virtual ~MessageFabric() = default;
  virtual double now() const = 0;
  /// Move `bytes` from rank `src` to rank `dst`; `delivered` runs when they have landed.
  virtual void send(int src, int dst, double bytes, std::function<void()> delivered) = 0;
  /// Run `f` after `seconds`.
  virtual void after(double seconds, std::function<void()> f) = 0;
  /// Process events until none is left.
  virtual void run() = 0;
};

/// The local work of a ring step, as the protocol ring (core/collectives/ring.cpp) runs it at the rank's tensors:
/// each reduce-scatter step adds the received segment into the rank's own, the last one then copies the rank's
/// fully reduced segment into the result, and each allgather step copies the received segment into the result.
struct RingScheduleOptions {
  std::function<double(double bytes)> reduce_time; ///< seconds of dst += src over a segment (empty: free)
  std::function<double(double bytes)> copy_time;   ///< seconds of copying a segment into the result (empty: free)
};

struct RingScheduleResult {
  double seconds = 0;    ///< from the start until the last rank finished
  uint64_t messages = 0; ///< messages sent (2 (N-1) N)
  /// Messages timed one by one (run_steady_ring_allreduce: fewer than `messages` where steady steps were counted).
  uint64_t simulated_messages = 0;
  /// sim::analytical_ring of a ring timed by its recurrence though routes share links: the most the sharing could add
  /// (sim::ring_contention_bound); 0 otherwise.
  double contention_bound = 0;
  /// sim::analytical_ring of a ring folded onto one period of its ranks (their routes repeating every period): the
  /// ranks it was timed on; 0 otherwise.
  int folded_ranks = 0;
};

/// Ring allreduce of `bytes` (float32 elements) over `ranks` ranks on `fabric`, starting now.
RingScheduleResult run_ring_allreduce(MessageFabric& fabric, int ranks, double bytes,
                                      const RingScheduleOptions& options = {});

/// The same ring folded onto its first `simulated` ranks, for a ring whose ranks repeat with that period (identical
/// hosts, `simulated` ranks per period, every route alike a period later): ranks 0..simulated-1 run the whole ring's
/// schedule (its `ranks` segments, 2 (ranks - 1) steps, rank r sending segment r - step), and rank simulated - 1's
/// right is rank 0, standing for the next period's first rank, whose messages by symmetry are rank 0's own. Exact
/// when the fabric treats every period alike; the analytical fabric breaks ties between messages ready at one instant
/// in sending order, and the whole ring's last rank sends after every other while a folded one's is a period's
/// last, so the two can differ where such messages share a link (and where the segments have two sizes, by one
/// element's time): docs/model.md "Symmetric ranks" gives the measured differences. 2 (ranks - 1) simulated
/// messages per simulated rank. simulated == ranks: run_ring_allreduce.
RingScheduleResult run_folded_ring_allreduce(MessageFabric& fabric, int simulated, int ranks, double bytes,
                                             const RingScheduleOptions& options = {});

/// Steady-state steps (run_steady_ring_allreduce): each phase is cut to RING_STEADY_PHASE steps (where that is less
/// than half the phase), then to twice, four times as many, while the cut is at most a quarter of the phase; a cycle of
/// at most RING_STEADY_MAX_CYCLE steps must repeat over at least RING_STEADY_WINDOW steps.
inline constexpr int RING_STEADY_PHASE = 64;
inline constexpr int RING_STEADY_MAX_CYCLE = 32;
inline constexpr int RING_STEADY_WINDOW = 12;

/// run_folded_ring_allreduce (every `fabric()` a fresh, empty fabric of the same links), with the steps that repeat
/// counted instead of timed one by one. A ring of one segment size does the same work at every step of a phase
/// (reduce-scatter, allgather), so after a transient its ranks settle into a steady state: each rank starts every
/// c-th step the same time later. The ring is first run with each phase cut to RING_STEADY_PHASE steps; where both
/// phases of that run show such a stretch (every rank, every step of a window that covers how far apart the ranks
/// run), the steps cut out are the stretch repeated, and the ring's time is the short run's plus their advance (the
/// cut made a whole number of cycles, by a second short run if need be). Otherwise longer cuts are tried (twice as
/// long, up to a quarter of the phase); where none shows it, and for rings of two segment sizes or too short to cut,
/// the ring runs whole: at most the whole ring's messages and ring_steady_tries_messages. (Timing a ring of two sizes
/// between the rings of either size was tried and withdrawn: where messages tie on shared links one longer segment per
/// step can reorder them, and the ring left that bracket by 0.9-6.6 %; docs/model.md.) Equal to the whole run up to
/// rounding where its steady state holds (tests/sim/steady_ring_test.cpp); the analytical fabric breaks exact ties by
/// floating-point comparisons, so a whole run can itself move by some 1e-5 with its time origin where many messages
/// tie, and the two then differ by as much. `simulated_messages` says how many messages were timed.
RingScheduleResult run_steady_ring_allreduce(const std::function<std::unique_ptr<MessageFabric>()>& fabric,
                                             int simulated, int ranks, double bytes,
                                             const RingScheduleOptions& options = {});
/// The most messages run_steady_ring_allreduce's tries time for `simulated` of `ranks` ranks (before the whole ring,
/// where none finds the steady state): the first try's, under the whole ring's, and about half the whole ring's at
/// most for the longer ones.
uint64_t ring_steady_tries_messages(int simulated, int ranks);
/// The same for a ring of `bytes`: a ring of one segment size's tries, none for two sizes (it runs whole).
uint64_t ring_steady_tries_messages(int simulated, int ranks, double bytes);

/// The ring's segment sizes for `bytes` (float32 elements) over `ranks` (core/collectives/ring.cpp's ring_segments):
/// the first `larger_count` segments have `larger` bytes, the rest `smaller` (all `larger` when they divide evenly).
struct RingSegmentSizes {
  double larger = 0, smaller = 0;
  int64_t larger_count = 0;
  bool one_size() const { return larger == smaller; }
};
RingSegmentSizes ring_segment_sizes(double bytes, int ranks);

/// What a message of `bytes` costs on the route of rank r -> r + 1 when nothing else uses its links: the seconds it
/// holds them (`busy`) and the seconds after that until it has landed (`delay`).
struct RingHopTime {
  double busy = 0;
  double delay = 0;
};

/// The same ring as run_ring_allreduce, timed without events, for fabrics where no two ranks' messages share a link
/// (each rank's route to its right is its own; one rank's messages go one after the other): then a message lands at
/// (its start + busy) + delay whatever else moves, and the schedule is a recurrence over steps. Rank r starts step
/// s + 1 at max(its own send landed, its left's landed) + its local work, as run_ring_allreduce's events do, with the
/// same floating-point operations in the same order, so the result equals the event-driven run on such a fabric
/// exactly (tests/sim/fabric_modes_test.cpp). `hop` is called once per rank and segment size (at most 2N calls).
/// Cost: N (N - 1) 2 additions and maxima in O(N) memory; when every rank's hops are the same and the segments all
/// have one size, the ranks move in lock step and one rank's 2 (N - 1) steps are computed (O(N)).
/// `period` > 0 dividing `ranks`: where the hops repeat every `period` ranks and the segments have one size, one
/// period's ranks are computed (O(period N)), the same result.
RingScheduleResult ring_allreduce_uncontended(int ranks, double bytes,
                                              const std::function<RingHopTime(int rank, double bytes)>& hop,
                                              const RingScheduleOptions& options = {}, int period = 0);

/// The alpha-beta time of the same ring: 2 (N - 1) steps of (alpha + segment / beta), segment = bytes / N.
double ring_allreduce_alpha_beta(int ranks, double bytes, double alpha, double beta);

} // namespace tp::collectives
