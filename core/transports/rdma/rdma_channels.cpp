// Channel creation, endpoint exchange over RPC, completion dispatch.
#include "core/transports/rdma/rdma_channels.hpp"

namespace tp::transports {

RdmaChannels::RdmaChannels(const TaskContext& ctx, rpc::RpcNode& rpc, Options opt, ChannelInit init,
                           LocalBuffers buffers, CompletionHandler on_wc)
    : ctx_(ctx), rpc_(rpc), opt_(std::move(opt)), init_(std::move(init)), buffers_(std::move(buffers)),
      on_wc_(std::move(on_wc)), alive_(std::make_shared<bool>(true))
{
  rpc_.add_method(opt_.service,
                  [this](rpc::Payload req, rpc::Responder respond) { serve(std::move(req), std::move(respond)); });
  // A peer whose RPC connection closed is gone (its process ended): move our QP to it to ERR, which flushes every
  // outstanding WR, posted receives included, so the transport fails what still waits on that peer.
  std::weak_ptr<bool> alive = alive_;
  rpc_.on_peer_closed([this, alive](const std::string& peer) {
    if (alive.expired()) return;
    for (auto& [name, ch] : channels_)
      if (ch->peer_process == peer && ch->qp && ch->qp->state() != verbs::QpState::ERR) {
        verbs::QpAttr a;
        a.qp_state = verbs::QpState::ERR;
        (void)ch->qp->modify(a, verbs::QpAttrMask::STATE);
      }
  });
  if (ctx_.device) {
    auto cq = ctx_.device->create_cq(int(2 * opt_.queue_depth));
    if (cq.ok()) {
      cq_ = std::move(cq.value());
      std::weak_ptr<bool> alive = alive_;
      cq_->set_handler([this, alive](const verbs::WorkCompletion& wc) {
        if (alive.expired()) return;
        Channel* ch = by_qp(wc.qp_num);
        if (ch && !wc.ok() && opt_.fatal_wc_errors && ctx_.on_fatal && !fatal_reported_) {
          fatal_reported_ = true;
          const std::string what = opt_.describe_failure ? opt_.describe_failure(*ch, wc) : std::string();
          ctx_.on_fatal(Error::status("Aborted", "fatal error completion on the RDMA channel to " + ch->peer_task +
                                                     ": " + verbs::to_string(wc.status) +
                                                     (what.empty() ? "" : " (" + what + ")") +
                                                     " (the original CHECK-fails)"));
        }
        if (ch) on_wc_(*ch, wc);
      });
    }
  }
}

RdmaChannels::~RdmaChannels()
{
  *alive_ = false;
}

Channel* RdmaChannels::by_qp(uint32_t qpn)
{
  for (auto& [name, ch] : channels_)
    if (ch->qp && ch->qp->qp_num() == qpn) return ch.get();
  return nullptr;
}

std::vector<Channel*> RdmaChannels::all()
{
  std::vector<Channel*> v;
  for (auto& [n, ch] : channels_)
    v.push_back(ch.get());
  return v;
}

Status RdmaChannels::post_receives(Channel& ch, uint32_t n)
{
  for (uint32_t i = 0; i < n; ++i) {
    verbs::RecvWr r;
    r.wr_id = 0;
    TP_TRY(ch.qp->post_recv(r));
  }
  return ok_status();
}

Result<Channel*> RdmaChannels::ensure(const std::string& peer_task)
{
  auto it = channels_.find(peer_task);
  if (it != channels_.end()) return it->second.get();
  if (!ctx_.device || !cq_) return Error::status("Unavailable", "no RDMA device in " + ctx_.process);
  auto proc = ctx_.cluster.find(peer_task);
  if (proc == ctx_.cluster.end()) return Error::status("Unavailable", "no process runs task " + peer_task);
  auto ch = std::make_unique<Channel>();
  ch->peer_task = peer_task;
  ch->peer_process = proc->second;
  verbs::QpInitAttr ia;
  ia.send_cq = cq_.get();
  ia.recv_cq = cq_.get();
  ia.cap.max_send_wr = opt_.queue_depth;
  ia.cap.max_recv_wr = opt_.queue_depth;
  ia.cap.max_send_sge = 1;
  ia.cap.max_recv_sge = 1;
  auto qp = ctx_.device->create_qp(ia);
  if (!qp.ok()) return qp.error();
  ch->qp = std::move(qp.value());
  ch->local = verbs::QpEndpoint{ctx_.device->port_address(), ch->qp->qp_num(), (next_psn_++) & 0xFFFFFF};
  // INIT now so that receives can be posted before the peer can send.
  verbs::QpAttr a;
  a.qp_state = verbs::QpState::INIT;
  a.qp_access_flags = opt_.rc.access;
  TP_TRY(ch->qp->modify(a, verbs::RESET_TO_INIT_MASK));
  TP_TRY(post_receives(*ch, opt_.recv_wrs));
  if (init_) TP_TRY(init_(*ch));
  Channel* raw = ch.get();
  channels_[peer_task] = std::move(ch);
  return raw;
}

std::vector<uint8_t> RdmaChannels::encode_hello(Channel& ch)
{
  rpc::Writer w;
  w.str(ctx_.task);
  auto ep = ch.local.encode();
  w.bytes(ep);
  auto bufs = buffers_ ? buffers_(ch) : std::vector<RemoteBuffer>{};
  w.u32(uint32_t(bufs.size()));
  for (const auto& b : bufs) {
    w.u64(b.addr);
    w.u32(b.rkey);
    w.u64(b.length);
  }
  return w.take();
}

Result<ChannelHello> decode_channel_hello(const std::vector<uint8_t>& in)
{
  rpc::Reader r(in);
  ChannelHello h;
  std::vector<uint8_t> epb;
  uint32_t n = 0;
  if (!r.str(h.task, 1024) || !r.bytes(epb, 64) || !verbs::QpEndpoint::decode(epb.data(), epb.size(), h.ep) ||
      !r.u32(n) || n > 1024)
    return Error::status("InvalidArgument", "malformed channel set-up message: task, QP endpoint, buffer count");
  for (uint32_t i = 0; i < n; ++i) {
    RemoteBuffer b;
    if (!r.u64(b.addr) || !r.u32(b.rkey) || !r.u64(b.length))
      return Error::status("InvalidArgument", "malformed channel set-up message: truncated buffer list");
    h.buffers.push_back(b);
  }
  if (!r.done()) return Error::status("InvalidArgument", "malformed channel set-up message: trailing bytes");
  return h;
}

Status RdmaChannels::connect(Channel& ch, const verbs::QpEndpoint& remote, std::vector<RemoteBuffer> remote_buffers)
{
  if (ch.connected) return ok_status();
  // Both ends run the same protocol: the peer announces as many fixed buffers as we do (the transports index
  // them; fewer made verbs v1/v2 throw std::out_of_range at their first message).
  const size_t ours = buffers_ ? buffers_(ch).size() : 0;
  if (remote_buffers.size() != ours)
    return Error::status("InvalidArgument", "channel set-up from " + ch.peer_task + " announces " +
                                                std::to_string(remote_buffers.size()) + " fixed buffers, expected " +
                                                std::to_string(ours));
  ch.remote_buffers = std::move(remote_buffers);
  verbs::QpAttr a;
  a.qp_state = verbs::QpState::RTR;
  a.dest = remote.port;
  a.path_mtu = opt_.rc.path_mtu;
  a.dest_qp_num = remote.qp_num;
  a.rq_psn = remote.psn;
  a.max_dest_rd_atomic = opt_.rc.max_rd_atomic;
  a.min_rnr_timer = opt_.rc.min_rnr_timer;
  TP_TRY(ch.qp->modify(a, verbs::INIT_TO_RTR_MASK));
  a.qp_state = verbs::QpState::RTS;
  a.timeout = opt_.rc.timeout;
  a.retry_cnt = opt_.rc.retry_cnt;
  a.rnr_retry = opt_.rc.rnr_retry;
  a.sq_psn = ch.local.psn;
  a.max_rd_atomic = opt_.rc.max_rd_atomic;
  TP_TRY(ch.qp->modify(a, verbs::RTR_TO_RTS_MASK));
  ch.connected = true;
  return ok_status();
}

void RdmaChannels::serve(rpc::Payload req, rpc::Responder respond)
{
  auto hello = decode_channel_hello(req.bytes);
  if (!hello.ok()) return respond(hello.error());
  const std::string peer = hello->task;
  auto ch = ensure(peer);
  if (!ch.ok()) return respond(ch.error());
  if (auto st = connect(*ch.value(), hello->ep, std::move(hello->buffers)); !st.ok()) return respond(st.error());
  respond(rpc::Payload{encode_hello(*ch.value()), 0});
  // Anyone waiting locally for this channel can go now.
  auto w = waiting_.find(peer);
  if (w != waiting_.end()) {
    auto list = std::move(w->second);
    waiting_.erase(w);
    for (auto& d : list)
      d(ch.value());
  }
}

void RdmaChannels::get(const std::string& peer_task, std::function<void(Result<Channel*>)> done)
{
  auto ch = ensure(peer_task);
  if (!ch.ok()) {
    Error e = ch.error();
    ctx_.runtime->post([done, e] { done(e); });
    return;
  }
  if (ch.value()->connected) {
    Channel* c = ch.value();
    ctx_.runtime->post([done, c] { done(c); });
    return;
  }
  auto& list = waiting_[peer_task];
  list.push_back(std::move(done));
  if (list.size() > 1) return; // an exchange is already under way
  Channel* c = ch.value();
  std::weak_ptr<bool> alive = alive_;
  rpc_.call(c->peer_process, opt_.service, rpc::Payload{encode_hello(*c), 0},
            [this, alive, peer_task](Result<rpc::Payload> resp) {
              if (alive.expired()) return;
              auto w = waiting_.find(peer_task);
              if (w == waiting_.end()) return; // connected meanwhile by the peer's own request
              auto list = std::move(w->second);
              waiting_.erase(w);
              Result<Channel*> out = Error::msg("unset");
              Channel& ch2 = *channels_.at(peer_task);
              auto hello = resp.ok() ? decode_channel_hello(resp.value().bytes) : Result<ChannelHello>(resp.error());
              if (!hello.ok())
                out = hello.error();
              else if (hello->task != peer_task)
                out = Error::status("Internal", "malformed channel set-up response from " + peer_task);
              else if (auto st = connect(ch2, hello->ep, std::move(hello->buffers)); !st.ok())
                out = st.error();
              else
                out = &ch2;
              for (auto& d : list)
                d(out);
            });
}

} // namespace tp::transports
