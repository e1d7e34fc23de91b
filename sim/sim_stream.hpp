// Byte-stream channels between simulated processes: a TCP model over the machines' first NIC (RoCE NICs
// carry TCP/Ethernet, IB NICs carry IPoIB). Each message pays the stack latency at both ends, its wire
// bytes (segment headers included) over the NIC links, and the CPU work of both ends on the processes' gRPC threads
// (a server pool for accepted connections, a client pool for opened ones, a peer's connections on one thread of the
// pool; sim/cpu_pool.hpp).
// Messages of one direction of a connection are delivered in order. Tests: tests/sim/sim_stream_test.cpp.
#pragma once

#include "core/stream/stream.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tp::sim {

struct SimContext;
class SimStreamConnection;
class CpuPool;

class SimStreamNetwork final : public StreamNetwork {
public:
  SimStreamNetwork(SimContext& ctx, size_t machine, std::string process_name);
  ~SimStreamNetwork() override;
  Status listen(uint16_t port, std::function<void(StreamPtr)> on_accept) override;
  void connect(const std::string& peer, uint16_t port, std::function<void(Result<StreamPtr>)> done) override;

  /// Fault injection: the process died. `fin`: its connections are closed (the peers see EOF) and connects are
  /// refused; otherwise (power loss) nothing is sent: peers' data goes unacknowledged and connects time out.
  void kill(bool fin);
  bool dead() const { return dead_; }

  size_t machine() const { return machine_; }
  const std::string& process_name() const { return name_; }
  SimContext& ctx() { return ctx_; }

  /// The process's gRPC threads (SimOptions::rpc_threads), on the CPU socket of its machine's first NIC: the client
  /// threads (connections it opened) or the server threads (connections it accepted). Made on first use.
  CpuPool& pool(bool client);
  /// The thread of the client (or server) pool that carries `peer`'s connections: peers take threads round-robin in
  /// the order first connected, as TensorFlow's worker cache assigns them (and as gRPC core's pollers keep a
  /// connection's bytes on one thread at a time).
  int thread_of(const std::string& peer, bool client);
  /// The pools made so far (server first).
  std::vector<const CpuPool*> pools() const;
  /// Record the pools' busy threads over time (CpuPool::record), for a trace.
  void record_cpu(bool on);

private:
  SimContext& ctx_;
  size_t machine_;
  std::string name_;
  std::map<uint16_t, std::function<void(StreamPtr)>> listeners_;
  std::vector<std::weak_ptr<SimStreamConnection>> connections_;
  bool dead_ = false;
  bool fin_on_death_ = true;
  std::unique_ptr<CpuPool> server_pool_, client_pool_;
  std::map<std::string, int> client_thread_, server_thread_;
  bool recording_ = false;
  friend class SimStreamConnection;
};

} // namespace tp::sim
