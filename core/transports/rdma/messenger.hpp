// Two-sided messaging over RC channels, the way MPI libraries and AR-gRPC's RDMA endpoint move bytes:
// messages up to the eager threshold are copied into a pre-registered bounce buffer and SENT into one of the
// peer's pre-posted bounce buffers (the receiver copies them out); larger payloads go by rendezvous: an RTS
// carries the registered source (addr, rkey), the receiver RDMA-READs it into its destination (in chunks, several
// in flight) and returns a FIN per chunk; the sender's buffer is released after the last FIN.
// Every message carries a small real header (the protocol's own bytes) and an optional payload that may be
// simulated. Used by the mpi and ar_grpc transports. Tests: tests/sim/transport_suite_test.cpp.
#pragma once

#include "core/transports/rdma/rdma_channels.hpp"

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <unordered_map>

namespace tp::transports {

struct MessengerOptions {
  std::string service = "Messenger.Connect";
  uint64_t eager_threshold = 16 << 10; ///< payloads up to this go eagerly
  uint64_t chunk_bytes = 0;            ///< rendezvous chunk size (0: one chunk)
  uint32_t max_chunks_in_flight = 8;
  /// Chunks read by one RDMA READ and acknowledged by one FIN (1: the protocol as published, one READ and one FIN per
  /// chunk). Trains of N chunks, max_chunks_in_flight / N of them in flight (at least one): the same chunks outstanding
  /// per payload where N divides max_chunks_in_flight. A simulation shortcut (docs/model.md "Chunk trains"): N times
  /// fewer READs, FINs and completions, with the same bytes in the same order on the wire.
  uint32_t read_train = 1;
  uint32_t bounce_slots = 64; ///< pre-posted receive buffers per channel
  uint64_t max_header = 1024; ///< largest header a message may carry
  /// Rendezvous payloads from a peer process on the same machine are copied directly from its memory (shared
  /// memory / CUDA IPC, Runtime::peer_memory) instead of RDMA-READ through the NIC, as MPI libraries do.
  bool intra_node_copy = false;
  /// A rendezvous payload staged through host memory (a GPU the NIC cannot reach directly) and larger than this
  /// is staged block by block, each block readable as soon as it is copied (CUDA-aware MPI's pipelined staging);
  /// 0: stage it whole, then announce it.
  uint64_t staging_block = 0;
  /// GPU payloads larger than this are sent from a host staging copy even when the NIC could read the GPU's
  /// memory directly (GPUDirect RDMA reads through the root complex are slow; MVAPICH2-GDR's MV2_GPUDIRECT_LIMIT).
  /// 0: no limit.
  uint64_t gpu_read_limit = 0;
  /// Any error completion is fatal in the original (MPI: MPI_ERRORS_ARE_FATAL): report it (TaskContext::on_fatal).
  bool fatal_wc_errors = false;
  /// Messages to one peer are posted in the order send() was called, each after the one before it was posted (MPI's
  /// non-overtaking rule, MPI 3.1 section 3.5: a library's send call registers a rendezvous payload or copies an eager
  /// one before it returns and the next call begins). Without it a rendezvous payload's registration, or a longer
  /// eager copy, lets a later message to the same peer go first.
  bool ordered = false;
};

/// What a receiver learns about an incoming message.
struct Incoming {
  std::string peer_task;
  std::vector<uint8_t> header;
  uint64_t payload_len = 0;
  bool eager = true;
};

class Messenger {
public:
  /// Deliver the payload into `dst` (at least payload_len bytes) and call `landed`; with payload_len == 0 call it with
  /// any buffer (it is ignored).
  using Deliver = std::function<void(const Buffer& dst, std::function<void(Status)> landed)>;
  using Handler = std::function<void(Incoming msg, Deliver deliver)>;

  Messenger(const TaskContext& ctx, rpc::RpcNode& rpc, MessengerOptions opt, Handler on_message);

  /// Send `header` (+ `payload_len` bytes of `payload`) to `peer_task`. `sent` runs when the sender may reuse the
  /// payload (eager: after the copy into the bounce buffer; rendezvous: after the last FIN). `rec` gets the time.
  /// `eager_limit` / `chunk` (non-zero) override the options for this message (per-peer tuning); eager_limit is
  /// capped by the bounce buffer size (options().eager_threshold).
  void send(const std::string& peer_task, std::vector<uint8_t> header, const Buffer* payload, uint64_t payload_len,
            std::shared_ptr<TransferRecord> rec, std::function<void(Status)> sent, uint64_t eager_limit = 0,
            uint64_t chunk = 0);
  /// Round trip of an empty message to `peer_task` and back (measured on the simulated or real fabric).
  void ping(const std::string& peer_task, std::function<void(Result<double>)> done);
  const MessengerOptions& options() const { return opt_; }
  /// Called when a channel fails (its pending receives must be failed by the caller's protocol).
  void on_failure(std::function<void(const std::string& peer_task, const Error&)> f)
  {
    handler_on_failure_ = std::move(f);
  }

private:
  /// send() without the ordering of MessengerOptions::ordered; `posted` runs once the message is posted (or failed).
  void send_now(const std::string& peer_task, std::vector<uint8_t> header, const Buffer* payload, uint64_t payload_len,
                std::shared_ptr<TransferRecord> rec, std::function<void(Status)> sent, uint64_t eager_limit,
                uint64_t chunk_override, std::function<void()> posted);
  /// MessengerOptions::ordered: per peer, the sends not yet started and whether one is being posted.
  struct SendOrder {
    std::deque<std::function<void()>> waiting;
    bool posting = false;
  };
  /// Start the next waiting send to `peer_task` unless one is being posted.
  void start_next_send(const std::string& peer_task);
  std::unordered_map<std::string, SendOrder> send_order_;
  struct Slot {
    Buffer mem;
    verbs::MemoryRegion mr;
  };
  struct ChannelState {
    std::vector<Slot> rx; ///< pre-posted bounce buffers (wr_id = index)
    std::vector<Slot> tx; ///< send bounce buffers
    std::deque<size_t> free_tx;
    std::deque<std::function<void()>> waiting_tx;
    std::optional<Error> failed;
    uint32_t outstanding = 0; ///< work requests on the send queue
    std::deque<std::pair<verbs::SendWr, std::function<void(const verbs::WorkCompletion&)>>>
        backlog; ///< waiting for room
  };
  struct Outgoing {
    memory::NicBuffer view;
    bool has_view = false;
    uint32_t chunks_left = 0;
    std::function<void(Status)> sent;
    std::shared_ptr<TransferRecord> rec;
  };
  struct Reading {
    Channel* ch = nullptr;
    uint64_t msg_id = 0;
    uint64_t addr = 0;
    uint32_t rkey = 0;
    uint64_t len = 0;
    uint32_t chunks = 0, next_chunk = 0, done_chunks = 0, in_flight = 0;
    uint32_t ready = 0;         ///< chunks the sender has made readable (all of them unless pipelined)
    uint32_t copied_chunks = 0; ///< staged reads: chunks copied out to the destination
    bool pipelined = false;
    bool view_ready = false; ///< the destination's NIC view is acquired
    memory::NicBuffer view;
    std::function<void(Status)> landed;
    bool failed = false;
  };

  Status init_channel(Channel& ch);
  ChannelState* state(Channel& ch) { return static_cast<ChannelState*>(ch.state.get()); }
  void with_tx_slot(Channel& ch, std::function<void(size_t)> use);
  /// `stands_for`: verbs::SendWr::stands_for (a chunk train's FIN).
  void post_send_slot(Channel& ch, size_t slot, uint64_t len, std::function<void(const verbs::WorkCompletion&)> done,
                      uint32_t stands_for = 1);
  /// Post a signaled WR, or keep it until the send queue has room (MPI libraries queue internally, they do not fail).
  /// Behind any WR already kept, so that WRs reach the send queue in the order they were posted here.
  void post(Channel& ch, verbs::SendWr w, std::function<void(const verbs::WorkCompletion&)> done);
  /// Post to the QP now. A WR the QP refuses fails the channel and completes with WR_FLUSH_ERR (its bounce buffer
  /// comes back, the sends waiting for one go on and fail too).
  void post_now(Channel& ch, verbs::SendWr w, std::function<void(const verbs::WorkCompletion&)> done);
  /// Post kept WRs while the send queue has room.
  void post_backlog(Channel& ch);
  uint32_t queue_depth_ = 1024;
  void on_completion(Channel& ch, const verbs::WorkCompletion& wc);
  void on_receive(Channel& ch, size_t slot, uint32_t len);
  void read_more(const std::shared_ptr<Reading>& r);
  /// The intra-node path for a rendezvous payload: copy from the peer's memory, then FIN every chunk.
  bool copy_from_peer(const std::shared_ptr<Reading>& r, const Buffer& dst);
  /// FIN for chunks [first, first + count) (count > 1: a chunk train; the FIN's `chunk` field carries the count).
  void send_fin(Channel& ch, uint64_t msg_id, uint32_t first, uint32_t count = 1);
  void finish_read(const std::shared_ptr<Reading>& r, Status st);
  void stage_block(Channel* ch, uint64_t msg_id, memory::NicBuffer view, uint64_t len, uint32_t k,
                   std::shared_ptr<TransferRecord> rec);
  void fail_channel(Channel& ch, const Error& e);
  /// Bytes of chunks [k, k + count) of `r`.
  uint64_t chunk_len(const Reading& r, uint32_t k, uint32_t count = 1) const;

  TaskContext ctx_;
  MessengerOptions opt_;
  Handler handler_;
  RdmaChannels channels_;
  uint64_t next_msg_ = 1;
  uint64_t next_wr_ = 1ull << 32;
  std::unordered_map<uint64_t, Outgoing> outgoing_; ///< rendezvous sends waiting for FINs
  std::unordered_map<uint64_t, std::function<void(const verbs::WorkCompletion&)>> wr_done_;
  std::unordered_map<const Reading*, uint64_t> read_chunk_size_;
  std::unordered_map<uint64_t, std::pair<double, std::function<void(Result<double>)>>> pings_;
  std::map<std::pair<Channel*, uint64_t>, std::shared_ptr<Reading>> pipelined_; ///< reads waiting for READYs
  std::map<std::pair<Channel*, uint64_t>, uint32_t> early_ready_;               ///< READYs before their RTS was taken
  std::function<void(const std::string&, const Error&)> handler_on_failure_;
};

} // namespace tp::transports
