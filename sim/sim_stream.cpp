// TCP-like stream model. Per message and direction: the sender's CPU work on one of its process's gRPC threads
// (the client or server thread that carries the peer: sim/cpu_pool.hpp), wire bytes = payload + per-segment
// headers through the NIC endpoints (a SimGrid comm) from when a thread takes it, the one-way stack latency, and the
// receiver's CPU work on its own threads from when the first segment arrives. The message is handed to the wire
// when the sender's work and the wire are done, and delivered when it has arrived and the receiver's work is done,
// in order. CPU work per message and per byte: models/tcp_model.hpp. Connection set-up costs one round trip
// (SYN/SYN-ACK) before the connect callback runs.
#include "sim/sim_stream.hpp"
#include "sim/cpu_pool.hpp"
#include "sim/sim_context.hpp"

#include <cmath>
#include <deque>

namespace tp::sim {

class SimStreamConnection;

struct Queued {
  Message msg;
  std::function<void(Status)> done;
  double at = 0; ///< when send() queued it
};

struct StreamHalf {
  // One direction of a connection: sending queue and in-order delivery.
  std::deque<Queued> queue;
  bool busy = false;
};

/// A message between leaving the sending queue and its delivery.
struct InFlight {
  Message msg;
  double size = 0;
  double enqueued_at = 0; ///< send() queued it
  double started_at = 0;  ///< a sender thread took it: bytes go out
  double wire_seconds = 0;
  double latency = 0;        ///< stack and wire latency after the last byte left
  double fault_delay = 0;    ///< retransmissions (fault injection)
  bool burst_first = false;  ///< the first message of a burst (incast ports: it carries the burst's charge)
  uint64_t incast_burst = 0; ///< the incast ports' burst it belongs to (0: none)
  bool arrived = false;      ///< the last byte is in
  bool received = false;     ///< the receiver's thread has done its work on it
  bool lost = false;         ///< the connection broke before it left: never delivered
};

/// The thread that works on copy `c` (1, 2, ...) of a message standing for others (Message::sender_copies,
/// receiver_copies): that of a connection of its own, the next ones after this connection's `thread` (-1, any: any).
int copy_thread(int thread, uint32_t c)
{
  return thread < 0 ? -1 : thread + int(c);
}

class SimStreamConnection final : public StreamConnection, public std::enable_shared_from_this<SimStreamConnection> {
public:
  /// `client`: this end opened the connection (its work runs on the process's client threads), else it was accepted
  /// (server threads); either way on the one thread of that pool that carries `peer` (gRPC core handles a
  /// connection's bytes on one thread at a time).
  SimStreamConnection(SimStreamNetwork& net, std::string peer, bool client)
      : net_(net), peer_(std::move(peer)), client_(client), thread_(net.thread_of(peer_, client))
  {
  }

  void bind(const std::shared_ptr<SimStreamConnection>& other) { other_ = other; }

  void send(Message msg, std::function<void(Status)> done) override
  {
    if (closed_ || other_.expired()) {
      if (done) net_.ctx().reactor.post([done] { done(Error::at("", "stream send", "an open connection", "closed")); });
      return;
    }
    out_.queue.push_back({std::move(msg), std::move(done), net_.ctx().reactor.now()});
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
    // The FIN follows the data in flight: it reaches the peer once every message sent before it was delivered.
    if (auto o = other_.lock()) {
      o->fin_delay_ = one_way_latency(*o);
      o->deliver_fin_when_drained();
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
    for (auto& q : out_.queue)
      if (q.done) ctx.reactor.post([done = q.done, e] { done(e); });
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

  /// The receiving end: the peer's FIN (closed with fin_delay_ >= 0) arrives one way after the last message it sent
  /// before closing has been delivered.
  void deliver_fin_when_drained()
  {
    if (fin_delay_ < 0 || !incoming_.empty()) return;
    const double when = std::max(net_.ctx().reactor.now(), last_delivery_) + fin_delay_;
    fin_delay_ = -1;
    std::weak_ptr<SimStreamConnection> w = shared_from_this();
    net_.ctx().reactor.at(when, [w] {
      if (auto c = w.lock()) c->peer_closed();
    });
  }

  void pump()
  {
    if (out_.busy || out_.queue.empty()) return;
    auto other = other_.lock();
    if (!other) return;
    out_.busy = true;
    // Named variables, not a structured binding: clang 14 cannot capture a binding in a lambda.
    auto f = std::make_shared<InFlight>();
    f->msg = std::move(out_.queue.front().msg);
    std::function<void(Status)> done = std::move(out_.queue.front().done);
    f->enqueued_at = out_.queue.front().at;
    out_.queue.pop_front();
    SimContext& ctx = net_.ctx();
    f->size = double(f->msg.wire_size());
    if (ctx.incast && net_.machine() != other->net_.machine()) { // a connection within a machine crosses no switch
      // A burst starts when the connection leaves an idle time of at least the minimum RTO (slow start restarts).
      // Its size for the model is its first train: the messages that follow each other with the connection never
      // idle (what TCP sends at once); a push trickled over the backward pass is many short trains.
      const double now = ctx.reactor.now();
      const bool new_train = idle_;
      if (burst_ == 0 || now - last_sent_ >= ctx.incast->idle_restart()) {
        if (first_train_bytes_ > 0) previous_first_train_ = first_train_bytes_;
        burst_ = ctx.incast->begin_burst(net_.machine(), other->net_.machine(), now);
        first_train_bytes_ = 0;
        in_first_train_ = true;
        f->burst_first = true;
      } else if (new_train) {
        in_first_train_ = false;
      }
      if (in_first_train_) first_train_bytes_ += f->size;
      ctx.incast->on_wire(burst_, +1);
      f->incast_burst = burst_;
    }
    idle_ = false;
    other->incoming_.push_back(f);
    const auto& tcp = ctx.platform->machine(net_.machine()).tcp;
    auto self = shared_from_this();
    auto left = std::make_shared<int>(2); // the sender's work and the wire
    auto one_done = [self, other, f, left, done] {
      if (--*left == 0) self->handed_to_wire(other, f, done);
    };
    // A message standing for others from this end (Message::sender_copies): their work first.
    for (uint32_t c = 1; c < f->msg.sender_copies; ++c)
      net_.pool(client_).run(tcp.message_cpu(f->size), copy_thread(thread_, c), {}, {});
    net_.pool(client_).run(
        tcp.message_cpu(f->size), thread_, [self, other, f, one_done] { self->start_wire(other, f, one_done); },
        one_done);
  }

  /// A sender thread took the message: its bytes go out, and the receiver's thread starts on it once the first
  /// segment is in (after the per-message work, one segment's bytes and one way).
  void start_wire(const std::shared_ptr<SimStreamConnection>& other, const std::shared_ptr<InFlight>& f,
                  std::function<void()> one_done)
  {
    SimContext& ctx = net_.ctx();
    const Platform& pf = *ctx.platform;
    const size_t ma = net_.machine(), mb = other->net_.machine();
    const auto& tcp = pf.machine(ma).tcp;
    f->started_at = ctx.reactor.now();
    // Port links are rated in RDMA payload goodput (line rate x MTU / (MTU + headers)); TCP's own framing is in
    // tcp.wire_bytes, so express the line bytes in the links' units.
    const double wire_bytes = tcp.wire_bytes(f->size) * pf.nic(ma, 0).nic.payload_efficiency();
    auto* from = pf.nic_endpoint(ma, 0, Location::host(pf.nic(ma, 0).socket), false);
    auto* to = pf.nic_endpoint(mb, 0, Location::host(pf.nic(mb, 0).socket), true);
    ctx.start_comm(from, to, wire_bytes, [&ctx, f, one_done] {
      f->wire_seconds = ctx.reactor.now() - f->started_at;
      one_done();
    });
    const double first =
        tcp.rpc_message_cpu + std::min(f->size, tcp.mss) * tcp.cpu_per_byte() + one_way_latency(*other);
    std::weak_ptr<SimStreamConnection> receiver = other;
    ctx.reactor.after(first, [receiver, f] {
      auto received = [receiver, f] {
        f->received = true;
        if (auto r = receiver.lock()) r->flush();
      };
      auto o = receiver.lock();
      if (!o) return received();
      const auto& tcp_b = o->net_.ctx().platform->machine(o->net_.machine()).tcp;
      // Standing for others at this end (Message::receiver_copies): each copy's work; the message is in once all of
      // them are done.
      const uint32_t copies = std::max<uint32_t>(1, f->msg.receiver_copies);
      auto left = std::make_shared<uint32_t>(copies);
      auto one = [left, received] {
        if (--*left == 0) received();
      };
      for (uint32_t c = 1; c < copies; ++c)
        o->net_.pool(o->client_).run(tcp_b.message_cpu(f->size), copy_thread(o->thread_, c), {}, one);
      o->net_.pool(o->client_).run(tcp_b.message_cpu(f->size), o->thread_, {}, one);
    });
  }

  /// The sender's work and the wire are done: the message has left (after any retransmissions); it arrives one
  /// way later.
  void handed_to_wire(const std::shared_ptr<SimStreamConnection>& other, const std::shared_ptr<InFlight>& f,
                      std::function<void(Status)> done)
  {
    SimContext& c = net_.ctx();
    double sent = c.reactor.now();
    if (c.incast && f->incast_burst != 0) {
      if (f->burst_first) {
        const Platform& pf = *c.platform;
        const size_t mb = other->net_.machine();
        const double bytes = previous_first_train_ > 0 ? previous_first_train_ : f->size;
        const double delay = pf.wire_latency(net_.machine(), 0, mb, 0) / 2; // two links: the sender's, the port's
        // The receiver's port at its line rate: the model adds TCP/IP headers and framing itself.
        const double extra = c.incast->charge(f->incast_burst, bytes, pf.nic(mb, 0).nic.line_rate, delay, f->started_at,
                                              sent, net_.process_name(), other->net_.process_name());
        sent += extra;
        f->fault_delay += extra;
      }
    }
    if (FaultInjector* fi = c.faults.get()) {
      const FaultCost fc = fault_cost(*fi, *other, f->started_at, sent, f->size);
      fi->stats().tcp_retransmissions += fc.retransmissions;
      fi->note_retry(sent, sent + fc.delay, net_.process_name(), other->net_.process_name());
      sent += fc.delay;
      f->fault_delay += fc.delay;
      if (fc.broken) {
        const std::string why = "connection to " + peer_ + " timed out (TCP gave up after " +
                                std::to_string(fc.retransmissions) + " retransmissions)";
        auto self = shared_from_this();
        std::weak_ptr<SimStreamConnection> receiver = other;
        c.reactor.at(sent, [self, receiver, f, done, why] {
          if (done) done(Error::status("Unavailable", why));
          self->out_.busy = false;
          self->broken(why);
          // It never arrives; the receiver's queue must not wait for it.
          f->lost = f->arrived = f->received = true;
          if (auto r = receiver.lock()) r->flush();
        });
        return;
      }
    }
    if (c.incast && f->incast_burst != 0) { // the message has left, resends included
      c.incast->on_wire(f->incast_burst, -1);
      c.incast->touch(f->incast_burst, sent);
      last_sent_ = sent;
    }
    auto self = shared_from_this();
    c.reactor.at(sent, [self, other, f, done] {
      SimContext& c2 = self->net_.ctx();
      self->out_.busy = false;
      self->idle_ = self->out_.queue.empty();
      if (done) done(ok_status());
      f->latency = self->one_way_latency(*other);
      std::weak_ptr<SimStreamConnection> w = other;
      c2.reactor.after(f->latency, [w, f] {
        f->arrived = true;
        if (auto r = w.lock()) r->flush();
      });
      self->pump();
    });
  }

  /// The receiving end: deliver, in sending order, every message that has arrived and been worked on.
  void flush()
  {
    SimContext& ctx = net_.ctx();
    while (!incoming_.empty() && incoming_.front()->arrived && incoming_.front()->received) {
      std::shared_ptr<InFlight> f = incoming_.front();
      incoming_.pop_front();
      const double now = ctx.reactor.now();
      // What the CPU added: the delivery beyond when it would have been delivered with the wire alone (behind the
      // messages before it on the wire, then its own wire time and latency) and any retransmissions.
      const double wire_end = std::max(f->enqueued_at, wire_clock_) + f->wire_seconds;
      wire_clock_ = wire_end + f->fault_delay; // its resends held the wire too: not the next message's CPU
      f->msg.cpu_seconds += std::max(0.0, now - wire_end - f->latency - f->fault_delay);
      if (f->lost) continue;
      last_delivery_ = now;
      deliver(std::move(f->msg));
    }
    deliver_fin_when_drained();
  }

  SimStreamNetwork& net_;
  std::string peer_;
  std::weak_ptr<SimStreamConnection> other_;
  bool client_ = false;
  int thread_ = -1;
  StreamHalf out_;
  // The receiving side of the other direction: messages from the peer not yet delivered, in sending order.
  std::deque<std::shared_ptr<InFlight>> incoming_;
  double wire_clock_ = 0;    ///< when the peer's wire would be free had the CPU never held a message up
  double last_delivery_ = 0; ///< the last message from the peer was delivered
  double fin_delay_ = -1;    ///< the peer closed: its FIN arrives this long after the last delivery (-1: not closed)
  std::function<void(Message)> on_receive_;
  std::function<void(Status)> on_close_;
  std::deque<Message> backlog_;
  bool closed_ = false;
  // Incast ports (SimContext::incast): this direction's current burst, the bytes of its first train and of the previous
  // burst's, and when its last message was handed to the wire.
  uint64_t burst_ = 0;
  double first_train_bytes_ = 0, previous_first_train_ = 0, last_sent_ = 0;
  bool in_first_train_ = false;
  bool idle_ = true; ///< nothing queued or on the wire in this direction
};

SimStreamNetwork::SimStreamNetwork(SimContext& ctx, size_t machine, std::string process_name)
    : ctx_(ctx), machine_(machine), name_(std::move(process_name))
{
}

SimStreamNetwork::~SimStreamNetwork() = default;

CpuPool& SimStreamNetwork::pool(bool client)
{
  auto& p = client ? client_pool_ : server_pool_;
  if (!p) {
    const Platform& pf = *ctx_.platform;
    const auto& t = ctx_.options.rpc_threads;
    p = std::make_unique<CpuPool>(ctx_, pf.cpu_host(machine_, pf.nic(machine_, 0).socket),
                                  client ? "grpc client" : "grpc server", client ? t.client_threads : t.server_threads);
    if (recording_) p->record(true);
  }
  return *p;
}

int SimStreamNetwork::thread_of(const std::string& peer, bool client)
{
  auto& m = client ? client_thread_ : server_thread_;
  auto it = m.find(peer);
  if (it == m.end()) it = m.emplace(peer, int(m.size())).first;
  return it->second;
}

std::vector<const CpuPool*> SimStreamNetwork::pools() const
{
  std::vector<const CpuPool*> out;
  for (const auto* p : {server_pool_.get(), client_pool_.get()})
    if (p) out.push_back(p);
  return out;
}

void SimStreamNetwork::record_cpu(bool on)
{
  for (auto* p : {server_pool_.get(), client_pool_.get()})
    if (p) p->record(on);
  recording_ = on;
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
    auto mine = std::make_shared<SimStreamConnection>(*this, peer, true);
    auto theirs = std::make_shared<SimStreamConnection>(*remote, name_, false);
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
