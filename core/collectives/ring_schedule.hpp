// The message schedule of a ring allreduce (reduce-scatter then allgather, Baidu's segments), run on any
// MessageFabric: the SimGrid flow model (one comm per message, max-min sharing: sim/flow_fabric) or the
// analytical fabric (own event calendar, links reserved first come first served: sim/analytical_fabric) for
// collectives too large to simulate message by message through the transports. Each rank does at step s:
// send its segment to the right, wait for the left's segment and for its own send, add (reduce-scatter only),
// go on (the adds and copies of RingScheduleOptions between steps). Tests: tests/sim/fabric_modes_test.cpp.
#pragma once

#include <cstdint>
#include <functional>
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
};

/// Ring allreduce of `bytes` (float32 elements) over `ranks` ranks on `fabric`, starting now.
RingScheduleResult run_ring_allreduce(MessageFabric& fabric, int ranks, double bytes,
                                      const RingScheduleOptions& options = {});

/// The alpha-beta time of the same ring: 2 (N - 1) steps of (alpha + segment / beta), segment = bytes / N.
double ring_allreduce_alpha_beta(int ranks, double bytes, double alpha, double beta);

} // namespace tp::collectives
