// The message schedule of a ring allreduce (reduce-scatter then allgather, Baidu's segments), run on any
// MessageFabric: the SimGrid flow model (one comm per message, max-min sharing: sim/flow_fabric) or the
// analytical fabric (own event calendar, links reserved first come first served: sim/analytical_fabric) for
// collectives too large to simulate message by message through the transports. Each rank does at step s:
// send its segment to the right, wait for the left's segment and for its own send, add (reduce-scatter only),
// go on. Tests: tests/sim/fabric_modes_test.cpp.
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

struct RingScheduleOptions {
  double reduce_bandwidth = 0; ///< bytes/s of the element-wise add of a received segment (0: free)
  double reduce_overhead = 0;  ///< fixed cost per add (a kernel launch), seconds
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
