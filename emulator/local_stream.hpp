// Byte streams between emulated processes of one OS process: message queues delivered on the receiving
// process's runtime, in order, with the same contract as the simulator's streams (listen/connect by process
// name and port, connection refused, close handlers). A LocalStreamHub is the "localhost" they share.
// Tests: tests/emulator/emulation_test.cpp.
#pragma once

#include "core/runtime/runtime.hpp"
#include "core/stream/stream.hpp"

#include <map>
#include <mutex>

namespace tp::emu {

class LocalStreamHub;

class LocalStreamNetwork final : public StreamNetwork {
public:
  LocalStreamNetwork(LocalStreamHub& hub, std::string process, Runtime& rt);
  ~LocalStreamNetwork() override;
  Status listen(uint16_t port, std::function<void(StreamPtr)> on_accept) override;
  void connect(const std::string& peer, uint16_t port, std::function<void(Result<StreamPtr>)> done) override;
  const std::string& process() const { return process_; }
  Runtime& runtime() { return rt_; }

private:
  LocalStreamHub& hub_;
  std::string process_;
  Runtime& rt_;
};

class LocalStreamHub {
public:
  struct Listener {
    LocalStreamNetwork* net;
    std::function<void(StreamPtr)> on_accept;
  };
  std::mutex mu;
  std::map<std::pair<std::string, uint16_t>, Listener> listeners;
};

} // namespace tp::emu
