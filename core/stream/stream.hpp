// A reliable, ordered byte-stream channel between two processes (TCP-like), for RPC-style transports
// (gRPC RecvTensor, GDR metadata) and for out-of-band set-up (exchanging QP endpoints and MR keys).
// Writes are delivered in order, each as one Message (framing is the channel's job, as with a
// length-prefixed TCP stream). A Message carries real bytes plus an optional simulated size, so that a
// simulated 100 MB tensor costs 100 MB of wire time without allocating it (SimGrid's payload vs data size).
// Backends: sim/sim_stream (TCP over the modelled NIC), emulator TCP sockets. Tests: tests/sim/sim_stream_test.cpp.
#pragma once

#include "core/common/result.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tp {

struct Message {
  std::vector<uint8_t> bytes;    ///< real bytes (headers, metadata, materialized payloads)
  uint64_t extra_wire_bytes = 0; ///< simulated bytes beyond `bytes` (virtual payload); real backends send zeros
  /// Simulated seconds its delivery waited for CPU: the threads of either end busy, or their work on it slower
  /// than the wire (sim/sim_stream.cpp). Set by the receiving end; 0 on real backends.
  double cpu_seconds = 0;
  /// The message stands for this many alike ones between the end named and as many alike peers, each on its own
  /// connection (sim::TrainingJob::symmetric_ranks: a simulated rank standing for every other host's): that end's
  /// threads work on each copy, the other end's once. The simulator's streams only; real backends send it once.
  uint32_t receiver_copies = 1, sender_copies = 1;
  uint64_t wire_size() const { return bytes.size() + extra_wire_bytes; }
};

class StreamConnection {
public:
  virtual ~StreamConnection() = default;
  /// Queue a message; `done` (optional) runs when the sender's stack has handed it to the wire.
  /// Fails (through `done`) on a closed connection.
  virtual void send(Message msg, std::function<void(Status)> done = {}) = 0;
  /// Handler for incoming messages. Messages that arrive earlier are kept until a handler is set.
  virtual void set_receive_handler(std::function<void(Message)> handler) = 0;
  /// Handler called once when the connection closes (OK for an orderly close, an Error otherwise).
  virtual void set_close_handler(std::function<void(Status)> handler) = 0;
  virtual void close() = 0;
  /// Name of the peer process ("node1") or address ("10.0.0.2:5000").
  virtual std::string peer_name() const = 0;
};

using StreamPtr = std::shared_ptr<StreamConnection>;

/// Creates connections for one process.
class StreamNetwork {
public:
  virtual ~StreamNetwork() = default;
  /// Accept connections on `port`; Error if the port is taken.
  virtual Status listen(uint16_t port, std::function<void(StreamPtr)> on_accept) = 0;
  /// Connect to `peer` (process name or host) on `port`; the callback gets the connection or an Error
  /// (connection refused when nobody listens).
  virtual void connect(const std::string& peer, uint16_t port, std::function<void(Result<StreamPtr>)> done) = 0;
};

} // namespace tp
