// TCP incast at the receivers' switch ports, inside the simulated gRPC path (issue 19; network model `tcp-incast` on
// a parameter-server training job). SimGrid shares each link max-min: a port never overflows, so the N workers
// that push gradients to one PS at once lose nothing. This charges each TCP burst what the tcp-incast model
// (models/congestion/tcp_incast.hpp: one drop-tail port, TCP NewReno + SACK, the retransmission time-out) says N
// senders lose through a port of `buffer` bytes, beyond max-min's time:
// - a burst is a connection's messages from when it leaves idle to when it goes idle again. After an idle time of
//   at least the minimum RTO, Linux restarts slow start (net.ipv4.tcp_slow_start_after_idle = 1, its default;
//   RFC 2861, RFC 7661), so every step's push starts from the initial window, as the tcp-incast model's senders do;
// - N is the number of machines whose bursts into the same receiver are running (a message on the wire, or traffic
//   within the last minimum RTO) while the burst's first message is on the wire;
// - a burst's size is its connection's previous burst's first train (the messages that followed one another with
//   the connection never idle: what TCP had to send at once; training steps repeat), or its first message's in the
//   first step; the model runs on that size rounded up to a power of two (runs are cached by N, size, rate, delay);
// - the charge is one model sender's mean excess over max-min's completion (never negative) over five runs with
//   1 us of start jitter; which of the N model senders a burst gets rotates with the receiver's bursts, so no
//   machine is always the unlucky one. It is added to the burst's first message after it left the wire: the
//   connection's later messages wait behind it, as a byte stream waits for a retransmission. The interval is a
//   retransmission window, so the step's critical path charges it to `retry`.
// - the port holds a fixed `buffer`, or, from the switch profile, its dynamic-threshold share of the switch's shared
//   memory: alpha B / (1 + n alpha) with n the receivers whose ports are congested (two or more machines' bursts
//   running into each) while the burst's first message is on the wire (models/switch_model.hpp). The receivers are
//   counted over the whole cluster, as if they shared one switch: on a fabric of several leaves, ports on other
//   leaves shrink the share too (a smaller port than the leaf would give).
// What it misses: the other traffic at the port (the model sees N equal bursts), a shared buffer's share changing
// during a burst (the model's port keeps the share of the burst's start), and losses after the first message of a
// burst beyond what the model's run of the whole burst contains. Include only from sim/*.cpp.
// Docs: docs/network-models.md.
#pragma once

#include "models/switch_model.hpp"
#include "sim/fault_plan.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace tp::sim {

class IncastPorts {
public:
  /// `buffer`: bytes the switch port toward each receiver holds (drop-tail); 0: the dynamic-threshold share of
  /// `shared` (the switch's memory and lossy alpha). `min_rto`: TCP's minimum RTO (s), the idle time after which a
  /// connection restarts slow start.
  IncastPorts(uint64_t buffer, std::optional<models::SwitchBuffer> shared, double min_rto)
      : buffer_(buffer), shared_(std::move(shared)), min_rto_(min_rto)
  {
  }

  double idle_restart() const { return min_rto_; }

  /// A burst from machine `src` into machine `dst` starts at `now`; returns its handle (never 0).
  uint64_t begin_burst(size_t src, size_t dst, double now);
  /// The burst carried traffic until `now` (each message handed to the wire).
  void touch(uint64_t burst, double now);
  /// A message of the burst went on the wire (+1) or left it (-1): a burst with a message on the wire is running.
  void on_wire(uint64_t burst, int delta);

  /// The charge (s) of the burst's first message, which started on the wire at `started` and left it at `now`:
  /// `bytes` the burst's size, `rate` the receiver's port (bytes/s), `link_delay` one link's propagation (s). Records
  /// the retransmission window [now, now + charge] between `process` and `peer`.
  double charge(uint64_t burst, double bytes, double rate, double link_delay, double started, double now,
                const std::string& process, const std::string& peer);

  const std::vector<RetryInterval>& windows() const { return windows_; }
  /// The first configuration the tcp-incast model refused (its charges would be missing): "" when none.
  const std::string& error() const { return error_; }
  uint64_t bursts_charged() const { return charged_; }
  /// The smallest and largest port buffer the model ran with, over the bursts it ran for (two or more senders into
  /// a receiver, charged or not; bytes; 0 before any).
  uint64_t port_buffer_min() const { return buffer_min_; }
  uint64_t port_buffer_max() const { return buffer_max_; }

private:
  struct Burst {
    size_t src = 0, dst = 0;
    double start = 0, last = 0;
    int on_wire = 0; ///< its messages on the wire now
  };
  /// The receivers whose ports are congested at `now`: two or more machines' bursts running into each (`self`
  /// counts as running).
  int congested_ports(uint64_t self, double started, double now) const;
  /// A running burst: a message on the wire, or traffic within the last minimum RTO before `started`.
  bool running(uint64_t id, const Burst& b, uint64_t self, double started, double now) const;

  uint64_t buffer_;
  std::optional<models::SwitchBuffer> shared_;
  double min_rto_;
  uint64_t buffer_min_ = 0, buffer_max_ = 0;
  uint64_t next_ = 1;
  std::map<uint64_t, Burst> bursts_;
  /// (senders, bytes, rate, link delay, port buffer) -> each sender's excess over max-min (s)
  std::map<std::tuple<int, uint64_t, double, double, uint64_t>, std::vector<double>> cache_;
  std::vector<RetryInterval> windows_;
  uint64_t charged_ = 0;
  std::map<size_t, uint64_t> charges_into_; ///< bursts charged per receiver: rotates which model sender a burst is
  std::string error_;
};

} // namespace tp::sim
