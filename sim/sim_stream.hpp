// Byte-stream channels between simulated processes: a TCP model over the machines' first NIC (RoCE NICs
// carry TCP/Ethernet, IB NICs carry IPoIB). Each message pays the stack latency at both ends, its wire
// bytes (segment headers included) over the NIC links, bounded by the connection's CPU-bound throughput.
// Messages of one direction of a connection are delivered in order. Tests: tests/sim/sim_stream_test.cpp.
#pragma once

#include "core/stream/stream.hpp"

#include <map>
#include <memory>
#include <vector>

namespace tp::sim {

struct SimContext;
class SimStreamConnection;

class SimStreamNetwork final : public StreamNetwork {
public:
  SimStreamNetwork(SimContext& ctx, size_t machine, std::string process_name);
  Status listen(uint16_t port, std::function<void(StreamPtr)> on_accept) override;
  void connect(const std::string& peer, uint16_t port, std::function<void(Result<StreamPtr>)> done) override;

  /// Fault injection: the process died. `fin`: its connections are closed (the peers see EOF) and connects are
  /// refused; otherwise (power loss) nothing is sent: peers' data goes unacknowledged and connects time out.
  void kill(bool fin);
  bool dead() const { return dead_; }

  size_t machine() const { return machine_; }
  const std::string& process_name() const { return name_; }
  SimContext& ctx() { return ctx_; }

private:
  SimContext& ctx_;
  size_t machine_;
  std::string name_;
  std::map<uint16_t, std::function<void(StreamPtr)>> listeners_;
  std::vector<std::weak_ptr<SimStreamConnection>> connections_;
  bool dead_ = false;
  bool fin_on_death_ = true;
  friend class SimStreamConnection;
};

} // namespace tp::sim
