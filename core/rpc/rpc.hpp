// A small RPC layer over a byte stream (the stand-in for gRPC's unary calls): numbered calls, named methods,
// a status in every response, and a payload that may carry simulated bytes (Message::extra_wire_bytes).
// Frames are length-checked on decode: a malformed frame from a peer is an error, never an out-of-bounds read.
// Used by the gRPC and GDR transports for RecvTensor and by the verbs transports for channel set-up.
// Tests: tests/core/rpc_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "core/runtime/runtime.hpp"
#include "core/stream/stream.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tp::rpc {

/// Request or response body: real bytes plus simulated payload bytes.
struct Payload {
  std::vector<uint8_t> bytes;
  uint64_t extra_wire_bytes = 0;
  /// A response: seconds the call's request and response waited for CPU on their way (Message::cpu_seconds; 0 on
  /// real backends). Not sent: the server's side rides along in the simulation's message.
  double cpu_seconds = 0;
  /// A request: the call stands for this many alike calls from as many alike clients (symmetric ranks: a simulated
  /// rank standing for every other host's); the server's threads work on each request and each response
  /// (Message::receiver_copies, sender_copies). A handler sees the request's; the response follows it.
  uint32_t server_copies = 1;
};

using Responder = std::function<void(Result<Payload>)>;
using Handler = std::function<void(Payload request, Responder respond)>;

/// Frame layout (little endian): kind u8 (1 request, 2 response), call id u64, method length u16 + bytes,
/// status code length u16 + bytes, status text length u32 + bytes, body length u32 + body.
/// The largest body of real bytes a frame carries (its 32-bit length); a call or response with more fails with
/// ResourceExhausted instead of a wrapped length. Simulated payload bytes (extra_wire_bytes) are 64-bit.
constexpr uint64_t MAX_BODY = 0xFFFFFFFFull;
Error body_too_large(uint64_t n);
std::vector<uint8_t> encode_frame(uint8_t kind, uint64_t call_id, const std::string& method, const Error* error,
                                  const std::vector<uint8_t>& body);
struct Frame {
  uint8_t kind = 0;
  uint64_t call_id = 0;
  std::string method;
  bool has_error = false;
  std::string error_code;
  std::string error_text;
  std::vector<uint8_t> body;
};
Result<Frame> decode_frame(const uint8_t* data, size_t len);

/// Both ends of RPC on one connection: calls out, handlers in.
class RpcEndpoint : public std::enable_shared_from_this<RpcEndpoint> {
public:
  /// Handlers are shared with the server that accepted the connection.
  static std::shared_ptr<RpcEndpoint> attach(StreamPtr conn, Runtime& rt,
                                             std::shared_ptr<std::map<std::string, Handler>> handlers,
                                             std::function<void(const std::string& peer)> on_closed = {});
  /// Issue a call; `done` gets the response body or an error (peer error, closed connection, bad frame).
  void call(const std::string& method, Payload request, std::function<void(Result<Payload>)> done);
  void close();
  bool closed() const { return closed_; }

private:
  RpcEndpoint(StreamPtr conn, Runtime& rt, std::shared_ptr<std::map<std::string, Handler>> handlers);
  void on_message(Message m);
  void fail_all(const Error& e);

  StreamPtr conn_;
  Runtime& rt_;
  std::shared_ptr<std::map<std::string, Handler>> handlers_;
  std::unordered_map<uint64_t, std::function<void(Result<Payload>)>> pending_;
  uint64_t next_call_ = 1;
  bool closed_ = false;
};

/// A process's RPC server and client connections (one connection per peer, created on first use).
class RpcNode {
public:
  RpcNode(Runtime& rt, StreamNetwork& net, uint16_t port);
  /// Register a method (before start()).
  void add_method(const std::string& name, Handler h) { (*handlers_)[name] = std::move(h); }
  /// Called with the peer's name whenever a connection to or from it closes (the peer process ended or the
  /// network failed): what RDMA channels use to notice a dead peer that owes them data.
  void on_peer_closed(std::function<void(const std::string& peer)> f) { closed_handlers_->push_back(std::move(f)); }
  Status start();
  /// Call `method` on `peer` (connecting on first use; calls wait for the connection).
  void call(const std::string& peer, const std::string& method, Payload request,
            std::function<void(Result<Payload>)> done);
  void shutdown();

private:
  struct PeerState {
    std::shared_ptr<RpcEndpoint> ep;
    bool connecting = false;
    std::vector<std::function<void(Result<std::shared_ptr<RpcEndpoint>>)>> waiting;
  };
  Runtime& rt_;
  StreamNetwork& net_;
  uint16_t port_;
  std::shared_ptr<std::map<std::string, Handler>> handlers_;
  std::shared_ptr<std::vector<std::function<void(const std::string&)>>> closed_handlers_ =
      std::make_shared<std::vector<std::function<void(const std::string&)>>>();
  std::function<void(const std::string&)> closed_callback() const;
  std::map<std::string, PeerState> peers_;
  std::vector<std::shared_ptr<RpcEndpoint>> accepted_;
  /// Expires with the node: stream callbacks still queued on the runtime (an accept, a connect) find it gone.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

/// Little-endian field writer/reader for message bodies; the reader never reads past the end.
class Writer {
public:
  void u8(uint8_t v) { out_.push_back(v); }
  void u16(uint16_t v) { put(v, 2); }
  void u32(uint32_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  void f64(double v);
  void str(const std::string& s);
  void bytes(const std::vector<uint8_t>& b);
  std::vector<uint8_t> take() { return std::move(out_); }

private:
  void put(uint64_t v, int n)
  {
    for (int i = 0; i < n; ++i)
      out_.push_back(uint8_t(v >> (8 * i)));
  }
  std::vector<uint8_t> out_;
};

class Reader {
public:
  Reader(const uint8_t* data, size_t len) : p_(data), n_(len) {}
  explicit Reader(const std::vector<uint8_t>& v) : p_(v.data()), n_(v.size()) {}
  bool u8(uint8_t& v);
  bool u16(uint16_t& v);
  bool u32(uint32_t& v);
  bool u64(uint64_t& v);
  bool f64(double& v);
  bool str(std::string& s, size_t max_len = 1 << 20);
  bool bytes(std::vector<uint8_t>& b, size_t max_len = 1u << 30);
  bool done() const { return off_ == n_; }
  size_t remaining() const { return n_ - off_; }

private:
  bool get(uint64_t& v, int n);
  const uint8_t* p_;
  size_t n_;
  size_t off_ = 0;
};

} // namespace tp::rpc
