// TCP-like stream model. Per message and direction: sender stack (half the one-way stack latency), wire
// bytes = payload + per-segment headers through the NIC endpoints (SimGrid comm; the rate is capped by
// the connection's CPU-bound bandwidth through an extra time term), receiver stack (other half).
// Connection set-up costs one round trip (SYN/SYN-ACK) before the connect callback runs.
#include "sim/sim_stream.hpp"
#include "sim/sim_context.hpp"

#include <cmath>
#include <deque>

namespace tp::sim {

class SimStreamConnection;

struct StreamHalf {
  // One direction of a connection: sending queue and in-order delivery.
  std::deque<std::pair<Message, std::function<void(Status)>>> queue;
  bool busy = false;
  double last_delivery = 0;
};

class SimStreamConnection final : public StreamConnection, public std::enable_shared_from_this<SimStreamConnection> {
public:
  SimStreamConnection(SimStreamNetwork& net, std::string peer) : net_(net), peer_(std::move(peer)) {}

  void bind(const std::shared_ptr<SimStreamConnection>& other) { other_ = other; }

  void send(Message msg, std::function<void(Status)> done) override
  {
    if (closed_ || other_.expired()) {
      if (done) net_.ctx().reactor.post([done] { done(Error::at("", "stream send", "an open connection", "closed")); });
      return;
    }
    out_.queue.emplace_back(std::move(msg), std::move(done));
    pump();
  }

  void set_receive_handler(std::function<void(Message)> handler) override
  {
    on_receive_ = std::move(handler);
    while (on_receive_ && !backlog_.empty()) {
      Message m = std::move(backlog_.front());
      backlog_.pop_front();
      auto h = on_receive_;
      net_.ctx().reactor.post([h, m = std::move(m)]() mutable { h(std::move(m)); });
    }
  }
  void set_close_handler(std::function<void(Status)> handler) override { on_close_ = std::move(handler); }

  void close() override
  {
    if (closed_) return;
    closed_ = true;
    if (auto o = other_.lock()) {
      // The FIN follows the data already queued: deliver it after the last delivery.
      const double when = std::max(net_.ctx().reactor.now(), out_.last_delivery) + one_way_latency(*o);
      std::weak_ptr<SimStreamConnection> w = o;
      net_.ctx().reactor.at(when, [w] {
        if (auto c = w.lock()) c->peer_closed();
      });
    }
  }

  std::string peer_name() const override { return peer_; }

  void deliver(Message m)
  {
    if (closed_ || net_.dead()) return;
    if (on_receive_) {
      auto h = on_receive_;
      net_.ctx().reactor.post([h, m = std::move(m)]() mutable { h(std::move(m)); });
    } else {
      backlog_.push_back(std::move(m));
    }
  }

  void peer_closed()
  {
    if (closed_ || net_.dead()) return;
    closed_ = true;
    if (on_close_) {
      auto h = on_close_;
      net_.ctx().reactor.post([h] { h(ok_status()); });
    }
  }

  SimStreamNetwork& net() { return net_; }

  /// Fault injection: this end's process died. With `fin` the kernel closes the socket (queued data, then FIN);
  /// without, nothing more leaves this end and nothing is answered.
  void die(bool fin)
  {
    if (fin) {
      close();
      return;
    }
    closed_ = true;
    out_.queue.clear();
  }

  /// The connection broke (TCP gave up retransmitting): fail what is queued and tell the owner.
  void broken(const std::string& why)
  {
    if (closed_) return;
    closed_ = true;
    SimContext& ctx = net_.ctx();
    const Error e = Error::status("Unavailable", why);
    for (auto& [m, done] : out_.queue)
      if (done) ctx.reactor.post([done = done, e] { done(e); });
    out_.queue.clear();
    if (on_close_) {
      auto h = on_close_;
      ctx.reactor.post([h, e] { h(e); });
    }
  }

private:
  double one_way_latency(const SimStreamConnection& to) const
  {
    const Platform& pf = *net_.ctx().platform;
    const auto& tcp = pf.machine(net_.machine()).tcp;
    return tcp.stack_latency + pf.wire_latency(net_.machine(), 0, to.net_.machine(), 0);
  }

  struct FaultCost {
    double delay = 0;
    bool broken = false;
    uint64_t retransmissions = 0;
  };

  /// Fault injection: what a message sent over [t0, t1] costs in TCP retransmissions. A port down (or a peer
  /// machine without power) from time d: the segment in flight is resent after the RTO, then after twice
  /// that, ... (capped at 120 s) until the path is back; after `tcp_retries` resends the connection is
  /// dropped. Random loss of each segment: resent after one round trip (fast retransmit, three duplicate ACKs
  /// follow) or, for the last three segments of a message, after the RTO, doubled each time the resend is lost.
  FaultCost fault_cost(FaultInjector& f, const SimStreamConnection& other, double t0, double t1, double size)
  {
    FaultCost c;
    const size_t ma = net_.machine(), mb = other.net_.machine();
    const double rtt = 2 * one_way_latency(other);
    const double rto0 = std::max(f.plan().tcp_min_rto, 3 * rtt);
    const int max_resends = f.plan().tcp_retries;
    if (const double d = f.down_within(ma, 0, mb, 0, t0, t1); d >= 0) {
      const double up = f.both_up_at(ma, 0, mb, 0, d);
      double t = d, rto = rto0;
      for (int k = 1;; ++k) {
        t += rto;
        ++c.retransmissions;
        if (k > max_resends) {
          c.broken = true;
          break;
        }
        if (t >= up) break;
        rto = std::min(2 * rto, 120.0);
      }
      c.delay = t - d;
      return c;
    }
    const double p = f.loss_probability(ma, 0, mb, 0, t0);
    if (p <= 0) return c;
    const auto& tcp = net_.ctx().platform->machine(ma).tcp;
    const uint64_t segments = size <= 0 ? 1 : uint64_t(std::ceil(size / tcp.mss));
    uint64_t pos = 0;
    while (pos < segments) {
      const uint64_t k = f.first_lost(p, segments - pos);
      if (k >= segments - pos) break;
      pos += k;
      const bool tail = pos + 3 >= segments;
      double rto = rto0;
      double cost = tail ? rto0 : rtt;
      int resends = 1;
      while (f.draw(p)) { // the resend is lost too: wait for the RTO, doubled each time
        cost += rto;
        rto = std::min(2 * rto, 120.0);
        if (++resends > max_resends) {
          c.broken = true;
          break;
        }
      }
      c.retransmissions += uint64_t(resends);
      c.delay += cost;
      if (c.broken) break;
      ++pos;
    }
    return c;
  }

  void pump()
  {
    if (out_.busy || out_.queue.empty()) return;
    auto other = other_.lock();
    if (!other) return;
    out_.busy = true;
    // Named variables, not a structured binding: clang 14 cannot capture a binding in a lambda.
    Message msg = std::move(out_.queue.front().first);
    std::function<void(Status)> done = std::move(out_.queue.front().second);
    out_.queue.pop_front();
    SimContext& ctx = net_.ctx();
    const Platform& pf = *ctx.platform;
    const auto& tcp = pf.machine(net_.machine()).tcp;
    const double size = double(msg.wire_size());
    // Port links are rated in RDMA payload goodput (line rate x MTU / (MTU + headers)); TCP's own framing is in
    // tcp.wire_bytes, so express the line bytes in the links' units.
    const double wire_bytes = tcp.wire_bytes(size) * pf.nic(net_.machine(), 0).nic.payload_efficiency();
    // CPU-bound throughput of one connection: the time beyond what the links allow.
    const double cap = tcp.stream_bandwidth_cap();
    const double cpu_time = cap > 0 ? size / cap : 0.0;
    const size_t ma = net_.machine();
    const size_t mb = other->net_.machine();
    const int sa = pf.nic(ma, 0).socket;
    const int sb = pf.nic(mb, 0).socket;
    auto* from = pf.nic_endpoint(ma, 0, Location::host(sa), false);
    auto* to = pf.nic_endpoint(mb, 0, Location::host(sb), true);
    const double t0 = ctx.reactor.now();
    auto self = shared_from_this();
    auto m = std::make_shared<Message>(std::move(msg));
    ctx.start_comm(from, to, wire_bytes, [self, other, m, done, t0, cpu_time, ma, mb]() mutable {
      SimContext& c = self->net_.ctx();
      const double now = c.reactor.now();
      double sent = std::max(now, t0 + cpu_time);
      if (FaultInjector* f = c.faults.get()) {
        const FaultCost fc = self->fault_cost(*f, *other, t0, sent, double(m->wire_size()));
        f->stats().tcp_retransmissions += fc.retransmissions;
        f->note_retry(sent, sent + fc.delay, self->net_.process_name(), other->net_.process_name());
        sent += fc.delay;
        if (fc.broken) {
          const std::string why = "connection to " + self->peer_ + " timed out (TCP gave up after " +
                                  std::to_string(fc.retransmissions) + " retransmissions)";
          c.reactor.at(sent, [self, done, why] {
            if (done) done(Error::status("Unavailable", why));
            self->out_.busy = false;
            self->broken(why);
          });
          return;
        }
      }
      c.reactor.at(sent, [self, other, m, done, ma, mb]() mutable {
        SimContext& c2 = self->net_.ctx();
        const Platform& p2 = *c2.platform;
        self->out_.busy = false;
        if (done) done(ok_status());
        const double arrive =
            std::max(c2.reactor.now() + p2.machine(ma).tcp.stack_latency + p2.wire_latency(ma, 0, mb, 0),
                     self->out_.last_delivery);
        self->out_.last_delivery = arrive;
        std::weak_ptr<SimStreamConnection> w = other;
        c2.reactor.at(arrive, [w, m] {
          if (auto o = w.lock()) o->deliver(std::move(*m));
        });
        self->pump();
      });
    });
  }

  SimStreamNetwork& net_;
  std::string peer_;
  std::weak_ptr<SimStreamConnection> other_;
  StreamHalf out_;
  std::function<void(Message)> on_receive_;
  std::function<void(Status)> on_close_;
  std::deque<Message> backlog_;
  bool closed_ = false;
};

SimStreamNetwork::SimStreamNetwork(SimContext& ctx, size_t machine, std::string process_name)
    : ctx_(ctx), machine_(machine), name_(std::move(process_name))
{
}

Status SimStreamNetwork::listen(uint16_t port, std::function<void(StreamPtr)> on_accept)
{
  if (listeners_.count(port))
    return Error::at("", name_ + ": listen", "a free port", "port " + std::to_string(port) + " in use");
  listeners_[port] = std::move(on_accept);
  return ok_status();
}

void SimStreamNetwork::connect(const std::string& peer, uint16_t port, std::function<void(Result<StreamPtr>)> done)
{
  SimProcess* p = ctx_.find_process(peer);
  const double now = ctx_.reactor.now();
  if (!p) {
    ctx_.reactor.post(
        [done, peer] { done(Error::at("", "connect", "the name of a simulated process", "\"" + peer + "\"")); });
    return;
  }
  auto* remote = static_cast<SimStreamNetwork*>(&p->streams());
  const Platform& pf = *ctx_.platform;
  const double one_way = pf.machine(machine_).tcp.stack_latency + pf.wire_latency(machine_, 0, remote->machine_, 0);
  // SYN reaches the peer after one way; SYN-ACK comes back after another.
  if (remote->dead() && !remote->fin_on_death_) {
    // A machine without power answers no SYN: Linux gives up after 6 SYN retries (1+2+...+64 s = 127 s).
    ctx_.reactor.at(now + 127.0, [done, peer, port] {
      done(Error::status("Unavailable",
                         "connect to " + peer + ":" + std::to_string(port) + ": connection timed out (no SYN-ACK)"));
    });
    return;
  }
  ctx_.reactor.at(now + one_way, [this, remote, port, peer, done, one_way] {
    auto it = remote->listeners_.find(port);
    if (it == remote->listeners_.end()) {
      ctx_.reactor.after(one_way, [done, peer, port] {
        done(
            Error::at("", "connect to " + peer + ":" + std::to_string(port), "a listening port", "connection refused"));
      });
      return;
    }
    auto mine = std::make_shared<SimStreamConnection>(*this, peer);
    auto theirs = std::make_shared<SimStreamConnection>(*remote, name_);
    mine->bind(theirs);
    theirs->bind(mine);
    connections_.push_back(mine);
    remote->connections_.push_back(theirs);
    auto accept = it->second;
    accept(theirs);
    ctx_.reactor.after(one_way, [done, mine] { done(StreamPtr(mine)); });
  });
}

void SimStreamNetwork::kill(bool fin)
{
  dead_ = true;
  fin_on_death_ = fin;
  listeners_.clear();
  for (auto& w : connections_)
    if (auto c = w.lock()) c->die(fin);
  connections_.clear();
}

} // namespace tp::sim
