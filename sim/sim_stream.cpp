// TCP-like stream model. Per message and direction: sender stack (half the one-way stack latency), wire
// bytes = payload + per-segment headers through the NIC endpoints (SimGrid comm; the rate is capped by
// the connection's CPU-bound bandwidth through an extra time term), receiver stack (other half).
// Connection set-up costs one round trip (SYN/SYN-ACK) before the connect callback runs.
#include "sim/sim_stream.hpp"
#include "sim/sim_context.hpp"

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
    if (closed_) return;
    if (on_receive_) {
      auto h = on_receive_;
      net_.ctx().reactor.post([h, m = std::move(m)]() mutable { h(std::move(m)); });
    } else {
      backlog_.push_back(std::move(m));
    }
  }

  void peer_closed()
  {
    if (closed_) return;
    closed_ = true;
    if (on_close_) {
      auto h = on_close_;
      net_.ctx().reactor.post([h] { h(ok_status()); });
    }
  }

  SimStreamNetwork& net() { return net_; }

private:
  double one_way_latency(const SimStreamConnection& to) const
  {
    const Platform& pf = *net_.ctx().platform;
    const auto& tcp = pf.machine(net_.machine()).tcp;
    return tcp.stack_latency + pf.wire_latency(net_.machine(), 0, to.net_.machine(), 0);
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
      const double sent = std::max(now, t0 + cpu_time);
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
    auto accept = it->second;
    accept(theirs);
    ctx_.reactor.after(one_way, [done, mine] { done(StreamPtr(mine)); });
  });
}

} // namespace tp::sim
