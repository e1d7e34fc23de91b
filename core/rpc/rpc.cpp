// RPC framing, endpoints and per-peer connections.
#include "core/rpc/rpc.hpp"

#include <cstring>

namespace tp::rpc {

void Writer::f64(double v)
{
  uint64_t u;
  std::memcpy(&u, &v, 8);
  u64(u);
}

void Writer::str(const std::string& s)
{
  u32(uint32_t(s.size()));
  out_.insert(out_.end(), s.begin(), s.end());
}

void Writer::bytes(const std::vector<uint8_t>& b)
{
  u32(uint32_t(b.size()));
  out_.insert(out_.end(), b.begin(), b.end());
}

bool Reader::get(uint64_t& v, int n)
{
  if (n_ - off_ < size_t(n)) return false;
  v = 0;
  for (int i = 0; i < n; ++i)
    v |= uint64_t(p_[off_ + size_t(i)]) << (8 * i);
  off_ += size_t(n);
  return true;
}

bool Reader::u8(uint8_t& v)
{
  uint64_t x;
  if (!get(x, 1)) return false;
  v = uint8_t(x);
  return true;
}
bool Reader::u16(uint16_t& v)
{
  uint64_t x;
  if (!get(x, 2)) return false;
  v = uint16_t(x);
  return true;
}
bool Reader::u32(uint32_t& v)
{
  uint64_t x;
  if (!get(x, 4)) return false;
  v = uint32_t(x);
  return true;
}
bool Reader::u64(uint64_t& v)
{
  return get(v, 8);
}
bool Reader::f64(double& v)
{
  uint64_t u;
  if (!get(u, 8)) return false;
  std::memcpy(&v, &u, 8);
  return true;
}

bool Reader::str(std::string& s, size_t max_len)
{
  uint32_t n;
  if (!u32(n) || n > max_len || n > n_ - off_) return false;
  s.assign(reinterpret_cast<const char*>(p_ + off_), n);
  off_ += n;
  return true;
}

bool Reader::bytes(std::vector<uint8_t>& b, size_t max_len)
{
  uint32_t n;
  if (!u32(n) || n > max_len || n > n_ - off_) return false;
  b.assign(p_ + off_, p_ + off_ + n);
  off_ += n;
  return true;
}

Error body_too_large(uint64_t n)
{
  return Error::status("ResourceExhausted", "an RPC body of " + std::to_string(n) +
                                                " real bytes does not fit the frame's 32-bit length (at most " +
                                                std::to_string(MAX_BODY) + ")");
}

std::vector<uint8_t> encode_frame(uint8_t kind, uint64_t call_id, const std::string& method, const Error* error,
                                  const std::vector<uint8_t>& body)
{
  Writer w;
  w.u8(kind);
  w.u64(call_id);
  w.str(method);
  w.u8(error ? 1 : 0);
  if (error) {
    w.str(error->code);
    w.str(error->text()); // the code travels in its own field
  }
  w.bytes(body);
  return w.take();
}

Result<Frame> decode_frame(const uint8_t* data, size_t len)
{
  Reader r(data, len);
  Frame f;
  uint8_t has_err = 0;
  auto bad = [](const char* what) {
    return Error::at("", "RPC frame", std::string("a well-formed ") + what, "a truncated or malformed frame");
  };
  if (!r.u8(f.kind) || (f.kind != 1 && f.kind != 2)) return bad("kind");
  if (!r.u64(f.call_id) || !r.str(f.method, 256)) return bad("header");
  if (!r.u8(has_err) || has_err > 1) return bad("status flag");
  f.has_error = has_err == 1;
  if (f.has_error && (!r.str(f.error_code, 256) || !r.str(f.error_text, 1 << 16))) return bad("status");
  if (!r.bytes(f.body, MAX_BODY) || !r.done()) return bad("body");
  return f;
}

RpcEndpoint::RpcEndpoint(StreamPtr conn, Runtime& rt, std::shared_ptr<std::map<std::string, Handler>> handlers)
    : conn_(std::move(conn)), rt_(rt), handlers_(std::move(handlers))
{
}

std::shared_ptr<RpcEndpoint> RpcEndpoint::attach(StreamPtr conn, Runtime& rt,
                                                 std::shared_ptr<std::map<std::string, Handler>> handlers,
                                                 std::function<void(const std::string& peer)> on_closed)
{
  std::shared_ptr<RpcEndpoint> ep(new RpcEndpoint(conn, rt, std::move(handlers)));
  std::weak_ptr<RpcEndpoint> weak = ep;
  conn->set_receive_handler([weak](Message m) {
    if (auto e = weak.lock()) e->on_message(std::move(m));
  });
  const std::string peer = conn->peer_name();
  conn->set_close_handler([weak, peer, on_closed](Status st) {
    if (auto e = weak.lock()) {
      e->closed_ = true;
      e->fail_all(st.ok() ? Error::status("Unavailable", "connection closed by the peer") : st.error());
    }
    if (on_closed) on_closed(peer);
  });
  return ep;
}

void RpcEndpoint::call(const std::string& method, Payload request, std::function<void(Result<Payload>)> done)
{
  if (closed_) {
    rt_.post([done] { done(Error::status("Unavailable", "RPC connection closed")); });
    return;
  }
  if (request.bytes.size() > MAX_BODY) {
    rt_.post([done, n = request.bytes.size()] { done(body_too_large(n)); });
    return;
  }
  const uint64_t id = next_call_++;
  pending_[id] = std::move(done);
  Message m{encode_frame(1, id, method, nullptr, request.bytes), request.extra_wire_bytes};
  m.receiver_copies = request.server_copies;
  std::weak_ptr<RpcEndpoint> weak = weak_from_this();
  conn_->send(std::move(m), [weak, id](Status st) {
    if (st.ok()) return;
    if (auto e = weak.lock()) {
      auto it = e->pending_.find(id);
      if (it != e->pending_.end()) {
        auto d = std::move(it->second);
        e->pending_.erase(it);
        d(st.error());
      }
    }
  });
}

void RpcEndpoint::on_message(Message m)
{
  auto f = decode_frame(m.bytes.data(), m.bytes.size());
  if (!f.ok()) {
    fail_all(f.error());
    return;
  }
  if (f->kind == 2) {
    auto it = pending_.find(f->call_id);
    if (it == pending_.end()) return; // a response nobody waits for (cancelled call): ignore
    auto done = std::move(it->second);
    pending_.erase(it);
    if (f->has_error) return done(Error::status(f->error_code, f->error_text));
    done(Payload{std::move(f->body), m.extra_wire_bytes, m.cpu_seconds});
    return;
  }
  auto h = handlers_ ? handlers_->find(f->method) : decltype(handlers_->end()){};
  const uint64_t id = f->call_id;
  const std::string method = f->method;
  std::weak_ptr<RpcEndpoint> weak = weak_from_this();
  const double request_cpu = m.cpu_seconds;
  const uint32_t copies = m.receiver_copies;
  Responder respond = [weak, id, method, request_cpu, copies](Result<Payload> r) {
    auto e = weak.lock();
    if (!e || e->closed_) return;
    if (!r.ok()) {
      e->conn_->send(Message{encode_frame(2, id, method, &r.error(), {}), 0});
      return;
    }
    if (r.value().bytes.size() > MAX_BODY) {
      const Error big = body_too_large(r.value().bytes.size());
      e->conn_->send(Message{encode_frame(2, id, method, &big, {}), 0});
      return;
    }
    // The request's CPU wait rides along, so that the caller sees the whole call's.
    Message out{encode_frame(2, id, method, nullptr, r.value().bytes), r.value().extra_wire_bytes,
                request_cpu + r.value().cpu_seconds};
    out.sender_copies = copies;
    e->conn_->send(std::move(out));
  };
  if (!handlers_ || h == handlers_->end()) {
    respond(Error::status("Unimplemented", "no RPC method \"" + method + "\""));
    return;
  }
  Payload request{std::move(f->body), m.extra_wire_bytes, 0};
  request.server_copies = copies;
  h->second(std::move(request), std::move(respond));
}

void RpcEndpoint::fail_all(const Error& e)
{
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [id, done] : pending)
    done(e);
}

void RpcEndpoint::close()
{
  if (closed_) return;
  closed_ = true;
  conn_->close();
  fail_all(Error::status("Cancelled", "RPC endpoint closed"));
}

RpcNode::RpcNode(Runtime& rt, StreamNetwork& net, uint16_t port)
    : rt_(rt), net_(net), port_(port), handlers_(std::make_shared<std::map<std::string, Handler>>())
{
}

std::function<void(const std::string&)> RpcNode::closed_callback() const
{
  auto handlers = closed_handlers_;
  return [handlers](const std::string& peer) {
    for (const auto& h : *handlers)
      h(peer);
  };
}

Status RpcNode::start()
{
  std::weak_ptr<bool> alive = alive_;
  return net_.listen(port_, [this, alive](StreamPtr conn) {
    if (!alive.lock()) return conn->close(); // accepted after this node was destroyed
    accepted_.push_back(RpcEndpoint::attach(conn, rt_, handlers_, closed_callback()));
  });
}

void RpcNode::call(const std::string& peer, const std::string& method, Payload request,
                   std::function<void(Result<Payload>)> done)
{
  PeerState& ps = peers_[peer];
  if (ps.ep && !ps.ep->closed()) {
    ps.ep->call(method, std::move(request), std::move(done));
    return;
  }
  auto req = std::make_shared<Payload>(std::move(request));
  ps.waiting.push_back([method, req, done](Result<std::shared_ptr<RpcEndpoint>> ep) {
    if (!ep.ok()) return done(ep.error());
    ep.value()->call(method, std::move(*req), done);
  });
  if (ps.connecting) return;
  ps.connecting = true;
  std::weak_ptr<bool> alive = alive_;
  net_.connect(peer, port_, [this, peer, alive](Result<StreamPtr> conn) {
    if (!alive.lock()) {
      if (conn.ok()) conn.value()->close();
      return;
    }
    PeerState& st = peers_[peer];
    st.connecting = false;
    Result<std::shared_ptr<RpcEndpoint>> ep =
        conn.ok()
            ? Result<std::shared_ptr<RpcEndpoint>>(RpcEndpoint::attach(conn.value(), rt_, handlers_, closed_callback()))
            : Result<std::shared_ptr<RpcEndpoint>>(Error::status("Unavailable", conn.error().message()));
    if (ep.ok()) st.ep = ep.value();
    auto waiting = std::move(st.waiting);
    st.waiting.clear();
    for (auto& w : waiting)
      w(ep);
  });
}

void RpcNode::shutdown()
{
  for (auto& [name, ps] : peers_)
    if (ps.ep) ps.ep->close();
  for (auto& ep : accepted_)
    ep->close();
}

} // namespace tp::rpc
