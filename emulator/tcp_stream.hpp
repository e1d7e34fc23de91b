// Byte streams between emulated processes that are separate OS processes: real TCP connections on 127.0.0.1. A
// (process, port) pair of the engine's StreamNetwork is found through a directory both processes know: listen()
// binds an ephemeral TCP port and writes it to <dir>/<process>.<port>; connect() reads it (no file: connection
// refused). Each message is a frame (u64 length of the real bytes, u64 simulated extra bytes, the bytes; the extra
// bytes travel as zeros, as the stream contract says). One reader thread per connection delivers messages on the
// owner's runtime, in order; a peer that dies (EOF, reset) closes the connection with an error. Tests:
// tests/emulator/process_transfer_test.cpp (tensors between OS processes: the RPC transports over these streams).
#pragma once

#include "core/runtime/runtime.hpp"
#include "core/stream/stream.hpp"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tp::emu {

class TcpStreamNetwork final : public StreamNetwork {
public:
  TcpStreamNetwork(std::string dir, std::string process, Runtime& rt);
  ~TcpStreamNetwork() override; ///< stops listening and closes every connection it made or accepted
  Status listen(uint16_t port, std::function<void(StreamPtr)> on_accept) override;
  void connect(const std::string& peer, uint16_t port, std::function<void(Result<StreamPtr>)> done) override;

  struct Shared; ///< what connections and acceptor threads share with the network

private:
  std::string dir_, process_;
  Runtime& rt_;
  std::shared_ptr<Shared> shared_;
};

} // namespace tp::emu
