// TCP incast through one drop-tail port: segment events at the port, TCP NewReno + SACK at each sender
// (see tcp_incast.hpp).
#include "models/congestion/tcp_incast.hpp"

#include "core/common/median.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <queue>
#include <random>
#include <set>

namespace tp::models {

namespace {

enum class SegState : uint8_t { UNSENT, IN_FLIGHT, SACKED, LOST };

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
  std::vector<SegState> state;
  std::vector<uint8_t> retransmitted; ///< sent again since the last time-out (SACK never marks it lost again)
  SackCounter sacked;
  std::set<size_t> to_resend; ///< marked lost, awaiting retransmission

  size_t snd_una = 0, snd_nxt = 0, loss_scan = 0, recover = 0;
  uint64_t pipe = 0;     ///< segments believed in the network (RFC 6675's pipe)
  uint64_t sacked_n = 0; ///< SACKed segments at or above snd_una
  double cwnd = 0, ssthresh = std::numeric_limits<double>::infinity();
  bool in_recovery = false, in_loss = false;
  bool first_partial_ack = true; ///< no partial ACK yet in this recovery
  // Proportional rate reduction (RFC 6937, ns-3's and Linux's default recovery): segments delivered and sent since
  // recovery began, and what was outstanding when it began.
  uint64_t prr_delivered = 0, prr_out = 0, recover_fs = 0;

  double srtt = 0, rttvar = 0, rto = 0;
  bool have_rtt = false;
  int backoff_shift = 0;
  double timer_deadline = -1;   ///< < 0: not armed
  double timer_event_time = -1; ///< the one timer event that counts (earlier ones are stale); < 0: none

  double link_free = 0;  ///< when this sender's own link has serialized its last packet
  double syn_sent = 0;   ///< when its SYN left (its start offset)
  double data_start = 0; ///< when the SYN-ACK came back and its first data segment may leave

  size_t rcv_nxt = 0; ///< the receiver's side: next in-order segment
  std::vector<uint8_t> received;

  IncastSender out;

  explicit Sender(size_t n) : segments(n), state(n, SegState::UNSENT), retransmitted(n, 0), sacked(n), received(n, 0) {}
  uint64_t flight() const { return uint64_t(snd_nxt - snd_una) - sacked_n; }
};

enum class EventKind : uint8_t { PORT_ARRIVAL, RECEIVER_ARRIVAL, ACK_ARRIVAL, TIMER };

struct Event {
  double time;
  uint64_t order; ///< ties broken by scheduling order: deterministic
  EventKind kind;
  uint32_t sender;
  uint32_t segment;
  uint32_t cumulative; ///< ACK_ARRIVAL: the receiver's next expected segment when it sent the ACK
  double sent;         ///< when this copy of the segment left its sender: the timestamp the ACK echoes
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : order > o.order; }
};

class IncastRun {
public:
  explicit IncastRun(const IncastConfig& c) : c_(c)
  {
    const uint64_t full = c.bytes_per_sender / uint64_t(c.mss);
    const uint64_t rest = c.bytes_per_sender % uint64_t(c.mss);
    const size_t n = size_t(full + (rest ? 1 : 0));
    last_payload_ = rest ? int(rest) : c.mss;
    senders_.reserve(size_t(c.senders));
    for (int i = 0; i < c.senders; ++i)
      senders_.emplace_back(n);
    ack_wire_ = double(c.header_bytes + c.framing_bytes) / c.link_rate;
    syn_wire_ = double(c.syn_bytes + c.framing_bytes) / c.link_rate;
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
      senders_[i].syn_sent = c.start_jitter > 0 ? jitter(draw) : 0.0;
      syn_arrival.emplace_back(senders_[i].syn_sent + syn_wire_ + c.link_delay, i);
    }
    std::sort(syn_arrival.begin(), syn_arrival.end());
    double port_free = 0;
    for (const auto& [arrival, i] : syn_arrival) {
      port_free = std::max(arrival, port_free) + syn_wire_;
      senders_[i].data_start = port_free + c.link_delay + 2 * (ack_wire_ + c.link_delay);
    }
  }

  IncastResult run()
  {
    for (uint32_t i = 0; i < senders_.size(); ++i) {
      auto& s = senders_[i];
      s.cwnd = c_.initial_window;
      // The SYN and SYN-ACK give the first RTT sample (RFC 6298 2.2; ns-3 and Linux take it), so the time-out is
      // the minimum from the first data segment on, not the initial 1 s.
      sample_rtt(s, s.data_start - s.syn_sent);
      s.link_free = s.data_start;
      now_ = s.link_free;
      send_what_window_allows(i);
    }
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      now_ = e.time;
      switch (e.kind) {
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
    return r;
  }

private:
  int payload(const Sender& s, size_t seg) const { return seg + 1 == s.segments ? last_payload_ : c_.mss; }
  double ip_bytes(const Sender& s, size_t seg) const { return payload(s, seg) + c_.header_bytes; }
  double wire(const Sender& s, size_t seg) const { return (ip_bytes(s, seg) + c_.framing_bytes) / c_.link_rate; }

  void schedule(double t, EventKind k, uint32_t sender, uint32_t seg = 0, uint32_t cum = 0, double sent = 0)
  {
    events_.push(Event{t, order_++, k, sender, seg, cum, sent});
  }

  void transmit(uint32_t i, size_t seg)
  {
    auto& s = senders_[i];
    const double start = std::max(now_, s.link_free);
    const double tx = wire(s, seg);
    s.link_free = start + tx;
    s.state[seg] = SegState::IN_FLIGHT;
    ++s.pipe;
    ++sent_;
    schedule(start + tx + c_.link_delay, EventKind::PORT_ARRIVAL, i, uint32_t(seg), 0, start);
    if (s.timer_deadline < 0) arm_timer(i);
  }

  void send_what_window_allows(uint32_t i)
  {
    auto& s = senders_[i];
    while (double(s.pipe) < std::floor(s.cwnd + 1e-9)) {
      if (s.to_resend.empty() && s.snd_nxt >= s.segments) break;
      if (s.in_recovery) ++s.prr_out;
      if (!s.to_resend.empty()) {
        const size_t seg = *s.to_resend.begin();
        s.to_resend.erase(s.to_resend.begin());
        s.retransmitted[seg] = 1;
        ++s.out.retransmitted_segments;
        transmit(i, seg);
      } else {
        transmit(i, s.snd_nxt++);
      }
    }
  }

  /// Send segment `seg` again now, outside the window (a partial ACK's retransmission).
  void resend_now(uint32_t i, size_t seg)
  {
    auto& s = senders_[i];
    if (s.state[seg] == SegState::LOST) s.to_resend.erase(seg);
    if (s.state[seg] == SegState::IN_FLIGHT) --s.pipe; // believed lost now: its resend takes its place in the pipe
    s.retransmitted[seg] = 1;
    ++s.out.retransmitted_segments;
    ++s.prr_out;
    transmit(i, seg);
  }

  double current_rto(const Sender& s) const
  {
    return std::min(c_.max_rto, s.rto * double(uint64_t(1) << std::min(s.backoff_shift, 30)));
  }

  void arm_timer(uint32_t i)
  {
    auto& s = senders_[i];
    s.timer_deadline = now_ + current_rto(s);
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
    while (!port_.empty() && port_.front().first <= now_) {
      queued_bytes_ -= port_.front().second;
      port_.pop_front();
    }
    // Waiting packets: the first sits in the device queue, the others in the buffer.
    const double in_buffer = port_.empty() ? 0 : queued_bytes_ - port_.front().second;
    const double size = ip_bytes(s, e.segment);
    if (!port_.empty() && in_buffer + size > double(c_.buffer_bytes)) {
      ++drops_;
      return;
    }
    const double start = std::max(now_, port_free_);
    port_free_ = start + wire(s, e.segment);
    if (start > now_) {
      port_.emplace_back(start, size);
      queued_bytes_ += size;
      const double buffered = queued_bytes_ - port_.front().second;
      peak_queue_ = std::max(peak_queue_, uint64_t(buffered));
    }
    schedule(port_free_ + c_.link_delay, EventKind::RECEIVER_ARRIVAL, e.sender, e.segment, 0, e.sent);
  }

  void on_receiver_arrival(const Event& e)
  {
    auto& s = senders_[e.sender];
    if (!s.received[e.segment]) {
      s.received[e.segment] = 1;
      while (s.rcv_nxt < s.segments && s.received[s.rcv_nxt])
        ++s.rcv_nxt;
      if (s.rcv_nxt == s.segments && s.out.completion == 0) s.out.completion = now_;
    }
    // Every segment is acknowledged at once (delayed ACKs off), over two uncongested links.
    schedule(now_ + 2 * (c_.link_delay + ack_wire_), EventKind::ACK_ARRIVAL, e.sender, e.segment, uint32_t(s.rcv_nxt),
             e.sent);
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

  static void grow(Sender& s) { s.cwnd += s.cwnd < s.ssthresh ? 1.0 : 1.0 / s.cwnd; }

  void on_ack(const Event& e)
  {
    auto& s = senders_[e.sender];
    const size_t seg = e.segment;
    uint64_t delivered = 0; // segments this ACK reports delivered for the first time
    if (seg >= s.snd_una && s.state[seg] != SegState::SACKED) {
      ++delivered;
      if (s.state[seg] == SegState::IN_FLIGHT) --s.pipe;
      if (s.state[seg] == SegState::LOST) s.to_resend.erase(seg);
      s.state[seg] = SegState::SACKED;
      s.sacked.add(seg);
      ++s.sacked_n;
      sample_rtt(s, now_ - e.sent); // timestamps (RFC 7323): the echo names the copy that arrived
    }
    const size_t cum = e.cumulative;
    const bool cum_moved = cum > s.snd_una;
    if (cum_moved) {
      // Segments below the cumulative point that this ACK did not report one by one were reported before
      // (SACKed); only count those not yet known.
      for (size_t k = s.snd_una; k < cum; ++k) {
        if (s.state[k] == SegState::SACKED) {
          --s.sacked_n;
          continue;
        }
        if (s.state[k] == SegState::IN_FLIGHT) --s.pipe;
        if (s.state[k] == SegState::LOST) s.to_resend.erase(k);
        s.state[k] = SegState::SACKED;
        ++delivered;
      }
      s.snd_una = cum;
      s.loss_scan = std::max(s.loss_scan, s.snd_una);
      // The timer restarts on every ACK that moves the cumulative point, except in fast recovery, where only the
      // first partial ACK restarts it (RFC 6582's "impatient" variant, as ns-3 does): a long recovery can time out.
      bool restart_timer = true;
      if (s.in_recovery && s.snd_una > s.recover) {
        s.in_recovery = false;
        s.cwnd = s.ssthresh;
      } else if (s.in_recovery) {
        restart_timer = s.first_partial_ack;
        s.first_partial_ack = false;
      }
      if (s.in_loss && s.snd_una > s.recover) s.in_loss = false;
      if (s.snd_una >= s.segments) {
        s.timer_deadline = -1;
      } else if (restart_timer) {
        s.backoff_shift = 0;
        arm_timer(e.sender);
      }
    }
    // ns-3's NewReno (and Linux without ABC): one increase per ACK that moves the cumulative point, none on a
    // duplicate (SACK-only) ACK nor during fast recovery.
    if (cum_moved && !s.in_recovery) grow(s);
    const bool was_in_recovery = s.in_recovery;
    detect_losses(e.sender, delivered);
    if (s.in_recovery) {
      if (was_in_recovery) s.prr_delivered += delivered;
      proportional_rate_reduction(s, delivered);
      // A partial ACK (RFC 6582, NewReno; ns-3 does it with SACK too): the first unacknowledged segment is taken
      // as lost and sent again at once, whatever the window, unless it was sent again in this recovery already.
      if (was_in_recovery && cum_moved && s.snd_una < s.segments && !s.retransmitted[s.snd_una] &&
          s.state[s.snd_una] != SegState::SACKED)
        resend_now(e.sender, s.snd_una);
    }
    send_what_window_allows(e.sender);
  }

  /// RFC 6937 with the slow-start reduction bound (ns-3's TcpPrrRecovery default): the window is the pipe plus what
  /// may be sent for this ACK, so that the sending rate falls to ssthresh in proportion to what is delivered.
  static void proportional_rate_reduction(Sender& s, uint64_t delivered)
  {
    double sndcnt;
    if (double(s.pipe) > s.ssthresh) {
      sndcnt = std::ceil(double(s.prr_delivered) * s.ssthresh / double(std::max<uint64_t>(s.recover_fs, 1))) -
               double(s.prr_out);
    } else {
      const double limit = std::max(double(s.prr_delivered) - double(s.prr_out), double(delivered)) + 1;
      sndcnt = std::min(s.ssthresh - double(s.pipe), limit);
    }
    sndcnt = std::max(sndcnt, 0.0);
    if (s.prr_out == 0 && sndcnt == 0) sndcnt = 1; // the fast retransmission itself
    s.cwnd = double(s.pipe) + sndcnt;
  }

  /// RFC 6675: a segment with DupThresh SACKed segments above it is lost (not a retransmission: only the timer
  /// finds those).
  void detect_losses(uint32_t i, uint64_t delivered)
  {
    auto& s = senders_[i];
    bool marked = false;
    while (s.loss_scan < s.snd_nxt) {
      const size_t h = s.loss_scan;
      if (s.state[h] != SegState::IN_FLIGHT || s.retransmitted[h]) {
        ++s.loss_scan;
        continue;
      }
      if (s.sacked.above(h) < uint64_t(c_.dupack_threshold)) break;
      s.state[h] = SegState::LOST;
      --s.pipe;
      s.to_resend.insert(h);
      marked = true;
      ++s.loss_scan;
    }
    if (marked && !s.in_recovery && !s.in_loss) {
      s.in_recovery = true;
      s.first_partial_ack = true;
      s.recover = s.snd_nxt - 1;
      // ns-3's NewReno: half the pipe once the losses are marked (Linux halves the window instead).
      s.ssthresh = std::max(2.0, double(s.pipe) / 2);
      s.recover_fs = s.snd_nxt - s.snd_una;
      s.prr_delivered = delivered;
      s.prr_out = 0;
      ++s.out.fast_retransmits;
    }
  }

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
    ++s.out.timeouts;
    s.ssthresh = std::max(2.0, double(s.flight()) / 2);
    s.cwnd = 1;
    s.in_recovery = false;
    s.in_loss = true;
    s.recover = s.snd_nxt - 1;
    for (size_t k = s.snd_una; k < s.snd_nxt; ++k) {
      if (s.state[k] == SegState::IN_FLIGHT) {
        s.state[k] = SegState::LOST;
        s.to_resend.insert(k);
      }
      s.retransmitted[k] = 0;
    }
    s.pipe = 0;
    s.loss_scan = s.snd_una;
    ++s.backoff_shift;
    s.timer_deadline = -1;
    send_what_window_allows(i); // re-arms the timer with the doubled RTO
  }

  const IncastConfig& c_;
  std::vector<Sender> senders_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  uint64_t order_ = 0;
  double now_ = 0, ack_wire_ = 0, syn_wire_ = 0;
  int last_payload_ = 0;
  std::deque<std::pair<double, double>> port_; ///< accepted packets not yet on the wire: start time, IP bytes
  double queued_bytes_ = 0, port_free_ = 0;
  uint64_t drops_ = 0, peak_queue_ = 0, sent_ = 0;
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
  if (!(c.start_jitter >= 0) || !(c.start_jitter <= 2 * c.link_delay))
    return bad("jitter",
               "at most twice the link delay (" + std::to_string(2 * c.link_delay * 1e9) +
                   " ns): the model keeps the handshakes apart from data at the port",
               std::to_string(c.start_jitter * 1e9) + " ns");
  if (c.syn_bytes < 0 || !(c.clock_granularity >= 0) || !(c.max_rto <= 3600))
    return bad("syn_bytes", "syn_bytes >= 0, clock granularity >= 0, max RTO <= 3600 s", "out of range");
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
  if (r.goodput > payload_rate * (1 + 1e-9))
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

Result<IncastMedian> run_incast_model_median(const std::string& model, IncastConfig c, int seeds)
{
  std::vector<IncastResult> runs;
  const uint64_t first_seed = c.seed;
  for (int k = 0; k < seeds; ++k) {
    c.seed = first_seed + uint64_t(k);
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
