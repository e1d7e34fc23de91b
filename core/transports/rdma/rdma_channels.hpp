// RC channels between tasks for the RDMA transports (verbs v1/v2, GDR, MPI, AR-gRPC): one QP per peer task,
// created on first use by either side, connected through an RPC exchange of QP endpoints and of each
// side's fixed buffers (TF verbs' GetRemoteAddress; GDR's RDMA CM). One CQ per task; completions are
// dispatched to the channel owning the QP. Receive WRs are pre-posted at creation and re-posted by the
// transport. Errors (a QP that fails, a peer that is gone) reach the transport as error completions.
#pragma once

#include "core/rpc/rpc.hpp"
#include "core/transports/transport.hpp"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tp::transports {

/// A buffer of ours that the peer may write into / read from.
struct RemoteBuffer {
  uint64_t addr = 0;
  uint32_t rkey = 0;
  uint64_t length = 0;
};

/// The channel set-up message each side sends over RPC: its task, its QP endpoint and its fixed buffers.
struct ChannelHello {
  std::string task;
  verbs::QpEndpoint ep;
  std::vector<RemoteBuffer> buffers;
};
/// Decode a peer's set-up message: a task name of at most 1 KiB, a valid QP endpoint, at most 1024 buffers and
/// nothing after them. The fuzz target tests/fuzz/fuzz_channel_hello.cpp feeds it.
Result<ChannelHello> decode_channel_hello(const std::vector<uint8_t>& in);

struct Channel {
  std::string peer_task;
  std::string peer_process;
  std::unique_ptr<verbs::QueuePair> qp;
  verbs::QpEndpoint local;
  std::vector<RemoteBuffer> remote_buffers; ///< the peer's fixed buffers, as many as ours (checked at set-up)
  bool connected = false;
  std::shared_ptr<void> state; ///< the transport's per-channel protocol state
};

class RdmaChannels {
public:
  struct Options {
    std::string service; ///< RPC method name of the exchange (e.g. "VerbsService.GetRemoteAddress")
    uint32_t queue_depth = 1024;
    uint32_t recv_wrs = 100; ///< zero-length receives pre-posted per QP
    verbs::RcConnectOptions rc;
    /// The original implementation CHECK-fails on any error completion (TF verbs v1/v2, MPI): also report
    /// the first one through TaskContext::on_fatal.
    bool fatal_wc_errors = false;
    /// What a failed work request was (e.g. "a WRITE of N bytes exceeds the RC message limit ..."), for the fatal
    /// report; called before the completion reaches the transport. Empty: the status alone.
    std::function<std::string(Channel&, const verbs::WorkCompletion&)> describe_failure;
  };
  using ChannelInit = std::function<Status(Channel&)>; ///< create the channel's fixed buffers
  using LocalBuffers = std::function<std::vector<RemoteBuffer>(Channel&)>;
  using CompletionHandler = std::function<void(Channel&, const verbs::WorkCompletion&)>;

  /// `init` runs once per channel after its QP exists (allocate and register buffers, set `state`);
  /// `buffers` lists what to announce to the peer; `on_wc` gets every completion of the channel's QP.
  RdmaChannels(const TaskContext& ctx, rpc::RpcNode& rpc, Options opt, ChannelInit init, LocalBuffers buffers,
               CompletionHandler on_wc);
  ~RdmaChannels();

  /// The channel to `peer_task`, connected; creates and connects it on first use.
  void get(const std::string& peer_task, std::function<void(Result<Channel*>)> done);
  /// Post `n` zero-length receive WRs on the channel (wr_id = 0).
  Status post_receives(Channel& ch, uint32_t n);
  /// Find the channel of a QP number (nullptr if unknown).
  Channel* by_qp(uint32_t qpn);
  std::vector<Channel*> all();

private:
  Result<Channel*> ensure(const std::string& peer_task);
  void serve(rpc::Payload req, rpc::Responder respond);
  Status connect(Channel& ch, const verbs::QpEndpoint& remote, std::vector<RemoteBuffer> remote_buffers);
  std::vector<uint8_t> encode_hello(Channel& ch);

  TaskContext ctx_;
  rpc::RpcNode& rpc_;
  Options opt_;
  bool fatal_reported_ = false;
  ChannelInit init_;
  LocalBuffers buffers_;
  CompletionHandler on_wc_;
  std::unique_ptr<verbs::CompletionQueue> cq_;
  std::map<std::string, std::unique_ptr<Channel>> channels_;
  std::map<std::string, std::vector<std::function<void(Result<Channel*>)>>> waiting_;
  std::shared_ptr<bool> alive_;
  uint32_t next_psn_ = 0x1000;
};

} // namespace tp::transports
