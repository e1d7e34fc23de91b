// The collectives engine of one rank: what baidu-allreduce / TF mpi_collectives, Horovod and MaTEx put between the
// training graph and the ring (docs/protocols.md, collectives). Ops enqueue requests; a background loop
// ticks (1 ms in TF contrib, 5 ms in Baidu's original) and negotiates with rank 0, the coordinator: every rank
// sends the names it has ready plus DONE, rank 0 answers with the names every rank has requested, in the
// order they became ready everywhere (or an ERROR for mismatched sizes), and all ranks then run those
// collectives one after the other. Options: Horovod's fusion buffer (ready tensors packed up to a threshold,
// one allreduce, copies in and out) and response cache (cached requests travel as bits); or no coordinator
// at all (MaTEx: one blocking allreduce per gradient in graph order). Negotiation goes over the task's RPC
// stream (real bytes), tensors over its rendezvous and transport. Tests: tests/sim/collectives_test.cpp.
#pragma once

#include "core/collectives/channel.hpp"
#include "core/runtime/work.hpp"
#include "core/training/executor.hpp"

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tp {
class StreamNetwork;
}
namespace tp::rpc {
class RpcNode;
}

namespace tp::collectives {

/// Who moves a ring allreduce once the engine has decided to run it: by default the ring through the channel
/// (every segment a rendezvous transfer); a backend may time the whole ring some other way (the simulator's
/// analytical fabric for collectives too large to simulate message by message).
class RingRunner {
public:
  virtual ~RingRunner() = default;
  virtual void allreduce(Channel& ch, int64_t step, const std::string& name, Tensor t,
                         std::function<void(Result<Tensor>)> done) = 0;
};

struct EngineOptions {
  bool coordinator = true;       ///< false: MaTEx, allreduces run in request order without negotiation
  double tick_seconds = 1e-3;    ///< background loop period (TF contrib 1 ms; Baidu's original 5 ms)
  uint64_t fusion_threshold = 0; ///< Horovod tensor fusion: bytes per fused allreduce (0: off)
  bool response_cache = false;   ///< Horovod response cache: requests seen before travel as bits
  /// Copies in and out of a GPU fusion buffer: 0, one copy (cudaMemcpyAsync) per tensor, one after the other on the
  /// stream; K > 0, Horovod's batched D2D copy kernel, one launch per K tensors (the rest ride on it).
  uint32_t batched_copies = 0;
  uint16_t rpc_port = 2300;    ///< the coordinator's RPC port
  uint32_t request_bytes = 64; ///< serialized size of one request (name, type, dtype, shape)
  /// Symmetric ranks (sim::TrainingJob::symmetric_ranks): ranks from this one on stand for `mirrored_copies` ranks
  /// each (one per host they stand for): the coordinator's threads work on each one's requests and responses that
  /// many times (rpc::Payload::server_copies). 0: none.
  int first_mirrored_rank = 0;
  uint32_t mirrored_copies = 1;
};

struct EngineStats {
  uint64_t rounds = 0;        ///< negotiation rounds this rank took part in
  uint64_t collectives = 0;   ///< ring allreduces run (a fused batch counts once)
  uint64_t fused_tensors = 0; ///< tensors that went through the fusion buffer
  uint64_t cache_hits = 0;
};

class CollectiveEngine : public training::CollectiveHook {
public:
  /// `processes[r]`: the stream name of rank r's process (where its coordinator RPC listens).
  CollectiveEngine(transports::TaskRuntime& task, StreamNetwork& streams, RankTable ranks,
                   std::shared_ptr<const std::vector<std::string>> processes, int rank, EngineOptions options = {});
  CollectiveEngine(transports::TaskRuntime& task, StreamNetwork& streams, std::vector<RankInfo> ranks,
                   std::vector<std::string> processes, int rank, EngineOptions options = {});
  ~CollectiveEngine() override;
  Status start();
  /// Begin a step in which this rank will request `expected` collectives; the loop ticks until every rank has
  /// run all of its own and rank 0 says SHUTDOWN (the simulation then falls idle).
  void begin_step(int64_t step, size_t expected);
  /// Without a coordinator: run the collectives in this order (the graph's), whatever order the requests come in
  /// (every rank must call MPI collectives in the same order). Empty: request order.
  void set_order(std::vector<std::string> names) { order_ = std::move(names); }
  void allreduce(int64_t step, const std::string& name, Tensor tensor,
                 std::function<void(Result<Tensor>)> done) override;
  const EngineStats& stats() const { return stats_; }
  /// No negotiation in progress: the step's final (shutdown) round is over, the next step may begin. A driver
  /// that is not a discrete-event simulation (the emulator) waits for this between steps.
  bool idle() const { return !active_; }
  /// Use `runner` (not owned; must outlive the engine) instead of the ring through the channel.
  void set_ring_runner(RingRunner* runner) { runner_ = runner; }
  int rank() const { return channel_.rank(); }

private:
  struct Request {
    std::string name;
    Tensor tensor;
    std::function<void(Result<Tensor>)> done;
  };
  struct Response {
    std::string name;
    bool error = false;
    std::string message;
  };
  void tick();
  void schedule_tick();
  void negotiate(uint64_t round, std::vector<std::string> names, std::vector<uint64_t> sizes, bool idle);
  void on_round_complete(uint64_t round);
  void perform(std::vector<Response> list, std::function<void()> then);
  void perform_one(std::vector<Response> list, size_t i, std::function<void()> then);
  struct Fusion {
    std::vector<std::string> names;
    std::vector<int64_t> offset;
    Tensor fused;
    std::string tag;
    std::function<void()> then;
    size_t copies = 0;                   ///< copies issued so far in the current direction (batches count these)
    std::vector<Result<Tensor>> results; ///< the outputs, handed on together once every copy out is done
  };
  void run_fused(std::vector<std::string> names, std::function<void()> then);
  void fuse_copy_in(std::shared_ptr<Fusion> f, size_t k);
  void fuse_copy_out(std::shared_ptr<Fusion> f, Tensor fused, size_t k);
  /// A copy of `bytes` in or out of the fusion buffer, the f.copies-th of its direction: with batched copies (source
  /// and destination on one GPU) only the first of each batch pays a kernel launch.
  Work fusion_copy(Fusion& f, const Tensor& dst, const Tensor& src, uint64_t bytes) const;
  void finish(const std::string& name, Result<Tensor> r);
  void maybe_run_uncoordinated();
  void run_ring(const std::string& tag, Tensor t, std::function<void(Result<Tensor>)> done);

  transports::TaskRuntime& task_;
  StreamNetwork& streams_;
  Channel channel_;
  std::shared_ptr<const std::vector<std::string>> processes_;
  EngineOptions options_;
  std::unique_ptr<rpc::RpcNode> rpc_;
  EngineStats stats_;

  int64_t step_ = 0;
  size_t expected_ = 0, completed_ = 0;
  bool active_ = false;
  uint64_t round_ = 0;
  std::deque<std::string> new_requests_;    ///< not yet sent to the coordinator
  /// Waiting for their collective, by name (hashed: names share long prefixes, and every completion looks one up).
  std::unordered_map<std::string, Request> requests_;
  std::unordered_map<std::string, bool> seen_; ///< response cache (names negotiated before)
  bool busy_ = false;                       ///< uncoordinated mode: a collective is running
  std::vector<std::string> order_;          ///< uncoordinated mode: the fixed order of collectives in a step
  size_t next_in_order_ = 0;

  // Coordinator (rank 0) state.
  struct RoundState {
    size_t arrived = 0;
    size_t idle = 0;
    std::vector<std::function<void(std::vector<Response>, bool)>> reply; ///< to ranks 1..N-1
    bool own = false;
  };
  std::map<uint64_t, RoundState> rounds_;
  struct TableEntry {
    std::vector<uint64_t> sizes; ///< by rank, 0 = not requested yet
    size_t count = 0;
  };
  std::unordered_map<std::string, TableEntry> table_; ///< never walked: lookups by name
  std::vector<std::string> ready_order_;
  std::vector<std::function<void(std::vector<Response>, bool)>> own_reply_;
  Tensor fusion_buffer_;
  RingRunner* runner_ = nullptr;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true); ///< expires with the engine (pending ticks)
};

} // namespace tp::collectives
