// TCP incast through one drop-tail port: segment events at the port, TCP NewReno + SACK at each sender
// (see tcp_incast.hpp).
#include "models/congestion/tcp_incast.hpp"

#include "core/common/median.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <limits>
#include <random>
#include <set>

namespace tp::models {

namespace {

// A sent segment's scoreboard flags, as ns-3's TcpTxItem (tcp-tx-buffer.cc) keeps them: SACKed, marked lost, sent
// again. A retransmission keeps its lost mark, and its "sent again" mark stays when it is SACKed: both count in the
// bytes in flight (TcpTxBuffer::BytesInFlight: sent - SACKed - lost + retransmitted).
enum SegFlag : uint8_t { SACKED = 1, LOST = 2, RETRANS = 4 };

/// The congestion states of ns-3's TcpSocketState (Linux's tcp_ca_state): OPEN; DISORDER after an ACK with new SACK
/// information; RECOVERY (fast recovery); LOSS (after a time-out).
enum class CongState : uint8_t { OPEN, DISORDER, RECOVERY, LOSS };

/// Counts of SACKed segments by index (Fenwick tree): "how many above this hole" in O(log n).
class SackCounter {
public:
  explicit SackCounter(size_t n) : tree_(n + 1, 0), total_(0) {}
  void add(size_t i)
  {
    ++total_;
    for (size_t k = i + 1; k < tree_.size(); k += k & (~k + 1))
      ++tree_[k];
  }
  /// SACKed segments with index > i.
  uint64_t above(size_t i) const
  {
    uint64_t upto = 0; // indices 0..i
    for (size_t k = i + 1; k > 0; k -= k & (~k + 1))
      upto += tree_[k];
    return total_ - upto;
  }

private:
  std::vector<uint32_t> tree_;
  uint64_t total_;
};

struct Sender {
  size_t segments = 0;
  std::vector<uint8_t> flags; ///< SegFlag bits of segments in [snd_una, snd_nxt)
  SackCounter sacked;
  std::set<size_t> to_resend; ///< RFC 6675 NextSeg rule 1: marked lost, not SACKed, not sent again

  size_t snd_una = 0, snd_nxt = 0;
  // Counts over [snd_una, snd_nxt) of the flags, for the bytes in flight.
  uint64_t sacked_out = 0, lost_out = 0, retrans_out = 0;
  size_t highest_sack = 0; ///< one past the highest SACKed segment (0: none)
  size_t loss_scan = 0;    ///< segments below it have been checked for DupThresh SACKed segments above them
  size_t rule3_scan = 0;   ///< NextSeg rule 3's search starts here (reset when a recovery starts)
  CongState state = CongState::OPEN;
  int dupacks = 0;
  size_t recover = 0; ///< RFC 6675's RecoveryPoint: one past the highest segment sent when recovery/loss began
  bool recover_active = false;
  bool first_partial_ack = true;
  bool fin_sent = false; ///< the last segment has been sent (it carries the FIN: the socket is in FIN_WAIT_1)
  double cwnd = 0, ssthresh = std::numeric_limits<double>::infinity();
  // Proportional rate reduction (RFC 6937, ns-3's TcpPrrRecovery): segments delivered and sent since recovery began,
  // what was outstanding when it began, and whether this ACK covers a retransmission that was not SACKed.
  double prr_delivered = 0, prr_out = 0, recover_fs = 0;
  bool retrans_data_acked = false;

  double srtt = 0, rttvar = 0, rto = 0;
  bool have_rtt = false;
  int backoff_shift = 0;
  double timer_deadline = -1;   ///< < 0: not armed
  double timer_event_time = -1; ///< the one timer event that counts (earlier ones are stale); < 0: none

  // Its own link: the end of the packet on it, and the place in the order of events that ns-3 gives the end of
  // transmission (scheduled when the packet started). The LINK_FREE event itself is only made when a packet waits.
  double link_end = -1;
  uint64_t link_end_order = 0;
  bool link_event_made = false;
  std::deque<std::pair<uint32_t, double>> link_queue; ///< packets waiting for the link: segment, when sent
  double syn_sent = 0;                                ///< when its SYN left (its start offset)
  double data_start = 0; ///< when the SYN-ACK came back and its first data segment may leave

  size_t rcv_nxt = 0;   ///< the receiver's side: next in-order segment
  int sack_islands = 0; ///< runs of segments received above rcv_nxt (the SACK blocks the receiver could report)
  std::vector<uint8_t> received;

  IncastSender out;

  explicit Sender(size_t n) : segments(n), flags(n, 0), sacked(n), received(n, 0) {}
  bool has(size_t k, uint8_t f) const { return (flags[k] & f) != 0; }
  /// Segments in flight, as ns-3 counts them (TcpTxBuffer::BytesInFlight).
  double in_flight() const
  {
    return double(snd_nxt - snd_una) - double(sacked_out) - double(lost_out) + double(retrans_out);
  }
};

// A packet's path is events as ns-3 makes them (a sender's link: end of transmission; arrival at the port; at the
// receiver; its ACK at the switch; at the sender), so that events at the same instant are handled in the order ns-3
// handles them: by when each was scheduled.
enum class EventKind : uint8_t {
  SYN_ACK,          ///< the handshake completes at a sender
  FIRST_DATA,       ///< ns3_quirks: the first data written one clock tick later
  LINK_FREE,        ///< a sender's link has serialized its packet
  PORT_ARRIVAL,     ///< a packet reaches the switch's port toward the receiver
  RECEIVER_ARRIVAL, ///< a data segment reaches the receiver
  ACK_AT_SWITCH,    ///< its ACK reaches the switch
  ACK_ARRIVAL,      ///< ... and the sender
  TIMER,
};

struct Event {
  double time;
  uint64_t order; ///< ties broken by scheduling order: deterministic
  EventKind kind;
  uint32_t sender;
  uint32_t segment;
  uint32_t cumulative; ///< ACK_ARRIVAL: the receiver's next expected segment when it sent the ACK
  double sent;         ///< when this copy of the segment left its sender: the timestamp the ACK echoes
  uint8_t sack_blocks; ///< ACK_AT_SWITCH: the SACK blocks the ACK carries (its size)
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : order > o.order; }
};

/// Times on a grid (time_grid()): events that coincide on it coincide exactly, and ties are broken in one stated
/// order instead of by floating-point rounding error. A transmission time is rounded to it, half away from zero.
double on_grid(double t, double grid)
{
  const double steps = t / grid; // >= 0: rounding half up is rounding half away from zero, without libm's round
  return double(int64_t(steps + 0.5)) * grid;
}

/// The clock's resolution: ns-3's 1 ns when running as the reference does, else 1 ps.
double time_grid(const IncastConfig& c)
{
  return c.ns3_quirks ? 1e-9 : 1e-12;
}

/// The segment number of a PORT_ARRIVAL that is the handshake's last ACK (no data: it ends at the port).
constexpr uint32_t HANDSHAKE_ACK = std::numeric_limits<uint32_t>::max();

/// A min-heap of events with four children per node: fewer levels than a binary heap, and a node's children share a
/// cache line or two, so a pop costs fewer cache misses (the run's cost is mostly its event queue).
class EventQueue {
public:
  bool empty() const { return v_.empty(); }
  const Event& top() const { return v_.front(); }
  void push(const Event& e)
  {
    size_t i = v_.size();
    v_.push_back(e);
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!(v_[parent] > e)) break;
      v_[i] = v_[parent];
      i = parent;
    }
    v_[i] = e;
  }
  void pop()
  {
    const Event last = v_.back();
    v_.pop_back();
    if (v_.empty()) return;
    size_t i = 0;
    const size_t n = v_.size();
    for (;;) {
      const size_t first = 4 * i + 1;
      if (first >= n) break;
      size_t best = first;
      for (size_t c = first + 1; c < std::min(first + 4, n); ++c)
        if (v_[best] > v_[c]) best = c;
      if (!(last > v_[best])) break;
      v_[i] = v_[best];
      i = best;
    }
    v_[i] = last;
  }

private:
  std::vector<Event> v_;
};

class IncastRun {
public:
  explicit IncastRun(const IncastConfig& c) : c_(c), grid_(time_grid(c))
  {
    const uint64_t full = c.bytes_per_sender / uint64_t(c.mss);
    const uint64_t rest = c.bytes_per_sender % uint64_t(c.mss);
    const size_t n = size_t(full + (rest ? 1 : 0));
    last_payload_ = rest ? int(rest) : c.mss;
    senders_.reserve(size_t(c.senders));
    for (int i = 0; i < c.senders; ++i)
      senders_.emplace_back(n);
    ack_wire_ = on_grid(double(c.header_bytes + c.framing_bytes) / c.link_rate, grid_);
    syn_wire_ = on_grid(double(c.syn_bytes + c.framing_bytes) / c.link_rate, grid_);
    delay_ = on_grid(c.link_delay, grid_);
    for (int b = 1; b <= 3; ++b)
      ack_wire_with_sack_[size_t(b - 1)] =
          on_grid(double(c.header_bytes + 8 * b + c.framing_bytes) / c.link_rate, grid_);
    // The handshake before the first data segment. Sender i sends its SYN at its start offset (0, or drawn in
    // [0, start_jitter)); the SYNs leave the port in the order they reach it, one SYN time apart when they arrive
    // together, and the SYN-ACK crosses both links back. The stagger decides which senders' later segments find
    // room in the port (and so get SACKed) first. (SYNs do not meet data at the port: the first data segment
    // arrives a handshake later, longer than any jitter this is run with: validation/ns3 uses 1 us.)
    std::mt19937_64 draw(c.seed);
    // mt19937_64's output is fixed by the standard; uniform_real_distribution's is not: draw by hand, so that a
    // seed gives the same offsets with any standard library.
    auto jitter = [&](std::mt19937_64& g) { return double(g() >> 11) * 0x1.0p-53 * c.start_jitter; };
    std::vector<std::pair<double, uint32_t>> syn_arrival;
    for (uint32_t i = 0; i < senders_.size(); ++i) {
      const double offset = !c.start_offsets.empty()
                                ? c.start_offsets[i]
                                : double(i) * c.start_stagger + (c.start_jitter > 0 ? jitter(draw) : 0.0);
      senders_[i].syn_sent = on_grid(offset, grid_);
      syn_arrival.emplace_back(on_grid(senders_[i].syn_sent + syn_wire_ + delay_, grid_), i);
    }
    std::sort(syn_arrival.begin(), syn_arrival.end());
    // The SYNs wait in the port like any packet (they all arrive before the first data, which comes a handshake
    // later), so that with many senders the first data queue behind the last SYNs.
    for (const auto& [arrival, i] : syn_arrival) {
      const double start = std::max(arrival, port_free_);
      port_free_ = on_grid(start + syn_wire_, grid_);
      if (start > arrival) {
        port_.emplace_back(start, double(c.syn_bytes));
        queued_bytes_ += c.syn_bytes;
      }
      senders_[i].data_start =
          on_grid(port_free_ + delay_ + 2 * (syn_wire_ + delay_), grid_); // the SYN-ACK: a SYN's size
    }
  }

  IncastResult run()
  {
    for (uint32_t i = 0; i < senders_.size(); ++i) {
      senders_[i].cwnd = c_.initial_window;
      schedule(senders_[i].data_start, EventKind::SYN_ACK, i);
    }
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      now_ = e.time;
      current_order_ = e.order;
      switch (e.kind) {
      case EventKind::SYN_ACK:
        on_syn_ack(e.sender);
        break;
      case EventKind::FIRST_DATA:
        send_what_window_allows(e.sender);
        break;
      case EventKind::LINK_FREE:
        on_link_free(e.sender);
        break;
      case EventKind::ACK_AT_SWITCH: // the switch's link toward the sender carries only its ACKs: never busy
        schedule(now_ + ack_wire(e.sack_blocks) + delay_, EventKind::ACK_ARRIVAL, e.sender, e.segment, e.cumulative,
                 e.sent);
        break;
      case EventKind::PORT_ARRIVAL:
        on_port_arrival(e);
        break;
      case EventKind::RECEIVER_ARRIVAL:
        on_receiver_arrival(e);
        break;
      case EventKind::ACK_ARRIVAL:
        on_ack(e);
        break;
      case EventKind::TIMER:
        if (e.time == senders_[e.sender].timer_event_time) on_timer(e.sender);
        break;
      }
    }
    IncastResult r;
    r.first = std::numeric_limits<double>::infinity();
    for (auto& s : senders_) {
      r.per_sender.push_back(s.out);
      r.completion = std::max(r.completion, s.out.completion);
      r.first = std::min(r.first, s.out.completion);
      r.timeouts += s.out.timeouts;
      r.fast_retransmits += s.out.fast_retransmits;
    }
    r.goodput = double(c_.bytes_per_sender) * double(c_.senders) / r.completion;
    r.drops = drops_;
    r.peak_queue_bytes = peak_queue_;
    r.segments_sent = sent_;
    for (const double bytes : series_)
      r.goodput_series.push_back(bytes / c_.goodput_bin);
    r.goodput_series_truncated = series_truncated_;
    return r;
  }

private:
  int payload(const Sender& s, size_t seg) const { return seg + 1 == s.segments ? last_payload_ : c_.mss; }
  double ip_bytes(const Sender& s, size_t seg) const { return payload(s, seg) + c_.header_bytes; }
  double wire(const Sender& s, size_t seg) const
  {
    return on_grid((ip_bytes(s, seg) + c_.framing_bytes) / c_.link_rate, grid_);
  }

  void schedule(double t, EventKind k, uint32_t sender, uint32_t seg = 0, uint32_t cum = 0, double sent = 0,
                uint8_t sack_blocks = 0)
  {
    events_.push(Event{on_grid(t, grid_), order_++, k, sender, seg, cum, sent, sack_blocks});
  }

  /// An ACK's time on a link: RFC 2018's 8 bytes per SACK block (3 fit beside the timestamp option in TCP's 40 bytes
  /// of options, whose 2 bytes of padding the SACK option's kind and length take).
  double ack_wire(uint8_t sack_blocks) const
  {
    return sack_blocks == 0 ? ack_wire_ : ack_wire_with_sack_[size_t(sack_blocks - 1)];
  }

  void emit(IncastTraceEvent::Kind kind, uint32_t i, int64_t segment, const char* state = "") const
  {
    if (c_.trace) c_.trace(IncastTraceEvent{kind, now_, int(i) + 1, segment, state});
  }

  void set_state(uint32_t i, CongState to)
  {
    static constexpr const char* NAMES[] = {"CA_OPEN", "CA_DISORDER", "CA_RECOVERY", "CA_LOSS"};
    if (senders_[i].state == to) return;
    senders_[i].state = to;
    emit(IncastTraceEvent::Kind::STATE, i, 0, NAMES[int(to)]);
  }

  /// The handshake completes: the SYN gave the first RTT sample (RFC 6298 2.2; ns-3 and Linux take it), so the
  /// time-out is the minimum from the first data segment on, not the initial 1 s. The handshake's last ACK leaves
  /// first: the data queue behind it on the sender's link, and it takes its place in the port's buffer and on its wire
  /// (with many senders, the last ones' ACKs meet the first ones' data).
  void on_syn_ack(uint32_t i)
  {
    auto& s = senders_[i];
    sample_rtt(s, s.data_start - s.syn_sent);
    emit(IncastTraceEvent::Kind::ACK, i, 0);
    put_on_link(i, HANDSHAKE_ACK, now_);
    // ns-3 (a quirk) writes the first data one clock tick after the handshake (TcpSocketBase::Send schedules
    // SendPendingData a time step later): the retransmission timer starts then.
    if (c_.ns3_quirks)
      schedule(now_ + grid_, EventKind::FIRST_DATA, i);
    else
      send_what_window_allows(i);
  }

  /// A packet for the sender's link: serialized now if the link is idle, else queued behind the others (ns-3's
  /// point-to-point device; the sender's queue is deep).
  void put_on_link(uint32_t i, uint32_t seg, double sent)
  {
    auto& s = senders_[i];
    // Busy until its end-of-transmission event has been handled: later in time, or at this instant but later in the
    // order of events than the one being handled.
    const bool busy = s.link_end > now_ || (s.link_end == now_ && s.link_end_order > current_order_);
    if (busy) {
      s.link_queue.emplace_back(seg, sent);
      make_link_event(i);
      return;
    }
    const double tx = seg == HANDSHAKE_ACK ? ack_wire_ : wire(s, seg);
    s.link_end = on_grid(now_ + tx, grid_);
    s.link_end_order = order_++; // ns-3 schedules the end of transmission first, then the arrival
    s.link_event_made = false;
    if (!s.link_queue.empty()) make_link_event(i); // packets already wait (started from on_link_free)
    schedule(now_ + tx + delay_, EventKind::PORT_ARRIVAL, i, seg, 0, sent);
  }

  /// The LINK_FREE event of the packet on the sender's link, in the place in the order of events reserved for it when
  /// the packet started (once).
  void make_link_event(uint32_t i)
  {
    auto& s = senders_[i];
    if (s.link_event_made) return;
    events_.push(Event{s.link_end, s.link_end_order, EventKind::LINK_FREE, i, 0, 0, 0, 0});
    s.link_event_made = true;
  }

  void on_link_free(uint32_t i)
  {
    auto& s = senders_[i];
    s.link_event_made = false;
    if (s.link_queue.empty()) return;
    const auto [seg, sent] = s.link_queue.front();
    s.link_queue.pop_front();
    put_on_link(i, seg, sent);
  }

  void transmit(uint32_t i, size_t seg)
  {
    auto& s = senders_[i];
    if (seg == s.snd_nxt) {
      ++s.snd_nxt;
      if (s.snd_nxt == s.segments) s.fin_sent = true;
    } else {
      ++s.out.retransmitted_segments;
      if (!s.has(seg, RETRANS)) {
        s.flags[seg] |= RETRANS;
        ++s.retrans_out;
        s.to_resend.erase(seg);
      }
    }
    if (s.state == CongState::RECOVERY) s.prr_out += 1; // TcpPrrRecovery::UpdateBytesSent
    ++sent_;
    emit(IncastTraceEvent::Kind::TX, i, int64_t(seg));
    put_on_link(i, uint32_t(seg), now_);
    if (s.timer_deadline < 0) arm_timer(i);
  }

  /// RFC 6675's NextSeg, as ns-3's TcpTxBuffer::NextSeg: (1) the lowest segment marked lost, not SACKed and not sent
  /// again; (2) new data; (3) in recovery only, the lowest segment neither SACKed, lost nor sent again (ns-3 does not
  /// require it to lie below the highest SACK). No rescue retransmission (rule 4; ns-3 leaves it out). SIZE_MAX: none.
  size_t next_segment(Sender& s, bool rule3)
  {
    if (!s.to_resend.empty()) return *s.to_resend.begin();
    if (s.snd_nxt < s.segments) return s.snd_nxt;
    if (rule3) {
      s.rule3_scan = std::max(s.rule3_scan, s.snd_una);
      while (s.rule3_scan < s.snd_nxt && s.flags[s.rule3_scan] != 0)
        ++s.rule3_scan;
      if (s.rule3_scan < s.snd_nxt) return s.rule3_scan;
    }
    return SIZE_MAX;
  }

  /// RFC 6675 (C), as ns-3's TcpSocketBase::SendPendingData: send NextSeg's segments while the window minus the
  /// segments in flight holds one (the last, short segment needs only its own size: the silly-window check).
  void send_what_window_allows(uint32_t i)
  {
    auto& s = senders_[i];
    for (;;) {
      // ns-3 (a quirk): once the FIN has gone out with the last segment, nothing is sent in the open state; lost
      // segments wait for an ACK with new SACK information (disorder) or the timer.
      if (c_.ns3_quirks && s.state == CongState::OPEN && s.fin_sent) break;
      const double available = s.cwnd - s.in_flight();
      if (!(available > 1e-9)) break;
      const size_t seg = next_segment(s, s.state == CongState::RECOVERY);
      if (seg == SIZE_MAX) break;
      const double need = seg + 1 == s.segments ? double(last_payload_) / c_.mss : 1.0;
      if (available + 1e-9 < need) break;
      transmit(i, seg);
    }
  }

  /// ns-3's TcpSocketBase::DoRetransmit, outside the window: NextSeg's rules 1 and 2 (a lost segment, else new data),
  /// else the first unacknowledged segment.
  void do_retransmit(uint32_t i)
  {
    auto& s = senders_[i];
    size_t seg = next_segment(s, false);
    if (seg == SIZE_MAX) seg = s.snd_una;
    if (seg < s.segments) transmit(i, seg);
  }

  double current_rto(const Sender& s) const
  {
    return std::min(c_.max_rto, s.rto * double(uint64_t(1) << std::min(s.backoff_shift, 30)));
  }

  void arm_timer(uint32_t i)
  {
    auto& s = senders_[i];
    s.timer_deadline = on_grid(now_ + current_rto(s), grid_);
    // One live event at or before the deadline: a later deadline is found when that event fires.
    if (s.timer_event_time < 0 || s.timer_event_time > s.timer_deadline) {
      s.timer_event_time = s.timer_deadline;
      schedule(s.timer_deadline, EventKind::TIMER, i);
    }
  }

  // The port toward the receiver: a FIFO of c_.buffer_bytes (the queue disc) in front of a one-packet device queue
  // and the packet on the wire. `port_` holds when each accepted packet starts on the wire, and its size.
  void on_port_arrival(const Event& e)
  {
    auto& s = senders_[e.sender];
    // A packet that starts on the wire at this very instant still waits: as in ns-3, where the arrival was scheduled
    // (when its sender started sending it) before the port's end of transmission (when the previous packet started).
    // The first sender's packets arrive in step with the port's departures, so this tie is frequent.
    while (!port_.empty() && port_.front().first < now_) {
      queued_bytes_ -= port_.front().second;
      port_.pop_front();
    }
    // Waiting packets: the first sits in the device queue, the others in the buffer.
    const double in_buffer = port_.empty() ? 0 : queued_bytes_ - port_.front().second;
    const bool pure_ack = e.segment == HANDSHAKE_ACK;
    const double size = pure_ack ? c_.header_bytes : ip_bytes(s, e.segment);
    if (!port_.empty() && in_buffer + size > double(c_.buffer_bytes)) {
      ++drops_;
      emit(IncastTraceEvent::Kind::DROP, e.sender, pure_ack ? -1 : int64_t(e.segment));
      return;
    }
    const double start = std::max(now_, port_free_);
    port_free_ = on_grid(start + (pure_ack ? ack_wire_ : wire(s, e.segment)), grid_);
    if (start > now_) {
      port_.emplace_back(start, size);
      queued_bytes_ += size;
      const double buffered = queued_bytes_ - port_.front().second;
      peak_queue_ = std::max(peak_queue_, uint64_t(buffered));
    }
    if (!pure_ack) schedule(port_free_ + delay_, EventKind::RECEIVER_ARRIVAL, e.sender, e.segment, 0, e.sent);
  }

  void on_receiver_arrival(const Event& e)
  {
    auto& s = senders_[e.sender];
    const size_t k = e.segment;
    if (!s.received[k]) {
      s.received[k] = 1;
      const bool right = k + 1 < s.segments && s.received[k + 1];
      if (k == s.rcv_nxt) {
        if (right) --s.sack_islands; // the run above joins the in-order data
        const size_t before = s.rcv_nxt;
        while (s.rcv_nxt < s.segments && s.received[s.rcv_nxt])
          ++s.rcv_nxt;
        if (c_.goodput_bin > 0) count_goodput(s, before, s.rcv_nxt);
      } else {
        const bool left = k > s.rcv_nxt + 1 && s.received[k - 1];
        s.sack_islands += 1;
        s.sack_islands -= int(left) + int(right);
      }
      if (s.rcv_nxt == s.segments && s.out.completion == 0) s.out.completion = now_;
    }
    // Every segment is acknowledged at once (delayed ACKs off); the ACK crosses the receiver's link, then the switch's.
    // It carries a SACK block per run of data received above the cumulative point, at most 3 (RFC 2018: 8 bytes each; 3
    // fit beside the timestamp option in TCP's 40 bytes of options, whose 2 bytes of padding the SACK option's kind and
    // length take).
    const auto blocks = uint8_t(std::min(s.sack_islands, 3));
    schedule(now_ + ack_wire(blocks) + delay_, EventKind::ACK_AT_SWITCH, e.sender, e.segment, uint32_t(s.rcv_nxt),
             e.sent, blocks);
  }

  /// Payload of segments [from, to) delivered in order now, into its goodput bin.
  void count_goodput(const Sender& s, size_t from, size_t to)
  {
    const double bytes = double(to - from) * c_.mss - (to == s.segments ? double(c_.mss - last_payload_) : 0.0);
    const double bin = std::floor(now_ / c_.goodput_bin);
    if (!(bin < double(MAX_GOODPUT_BINS))) {
      series_truncated_ = true;
      return;
    }
    if (size_t(bin) >= series_.size()) series_.resize(size_t(bin) + 1, 0.0);
    series_[size_t(bin)] += bytes;
  }

  void sample_rtt(Sender& s, double r)
  {
    if (!s.have_rtt) {
      s.srtt = r;
      s.rttvar = r / 2;
      s.have_rtt = true;
    } else {
      s.rttvar = 0.75 * s.rttvar + 0.25 * std::abs(s.srtt - r);
      s.srtt = 0.875 * s.srtt + 0.125 * r;
    }
    s.rto = std::max(c_.min_rto, s.srtt + std::max(c_.clock_granularity, 4 * s.rttvar));
  }

  /// ns-3's TcpNewReno::IncreaseWindow: in slow start one segment per call that acknowledges any, the rest (if the
  /// window reached ssthresh) as congestion avoidance, which adds MSS * MSS / cwnd bytes per call, truncated to whole
  /// bytes (the window is a byte count there: MSS * cwnd here is a whole number).
  void increase_window(Sender& s, uint64_t segs_acked) const
  {
    if (s.cwnd < s.ssthresh && segs_acked >= 1) {
      s.cwnd += 1;
      --segs_acked;
    }
    if (s.cwnd >= s.ssthresh && segs_acked > 0) {
      const double mss = c_.mss, bytes = std::round(s.cwnd * mss);
      s.cwnd = (bytes + std::max(1.0, std::floor(mss * mss / bytes))) / mss;
    }
  }

  /// ns-3's TcpSocketBase::NewAck: a new cumulative ACK restarts the timer from the estimate (the back-off ends), or
  /// stops it when everything is acknowledged.
  void new_ack(uint32_t i, bool restart_timer)
  {
    auto& s = senders_[i];
    if (s.snd_una >= s.segments) {
      s.timer_deadline = -1;
    } else if (restart_timer) {
      s.backoff_shift = 0;
      s.timer_deadline = -1;
      arm_timer(i);
    }
  }

  /// One ACK, in the order of ns-3's TcpSocketBase::ReceivedAck and ProcessAck (RFC 6675 with NewReno and PRR).
  void on_ack(const Event& e)
  {
    auto& s = senders_[e.sender];
    const size_t seg = e.segment;
    const size_t cum = e.cumulative;
    const size_t old_una = s.snd_una;
    emit(IncastTraceEvent::Kind::ACK, e.sender, int64_t(cum));
    // The SACK blocks: the segment this ACK answers, when it lies above the cumulative point (each ACK's blocks
    // repeat the earlier ones, which are known already: no ACK is lost here).
    uint64_t newly_sacked = 0, delivered = 0;
    if (seg >= cum && seg >= s.snd_una && !s.has(seg, SACKED)) {
      if (s.has(seg, LOST)) {
        s.flags[seg] &= uint8_t(~LOST);
        --s.lost_out;
        s.to_resend.erase(seg);
      }
      s.flags[seg] |= SACKED;
      ++s.sacked_out;
      s.sacked.add(seg);
      s.highest_sack = std::max(s.highest_sack, seg + 1);
      ++newly_sacked;
      sample_rtt(s, now_ - e.sent); // timestamps (RFC 7323): the echo names the copy that arrived
    }
    if (newly_sacked) mark_lost(s);
    if (cum > old_una) {
      // PRR's slow-start bound allows one extra segment when this partial ACK covers a retransmission that was not
      // SACKed (TcpSocketBase::ReceivedAck's m_isRetransDataAcked; reset after every ACK).
      const bool partial = s.state == CongState::RECOVERY && cum < s.recover;
      for (size_t k = old_una; k < cum; ++k) {
        if (partial && s.has(k, RETRANS) && !s.has(k, SACKED)) s.retrans_data_acked = true;
        if (!s.has(k, SACKED)) ++delivered;
        if (s.has(k, SACKED)) --s.sacked_out;
        if (s.has(k, LOST)) --s.lost_out;
        if (s.has(k, RETRANS)) --s.retrans_out;
        s.to_resend.erase(k);
        s.flags[k] = 0;
      }
      s.snd_una = cum;
      s.loss_scan = std::max(s.loss_scan, cum);
      if (seg >= old_una && seg < cum) sample_rtt(s, now_ - e.sent);
    }
    delivered += newly_sacked;
    process_ack(e.sender, old_una, newly_sacked > 0, delivered);
    s.retrans_data_acked = false;
    send_what_window_allows(e.sender);
  }

  /// TcpSocketBase::ProcessAck: duplicate-ACK handling (with SACK, a duplicate ACK is one with new SACK information),
  /// then the cumulative ACK in each congestion state.
  void process_ack(uint32_t i, size_t old_una, bool is_dupack, uint64_t delivered)
  {
    auto& s = senders_[i];
    if (is_dupack) dup_ack(i, delivered);
    if (s.snd_una == old_una) return;
    const uint64_t segs_acked = s.snd_una - old_una;
    if (!is_dupack) s.dupacks = 0;
    if (s.snd_una < s.recover && s.state == CongState::RECOVERY) {
      // A partial ACK: PRR, then the new head is taken as lost and sent at once unless it was sent again already
      // (RFC 6582; ns-3 does it with SACK too). Only the first partial ACK of a recovery restarts the timer (RFC 6582's
      // "impatient" variant).
      proportional_rate_reduction(s, delivered);
      if (!(s.snd_una < s.segments && s.has(s.snd_una, RETRANS) && !s.has(s.snd_una, SACKED))) do_retransmit(i);
      new_ack(i, s.first_partial_ack);
      s.first_partial_ack = false;
      return;
    }
    if (s.snd_una < s.recover && s.state == CongState::LOSS) {
      increase_window(s, segs_acked);
      new_ack(i, true);
      return;
    }
    uint64_t grow_by = segs_acked;
    bool exited_recovery = false;
    if (s.state == CongState::DISORDER) {
      if (!is_dupack) set_state(i, CongState::OPEN);
    } else if (s.state == CongState::RECOVERY) {
      s.first_partial_ack = true;
      set_state(i, CongState::OPEN);
      exited_recovery = true;
      s.dupacks = 0;
    } else if (s.state == CongState::LOSS) {
      s.first_partial_ack = true;
      grow_by = s.snd_una - std::min(s.snd_una, s.recover); // only what lies above the recovery point
      set_state(i, CongState::OPEN);
    }
    if (s.snd_una >= s.recover) s.recover_active = false;
    if (exited_recovery) {
      new_ack(i, true);
      s.cwnd = s.ssthresh;
    }
    if (s.state == CongState::OPEN) {
      increase_window(s, grow_by);
      new_ack(i, true);
    }
  }

  /// TcpSocketBase::DupAck: ignored after a time-out; otherwise counted, and the third one (or a lost mark on the
  /// second unacknowledged segment) starts fast recovery.
  void dup_ack(uint32_t i, uint64_t delivered)
  {
    auto& s = senders_[i];
    if (s.state == CongState::LOSS) return;
    if (s.state != CongState::RECOVERY) ++s.dupacks;
    if (s.state == CongState::OPEN) set_state(i, CongState::DISORDER);
    if (s.state == CongState::RECOVERY) {
      proportional_rate_reduction(s, delivered);
    } else if ((s.dupacks == c_.dupack_threshold && (s.snd_una >= s.recover || !s.recover_active)) ||
               lost_from(s, s.snd_una + 1)) {
      enter_recovery(i, delivered);
    }
  }

  /// ns-3 3.37's TcpTxBuffer::IsLost(segment `from`): whether the first segment from `from` on that is SACKed or marked
  /// lost is marked lost (nothing at or above the highest SACK is). DupAck asks it of the second unacknowledged
  /// segment, EnterRecovery of the first.
  static bool lost_from(const Sender& s, size_t from)
  {
    for (size_t k = from; k < s.highest_sack; ++k) {
      if (s.has(k, LOST)) return true;
      if (s.has(k, SACKED)) return false;
    }
    return false;
  }

  /// TcpSocketBase::EnterRecovery (RFC 6675 (4)): the head is lost, RecoveryPoint is the highest segment sent,
  /// ssthresh half the segments in flight (ns-3's NewReno; Linux halves the window instead), PRR starts, and the first
  /// lost segment is sent at once.
  void enter_recovery(uint32_t i, uint64_t delivered)
  {
    auto& s = senders_[i];
    // TcpTxBuffer::MarkHeadAsLost: the head is marked lost and, if it was sent again already, counts as not sent again
    // (so that it is the segment retransmitted now).
    if (!lost_from(s, s.snd_una)) {
      if (s.has(s.snd_una, RETRANS)) {
        s.flags[s.snd_una] &= uint8_t(~RETRANS);
        --s.retrans_out;
      }
      if (!s.has(s.snd_una, LOST))
        mark_one_lost(s, s.snd_una);
      else
        s.to_resend.insert(s.snd_una);
    }
    s.recover = s.snd_nxt;
    s.recover_active = true;
    set_state(i, CongState::RECOVERY);
    s.rule3_scan = s.snd_una;
    s.ssthresh = std::max(2.0, s.in_flight() / 2);
    s.prr_out = 0;
    s.prr_delivered = 0;
    s.recover_fs = double(s.snd_nxt - s.snd_una);
    proportional_rate_reduction(s, delivered);
    ++s.out.fast_retransmits;
    do_retransmit(i);
  }

  /// RFC 6937 with the slow-start reduction bound, as ns-3's TcpPrrRecovery: the window is the segments in flight
  /// plus what may be sent for this ACK. In bytes there, so that less than a segment of room sends nothing.
  void proportional_rate_reduction(Sender& s, uint64_t delivered) const
  {
    s.prr_delivered += double(delivered);
    const double in_flight = s.in_flight();
    double sndcnt;
    if (in_flight > s.ssthresh) {
      const double mss = c_.mss;
      sndcnt = std::ceil(s.prr_delivered * s.ssthresh / std::max(s.recover_fs, 1.0) * mss - 1e-6) / mss - s.prr_out;
    } else {
      double limit = double(delivered);
      if (s.retrans_data_acked) {
        const double diff = s.prr_delivered - s.prr_out;
        limit = c_.ns3_quirks && diff < 0 ? diff + 1 : std::max(diff, double(delivered)) + 1;
      }
      sndcnt = std::min(limit, s.ssthresh - in_flight);
    }
    sndcnt = std::max(sndcnt, s.prr_out > 0 ? 0.0 : 1.0); // the fast retransmission itself
    s.cwnd = in_flight + sndcnt;
  }

  void mark_one_lost(Sender& s, size_t k)
  {
    s.flags[k] |= LOST;
    ++s.lost_out;
    if (!s.has(k, RETRANS)) s.to_resend.insert(k);
  }

  /// TcpTxBuffer::UpdateLostCount (RFC 6675's IsLost): a segment with DupThresh SACKed segments above it is marked
  /// lost. A retransmission can be marked too (that only changes the count in flight); only the timer sends it again.
  void mark_lost(Sender& s)
  {
    while (s.loss_scan < s.snd_nxt && s.sacked.above(s.loss_scan) >= uint64_t(c_.dupack_threshold)) {
      const size_t k = s.loss_scan++;
      if (!s.has(k, SACKED) && !s.has(k, LOST)) mark_one_lost(s, k);
    }
  }

  /// TcpSocketBase::ReTxTimeout: every segment not SACKed is lost and none counts as sent again, ssthresh is half the
  /// segments in flight before, the window one segment, the time-out doubles, and slow start resends from the first
  /// lost segment. The SACK scoreboard is kept (RFC 6675 5.1 with the errata).
  void on_timer(uint32_t i)
  {
    auto& s = senders_[i];
    s.timer_event_time = -1;
    if (s.timer_deadline < 0) return;
    if (now_ < s.timer_deadline) { // restarted since this event was scheduled
      s.timer_event_time = s.timer_deadline;
      schedule(s.timer_deadline, EventKind::TIMER, i);
      return;
    }
    // Counted as ns-3's reference counts them: entries into the loss state (back-to-back expiries count once).
    if (s.state != CongState::LOSS) ++s.out.timeouts;
    const double in_flight_before = s.in_flight();
    s.dupacks = 0;
    s.retrans_out = 0;
    s.lost_out = 0;
    s.to_resend.clear();
    for (size_t k = s.snd_una; k < s.snd_nxt; ++k) {
      s.flags[k] &= uint8_t(~RETRANS);
      if (!s.has(k, SACKED)) {
        s.flags[k] |= LOST;
        ++s.lost_out;
        s.to_resend.insert(k);
      }
    }
    s.loss_scan = s.snd_nxt;
    s.recover = s.snd_nxt;
    s.recover_active = true;
    ++s.backoff_shift;
    s.ssthresh = std::max(2.0, in_flight_before / 2);
    set_state(i, CongState::LOSS);
    s.cwnd = 1;
    s.timer_deadline = -1;
    send_what_window_allows(i); // re-arms the timer with the doubled RTO
  }
  const IncastConfig& c_;
  std::vector<Sender> senders_;
  EventQueue events_;
  uint64_t order_ = 0, current_order_ = 0;
  double grid_;
  double now_ = 0, ack_wire_ = 0, syn_wire_ = 0, delay_ = 0;
  std::array<double, 3> ack_wire_with_sack_{}; ///< an ACK with 1, 2 or 3 SACK blocks
  int last_payload_ = 0;
  std::deque<std::pair<double, double>> port_; ///< accepted packets not yet on the wire: start time, IP bytes
  double queued_bytes_ = 0, port_free_ = 0;
  uint64_t drops_ = 0, peak_queue_ = 0, sent_ = 0;
  std::vector<double> series_; ///< goodput bins: payload delivered in order, bytes
  bool series_truncated_ = false;
};

} // namespace

Status check_incast(const IncastConfig& c)
{
  auto bad = [](const char* field, const std::string& expected, const std::string& got) {
    return Error::at("", field, expected, got);
  };
  if (c.senders < 1 || c.senders > 65536) return bad("senders", "1 to 65536", std::to_string(c.senders));
  if (c.bytes_per_sender < 1) return bad("size", "at least 1 byte per sender", "0");
  if (c.mss < 64 || c.mss > 65000) return bad("mss", "64 to 65000 bytes", std::to_string(c.mss));
  if (c.bytes_per_sender / uint64_t(c.mss) > 100000000)
    return bad("size", "at most 1e8 segments per sender", std::to_string(c.bytes_per_sender) + " bytes");
  if (!(c.link_rate > 0) || !std::isfinite(c.link_rate))
    return bad("rate", "a positive, finite link rate", std::to_string(c.link_rate));
  if (!(c.link_delay >= 0) || !(c.link_delay <= 10)) return bad("delay", "0 to 10 s", std::to_string(c.link_delay));
  if (c.buffer_bytes < uint64_t(c.mss + c.header_bytes))
    return bad("buffer", "at least one full packet (" + std::to_string(c.mss + c.header_bytes) + " bytes)",
               std::to_string(c.buffer_bytes));
  if (c.header_bytes < 0 || c.framing_bytes < 0) return bad("header_bytes", ">= 0", "negative");
  if (c.initial_window < 1) return bad("init_cwnd", "at least 1 segment", std::to_string(c.initial_window));
  if (!(c.min_rto > 0) || !(c.min_rto <= c.max_rto))
    return bad("min_rto", "0 < min RTO <= max RTO", std::to_string(c.min_rto));
  if (c.dupack_threshold < 1) return bad("dupack_threshold", ">= 1", std::to_string(c.dupack_threshold));
  // SYNs are queued at the port apart from data: the first data segment must reach the port after the last SYN.
  if (!c.start_offsets.empty()) {
    if (c.start_offsets.size() != size_t(c.senders))
      return bad("start_offsets", "one offset per sender (" + std::to_string(c.senders) + ")",
                 std::to_string(c.start_offsets.size()));
    for (const double o : c.start_offsets)
      if (!(o >= 0) || !(o <= 2 * c.link_delay * (1 + 1e-12)))
        return bad("start_offsets",
                   "offsets from 0 to twice the link delay (" + std::to_string(2 * c.link_delay * 1e9) +
                       " ns): the model keeps the handshakes apart from data at the port",
                   std::to_string(o * 1e9) + " ns");
  }
  if (!(c.start_stagger >= 0) || !std::isfinite(c.start_stagger))
    return bad("stagger", ">= 0 ns", std::to_string(c.start_stagger * 1e9) + " ns");
  const double spread = c.start_jitter + double(c.senders - 1) * c.start_stagger;
  if (!(c.start_jitter >= 0) || !(spread <= 2 * c.link_delay * (1 + 1e-12)))
    return bad(c.start_stagger > 0 ? "stagger" : "jitter",
               "the senders' start offsets (jitter + (senders - 1) x stagger) within twice the link delay (" +
                   std::to_string(2 * c.link_delay * 1e9) +
                   " ns): the model keeps the handshakes apart from data at the port",
               std::to_string(spread * 1e9) + " ns");
  if (!(c.goodput_bin >= 0) || !std::isfinite(c.goodput_bin) || (c.goodput_bin > 0 && c.goodput_bin < 1e-9))
    return bad("goodput_bin", "0 (off) or at least 1 ns", std::to_string(c.goodput_bin));
  if (c.syn_bytes < 40) return bad("syn_bytes", ">= 40 bytes (IPv4 and TCP headers)", std::to_string(c.syn_bytes));
  if (!(c.clock_granularity >= 0) || !std::isfinite(c.clock_granularity))
    return bad("clock_granularity", ">= 0 s", std::to_string(c.clock_granularity));
  if (!(c.max_rto <= 3600)) return bad("max_rto", "at most 3600 s", std::to_string(c.max_rto));
  // The clock's grid must resolve the shortest packet (a pure ACK): a transmission time that rounds to nothing would
  // let packets pass the port without queueing.
  if (on_grid(double(c.header_bytes + c.framing_bytes) / c.link_rate, time_grid(c)) <= 0)
    return bad("rate",
               "a rate at which an ACK (" + std::to_string(c.header_bytes + c.framing_bytes) +
                   " bytes) takes at least half a step of the clock (" +
                   (c.ns3_quirks ? std::string("1 ns with ns3_quirks") : std::string("1 ps")) + ")",
               std::to_string(c.link_rate * 8e-9) + " Gb/s");
  // The SYNs wait at the port: it must hold them all (a dropped SYN is not modelled).
  if (uint64_t(c.senders) * uint64_t(c.syn_bytes) > c.buffer_bytes)
    return bad("buffer",
               "room for every sender's SYN (" + std::to_string(c.senders) + " x " + std::to_string(c.syn_bytes) +
                   " bytes)",
               std::to_string(c.buffer_bytes));
  // Memory: about 16 bytes per segment of every sender.
  const double total_segments =
      double(c.senders) * double((c.bytes_per_sender + uint64_t(c.mss) - 1) / uint64_t(c.mss));
  if (total_segments > 1e8)
    return bad("size", "at most 1e8 segments over all senders (about 1.6 GB of model state)",
               std::to_string(c.senders) + " senders x " + std::to_string(c.bytes_per_sender) + " bytes");
  return {};
}

Result<IncastResult> simulate_tcp_incast(const IncastConfig& c)
{
  if (auto st = check_incast(c); !st.ok()) return st.error();
  return IncastRun(c).run();
}

Status check_incast_result(const IncastConfig& c, const IncastResult& r, const std::string& model)
{
  const double payload_rate = c.link_rate * c.mss / double(c.mss + c.header_bytes + c.framing_bytes);
  if (!std::isfinite(r.completion) || !(r.completion > 0) || !(r.first > 0) || !std::isfinite(r.goodput))
    return Error::msg("incast (" + model + "): completion " + std::to_string(r.completion) + " s (first sender " +
                      std::to_string(r.first) +
                      " s): not a positive, finite time for every sender (a model error; please report it)");
  // Transmission times are rounded to the clock's grid: a full packet may take less than its exact time, and the
  // port's payload rate is then that of the rounded time.
  const double wire = double(c.mss + c.header_bytes + c.framing_bytes) / c.link_rate;
  const double rounded_rate = c.mss / on_grid(wire, time_grid(c));
  if (r.goodput > std::max(payload_rate, rounded_rate) * (1 + 1e-9))
    return Error::msg("incast (" + model + "): goodput " + std::to_string(r.goodput * 8e-9) +
                      " Gb/s above the port's payload rate " + std::to_string(payload_rate * 8e-9) +
                      " Gb/s (a model error; please report it)");
  return {};
}

Result<IncastResult> run_incast_model(const std::string& model, const IncastConfig& c)
{
  IncastResult r;
  if (model == "flow") {
    if (auto st = check_incast(c); !st.ok()) return st.error();
    r = max_min_incast(c);
  } else {
    auto v = simulate_tcp_incast(c);
    if (!v.ok()) return v.error();
    r = std::move(v.value());
  }
  if (auto st = check_incast_result(c, r, model); !st.ok()) return st.error();
  return r;
}

Result<IncastMedian> run_incast_model_median(const std::string& model, IncastConfig c, int seeds,
                                             const std::vector<std::vector<double>>& offsets_per_run)
{
  if (!offsets_per_run.empty() && offsets_per_run.size() != size_t(seeds))
    return Error::at("", "start_offsets", "one list of start offsets per run (" + std::to_string(seeds) + ")",
                     std::to_string(offsets_per_run.size()));
  std::vector<IncastResult> runs;
  const uint64_t first_seed = c.seed;
  for (int k = 0; k < seeds; ++k) {
    c.seed = first_seed + uint64_t(k);
    if (!offsets_per_run.empty()) c.start_offsets = offsets_per_run[size_t(k)];
    auto r = run_incast_model(model, c);
    if (!r.ok()) return r.error();
    runs.push_back(std::move(r.value()));
  }
  auto med = [&](auto field) {
    std::vector<double> v;
    for (const auto& r : runs)
      v.push_back(double(field(r)));
    return median(v);
  };
  IncastMedian out;
  out.completion = med([](const IncastResult& r) { return r.completion; });
  out.first = med([](const IncastResult& r) { return r.first; });
  out.goodput = med([](const IncastResult& r) { return r.goodput; });
  out.drops = med([](const IncastResult& r) { return r.drops; });
  out.timeouts = med([](const IncastResult& r) { return r.timeouts; });
  out.fast_retransmits = med([](const IncastResult& r) { return r.fast_retransmits; });
  out.peak_queue_bytes = med([](const IncastResult& r) { return r.peak_queue_bytes; });
  return out;
}

IncastResult max_min_incast(const IncastConfig& c)
{
  const uint64_t segs = (c.bytes_per_sender + uint64_t(c.mss) - 1) / uint64_t(c.mss);
  const double wire_bytes = double(c.bytes_per_sender) + double(segs) * (c.header_bytes + c.framing_bytes);
  IncastResult r;
  r.completion = wire_bytes * c.senders / c.link_rate + 2 * c.link_delay;
  r.first = r.completion;
  r.goodput = double(c.bytes_per_sender) * c.senders / r.completion;
  r.segments_sent = segs * uint64_t(c.senders);
  r.per_sender.assign(size_t(c.senders), IncastSender{r.completion, 0, 0, 0});
  return r;
}

} // namespace tp::models
