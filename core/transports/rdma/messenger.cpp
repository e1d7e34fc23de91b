// Eager (bounce buffers) and rendezvous (RTS, chunked RDMA READ, FIN) messaging.
#include "core/transports/rdma/messenger.hpp"
#include "core/transports/rdma/messenger_wire.hpp"
#include "core/transports/wire_common.hpp"

#include <algorithm>

namespace tp::transports {

namespace messenger_wire {

std::vector<uint8_t> encode(const Prefix& p)
{
  rpc::Writer w;
  w.u8(p.type);
  w.u64(p.msg_id);
  w.bytes(p.header);
  w.u64(p.payload_len);
  w.u64(p.addr);
  w.u32(p.rkey);
  w.u64(p.chunk);
  w.u32(p.fin_chunk);
  w.u8(p.flags);
  return w.take();
}

Result<Prefix> decode(const uint8_t* d, size_t n, const Arrival& a)
{
  auto bad = [](const std::string& what) { return Error::status("Internal", "malformed message prefix: " + what); };
  rpc::Reader r(d, n);
  Prefix p;
  if (!r.u8(p.type) || p.type < EAGER || p.type > READY) return bad("type: expected 1..6");
  if (!r.u64(p.msg_id)) return bad("no message id");
  if (!r.bytes(p.header, a.max_header))
    return bad("header: expected at most " + std::to_string(a.max_header) + " bytes");
  if (!r.u64(p.payload_len) || !r.u64(p.addr) || !r.u32(p.rkey) || !r.u64(p.chunk) || !r.u32(p.fin_chunk) ||
      !r.u8(p.flags))
    return bad("truncated");
  if (p.flags & ~PIPELINED) return bad("unknown flags " + std::to_string(p.flags));
  if (p.type == EAGER) {
    const uint64_t region = prefix_region(a.max_header);
    if (p.payload_len > a.eager_capacity)
      return bad("eager payload of " + std::to_string(p.payload_len) + " bytes, the bounce buffer holds " +
                 std::to_string(a.eager_capacity));
    if (p.payload_len > 0 && (a.received < region || p.payload_len > a.received - region))
      return bad("eager payload of " + std::to_string(p.payload_len) + " bytes, " +
                 std::to_string(a.received < region ? 0 : a.received - region) + " arrived");
  }
  if (p.type == RTS) {
    if (p.payload_len == 0 || p.payload_len > MAX_PAYLOAD)
      return bad("rendezvous payload of " + std::to_string(p.payload_len) + " bytes (expected 1 B .. 1 TiB)");
    if (p.chunk == 0) return bad("rendezvous chunk size 0");
    if (p.payload_len / p.chunk + (p.payload_len % p.chunk != 0) > UINT32_MAX)
      return bad("more than 2^32 - 1 rendezvous chunks");
  }
  if ((p.type == FIN || p.type == READY) && p.fin_chunk == UINT32_MAX) return bad("chunk index 2^32 - 1");
  if (p.type == FIN && (p.chunk > UINT32_MAX || uint64_t(p.fin_chunk) + fin_chunks(p) > UINT32_MAX))
    return bad("a FIN for " + std::to_string(p.chunk) + " chunks from chunk " + std::to_string(p.fin_chunk) +
               " (expected at most 2^32 - 1 chunks)");
  return p;
}

} // namespace messenger_wire

namespace {

using messenger_wire::EAGER;
using messenger_wire::encode;
using messenger_wire::FIN;
using messenger_wire::PING;
using messenger_wire::PIPELINED;
using messenger_wire::PONG;
using messenger_wire::Prefix;
using messenger_wire::READY;
using messenger_wire::RTS;

constexpr uint64_t RECV_FLAG = 1ull << 62;

} // namespace

Messenger::Messenger(const TaskContext& ctx, rpc::RpcNode& rpc, MessengerOptions opt, Handler on_message)
    : ctx_(ctx), opt_(std::move(opt)), handler_(std::move(on_message)),
      channels_(
          ctx, rpc,
          [this] {
            RdmaChannels::Options o;
            o.service = opt_.service;
            o.queue_depth = std::max<uint32_t>(1024, 2 * opt_.bounce_slots);
            o.recv_wrs = 0; // our own bounce buffers are posted in init_channel
            o.rc.access = verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_WRITE | verbs::Access::REMOTE_READ;
            o.rc.rnr_retry = 7;     // a receiver short of bounce buffers slows the sender down
            o.rc.min_rnr_timer = 1; // 10 us
            o.fatal_wc_errors = opt_.fatal_wc_errors;
            return o;
          }(),
          [this](Channel& ch) { return init_channel(ch); }, nullptr,
          [this](Channel& ch, const verbs::WorkCompletion& wc) { on_completion(ch, wc); })
{
  queue_depth_ = std::max<uint32_t>(1024, 2 * opt_.bounce_slots); // as the channels' QPs
}

Status Messenger::init_channel(Channel& ch)
{
  auto s = std::make_shared<ChannelState>();
  const uint64_t region = opt_.max_header + 64;
  const uint64_t slot = region + opt_.eager_threshold;
  auto make = [&](std::vector<Slot>& v, verbs::Access access) -> Status {
    for (uint32_t i = 0; i < opt_.bounce_slots; ++i) {
      AllocAttr a = AllocAttr::at(Location::host(ctx_.cpu_numa_node), HostMemoryKind::PINNED);
      a.materialize_prefix = region; // protocol bytes are always real
      auto m = ctx_.runtime->memory().allocate(slot, a);
      if (!m.ok()) return m.error();
      auto mr = ctx_.device->reg_mr(m->addr, m->size, access);
      if (!mr.ok()) return mr.error();
      v.push_back(Slot{m.value(), mr.value()});
    }
    return ok_status();
  };
  TP_TRY(make(s->rx, verbs::Access::LOCAL_WRITE));
  TP_TRY(make(s->tx, verbs::Access::LOCAL_WRITE));
  for (size_t i = 0; i < s->tx.size(); ++i)
    s->free_tx.push_back(i);
  for (size_t i = 0; i < s->rx.size(); ++i) {
    verbs::RecvWr r;
    r.wr_id = RECV_FLAG | i;
    r.sg_list.push_back(
        {s->rx[i].mem.addr, *verbs::sge_length(s->rx[i].mem.size), s->rx[i].mr.lkey}); // a bounce buffer
    TP_TRY(ch.qp->post_recv(r));
  }
  ch.state = s;
  return ok_status();
}

void Messenger::with_tx_slot(Channel& ch, std::function<void(size_t)> use)
{
  ChannelState* s = state(ch);
  if (s->free_tx.empty()) {
    s->waiting_tx.push_back([this, &ch, use] {
      size_t i = state(ch)->free_tx.front();
      state(ch)->free_tx.pop_front();
      use(i);
    });
    return;
  }
  size_t i = s->free_tx.front();
  s->free_tx.pop_front();
  use(i);
}

void Messenger::post_send_slot(Channel& ch, size_t slot, uint64_t len,
                               std::function<void(const verbs::WorkCompletion&)> done, uint32_t stands_for)
{
  ChannelState* s = state(ch);
  verbs::SendWr w;
  w.wr_id = next_wr_++;
  w.opcode = verbs::WrOpcode::SEND;
  w.stands_for = stands_for;
  w.sg_list.push_back({s->tx[slot].mem.addr, *verbs::sge_length(len), s->tx[slot].mr.lkey}); // within a bounce buffer
  Channel* chp = &ch;
  post(ch, w, [this, chp, slot, done](const verbs::WorkCompletion& wc) {
    ChannelState* st = state(*chp);
    st->free_tx.push_back(slot);
    if (!st->waiting_tx.empty()) {
      auto next = std::move(st->waiting_tx.front());
      st->waiting_tx.pop_front();
      next();
    }
    done(wc);
  });
}

void Messenger::post(Channel& ch, verbs::SendWr w, std::function<void(const verbs::WorkCompletion&)> done)
{
  ChannelState* s = state(ch);
  // Behind the kept ones: a WR posted from a completion's callback (a bounce buffer came back) must not overtake them.
  if (!s->backlog.empty() || s->outstanding + 8 >= queue_depth_) {
    s->backlog.emplace_back(std::move(w), std::move(done));
    return;
  }
  post_now(ch, std::move(w), std::move(done));
}

void Messenger::post_backlog(Channel& ch)
{
  ChannelState* s = state(ch);
  while (!s->backlog.empty() && s->outstanding + 8 < queue_depth_) {
    auto [next, cb] = std::move(s->backlog.front());
    s->backlog.pop_front();
    post_now(ch, std::move(next), std::move(cb));
  }
}

void Messenger::post_now(Channel& ch, verbs::SendWr w, std::function<void(const verbs::WorkCompletion&)> done)
{
  ChannelState* s = state(ch);
  ++s->outstanding;
  w.signaled = true;
  Channel* chp = &ch;
  const uint64_t id = w.wr_id;
  wr_done_[id] = [this, chp, done](const verbs::WorkCompletion& wc) {
    --state(*chp)->outstanding;
    done(wc);
    post_backlog(*chp);
  };
  if (auto st = ch.qp->post_send(w); !st.ok()) {
    wr_done_.erase(id);
    --s->outstanding;
    fail_channel(ch, st.error());
    // Its caller learns of it as of any flushed WR (later, not from inside this call).
    const auto wc = verbs::WorkCompletion::of_send(
        id, verbs::WcStatus::WR_FLUSH_ERR,
        w.opcode == verbs::WrOpcode::RDMA_READ ? verbs::WcOpcode::RDMA_READ : verbs::WcOpcode::SEND, 0, 0);
    ctx_.runtime->post([this, chp, done, wc] {
      done(wc);
      post_backlog(*chp); // the WRs kept behind it fail the same way, each completing
    });
  }
}

void Messenger::ping(const std::string& peer_task, std::function<void(Result<double>)> done)
{
  channels_.get(peer_task, [this, done](Result<Channel*> chr) {
    if (!chr.ok()) return done(chr.error());
    Channel& ch = *chr.value();
    Prefix p;
    p.type = PING;
    p.msg_id = next_msg_++;
    pings_[p.msg_id] = {ctx_.runtime->now(), done};
    const auto bytes = encode(p);
    with_tx_slot(ch, [this, &ch, bytes](size_t slot) {
      put_bytes(ctx_.runtime->memory(), state(ch)->tx[slot].mem, bytes);
      post_send_slot(ch, slot, bytes.size(), [](const verbs::WorkCompletion&) {});
    });
  });
}

void Messenger::send(const std::string& peer_task, std::vector<uint8_t> header, const Buffer* payload,
                     uint64_t payload_len, std::shared_ptr<TransferRecord> rec, std::function<void(Status)> sent,
                     uint64_t eager_limit, uint64_t chunk_override)
{
  if (!opt_.ordered)
    return send_now(peer_task, std::move(header), payload, payload_len, std::move(rec), std::move(sent), eager_limit,
                    chunk_override, [] {});
  // MPI's non-overtaking rule: this message starts once the one before it to the same peer is posted.
  Buffer pl = payload ? *payload : Buffer{};
  const bool has_payload = payload != nullptr;
  send_order_[peer_task].waiting.push_back([=, this, header = std::move(header)]() mutable {
    auto once = std::make_shared<bool>(false);
    auto posted = [this, peer_task, once] {
      if (*once) return;
      *once = true;
      send_order_[peer_task].posting = false;
      // Not from inside the post: the next send's start may run a long way (registration, copies) on its own.
      ctx_.runtime->post([this, peer_task] { start_next_send(peer_task); });
    };
    // A send that fails before it is posted lets the next one go too.
    auto sent_then = [posted, sent](Status st) {
      posted();
      sent(st);
    };
    send_now(peer_task, std::move(header), has_payload ? &pl : nullptr, payload_len, rec, sent_then, eager_limit,
             chunk_override, posted);
  });
  start_next_send(peer_task);
}

void Messenger::start_next_send(const std::string& peer_task)
{
  SendOrder& o = send_order_[peer_task];
  if (o.posting || o.waiting.empty()) return;
  auto next = std::move(o.waiting.front());
  o.waiting.pop_front();
  o.posting = true;
  next();
}

void Messenger::send_now(const std::string& peer_task, std::vector<uint8_t> header, const Buffer* payload,
                         uint64_t payload_len, std::shared_ptr<TransferRecord> rec, std::function<void(Status)> sent,
                         uint64_t eager_limit, uint64_t chunk_override, std::function<void()> posted)
{
  if (header.size() > opt_.max_header) {
    ctx_.runtime->post([sent] { sent(Error::at("", "messenger header", "at most max_header bytes", "more")); });
    return;
  }
  if (payload_len > messenger_wire::MAX_PAYLOAD) {
    // What a receiver accepts in an RTS (messenger_wire::decode): refused here rather than failing the channel there.
    ctx_.runtime->post([sent, payload_len] {
      sent(Error::status("OutOfRange", "a message payload of " + std::to_string(payload_len) +
                                           " bytes exceeds the messenger's limit of " +
                                           std::to_string(messenger_wire::MAX_PAYLOAD) + " bytes"));
    });
    return;
  }
  Buffer pl = payload ? *payload : Buffer{};
  channels_.get(peer_task, [=, this, header = std::move(header)](Result<Channel*> chr) mutable {
    if (!chr.ok()) return sent(chr.error());
    Channel& ch = *chr.value();
    if (state(ch)->failed) return sent(*state(ch)->failed);
    const uint64_t region = opt_.max_header + 64;
    const uint64_t eager = eager_limit ? std::min(eager_limit, opt_.eager_threshold) : opt_.eager_threshold;
    if (payload_len <= eager) {
      with_tx_slot(ch, [=, this, &ch](size_t slot) {
        Prefix p;
        p.type = EAGER;
        p.msg_id = next_msg_++;
        p.header = header;
        p.payload_len = payload_len;
        const Buffer& sb = state(ch)->tx[slot].mem;
        put_bytes(ctx_.runtime->memory(), sb, encode(p));
        auto post = [=, this, &ch](Status) {
          const double t0 = ctx_.runtime->now();
          post_send_slot(ch, slot, region + payload_len, [=, this](const verbs::WorkCompletion& wc) {
            if (rec) rec->add(Phase::WIRE, ctx_.runtime->now() - t0);
            sent(wc.ok() ? ok_status()
                         : Status(Error::status("Unavailable",
                                                std::string("eager send failed: ") + verbs::to_string(wc.status))));
          });
          posted();
        };
        if (payload_len == 0) return post(ok_status());
        if (rec) ++rec->copies;
        ctx_.memory->copy(sb.slice(region, payload_len), pl, payload_len,
                          rec ? timed(*ctx_.runtime, rec, Phase::COPY, post) : WorkDone(post));
      });
      return;
    }
    // Rendezvous: make the payload readable by the NIC (or, for a peer on this machine with the intra-node path,
    // by the peer process itself), announce it, wait for the FINs.
    const double t0 = ctx_.runtime->now();
    const uint64_t reg0 = ctx_.memory->stats().registrations;
    auto announce = [=, this, &ch](memory::NicBuffer view, bool has_view, uint64_t pipeline_block = 0) {
      // Every READ stays within the RC message limit: a longer payload is read in several (MPI libraries and
      // AR-gRPC's endpoint cut transfers at the port's max_msg_sz, as libfabric's verbs provider advertises it).
      const uint64_t chunk = std::min(pipeline_block     ? pipeline_block
                                      : chunk_override   ? chunk_override
                                      : opt_.chunk_bytes ? opt_.chunk_bytes
                                                         : payload_len,
                                      verbs::MAX_MESSAGE_BYTES);
      if (payload_len / chunk + (payload_len % chunk != 0) > UINT32_MAX) { // what an RTS may announce (decode)
        if (has_view) ctx_.memory->release(view);
        sent(Error::status("OutOfRange", "a message of " + std::to_string(payload_len) + " bytes in chunks of " +
                                             std::to_string(chunk) + " bytes needs more than 2^32 - 1 chunks"));
        return uint64_t(0);
      }
      Prefix p;
      p.flags = pipeline_block ? PIPELINED : 0;
      p.type = RTS;
      p.msg_id = next_msg_++;
      p.header = header;
      p.payload_len = payload_len;
      p.addr = has_view ? view.nic.addr : pl.addr;
      p.rkey = has_view ? advertised_rkey(ctx_.options, view.mr.rkey) : 0;
      p.chunk = chunk;
      Outgoing o;
      o.view = view;
      o.has_view = has_view;
      o.chunks_left = uint32_t(payload_len / chunk + (payload_len % chunk != 0)); // < 2^32: see the check above
      o.sent = sent;
      o.rec = rec;
      outgoing_[p.msg_id] = std::move(o);
      const auto bytes = encode(p);
      with_tx_slot(ch, [=, this, &ch](size_t slot) {
        put_bytes(ctx_.runtime->memory(), state(ch)->tx[slot].mem, bytes);
        post_send_slot(ch, slot, bytes.size(), [](const verbs::WorkCompletion&) {});
        posted();
      });
      return p.msg_id;
    };
    if (opt_.intra_node_copy) {
      auto proc = ctx_.cluster.find(peer_task);
      if (proc != ctx_.cluster.end() && ctx_.runtime->peer_memory(proc->second)) {
        announce(memory::NicBuffer{}, false); // the peer copies from this buffer directly
        return;
      }
    }
    Channel* chp = &ch;
    auto acquired = [=, this](Result<memory::NicBuffer> v) {
      if (!v.ok()) return sent(v.error());
      if (rec) {
        rec->add(Phase::REGISTRATION, ctx_.runtime->now() - t0);
        rec->registrations += uint32_t(ctx_.memory->stats().registrations - reg0);
        if (v->staged) ++rec->copies;
      }
      auto view = v.value();
      if (view.staged && opt_.staging_block > 0 && payload_len > opt_.staging_block) {
        // Pipelined staging (CUDA-aware MPI): announce at once, stage block by block, READY after each.
        const uint64_t id = announce(view, true, opt_.staging_block);
        if (id != 0) stage_block(chp, id, view, payload_len, 0, rec);
        return;
      }
      ctx_.memory->copy_in(view, payload_len, [=](Status st) {
        if (!st.ok()) return sent(st.error());
        announce(view, true);
      });
    };
    if (pl.location.is_gpu() && opt_.gpu_read_limit > 0 && payload_len > opt_.gpu_read_limit)
      ctx_.memory->acquire_staged_copy(pl, acquired);
    else
      ctx_.memory->acquire(pl, verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_READ, acquired);
  });
}

void Messenger::on_completion(Channel& ch, const verbs::WorkCompletion& wc)
{
  if (wc.opcode == verbs::WcOpcode::RECV || (wc.wr_id & RECV_FLAG)) {
    if (!wc.ok())
      return fail_channel(ch, Error::status("Unavailable", std::string("RDMA channel to ") + ch.peer_task +
                                                               " failed: " + verbs::to_string(wc.status)));
    return on_receive(ch, size_t(wc.wr_id & ~RECV_FLAG), wc.byte_len);
  }
  auto it = wr_done_.find(wc.wr_id);
  if (it != wr_done_.end()) {
    auto cb = std::move(it->second);
    wr_done_.erase(it);
    cb(wc);
  }
  if (!wc.ok())
    fail_channel(ch, Error::status("Unavailable", std::string("RDMA channel to ") + ch.peer_task +
                                                      " failed: " + verbs::to_string(wc.status)));
}

void Messenger::on_receive(Channel& ch, size_t slot, uint32_t len)
{
  ChannelState* s = state(ch);
  const Slot& rx = s->rx.at(slot);
  const uint64_t region = opt_.max_header + 64;
  const uint8_t* d = ctx_.runtime->memory().resolve(rx.mem.addr, std::min<uint64_t>(region, len));
  if (!d) return fail_channel(ch, Error::status("Internal", "no message bytes from " + ch.peer_task));
  auto decoded = messenger_wire::decode(d, std::min<uint64_t>(region, len),
                                        messenger_wire::Arrival{len, opt_.max_header, rx.mem.size - region});
  if (!decoded.ok()) {
    Error e = decoded.error();
    e.detail += " (from " + ch.peer_task + ")";
    return fail_channel(ch, e);
  }
  const Prefix p = std::move(decoded.value());
  Channel* chp = &ch;
  auto repost = [this, chp, slot] {
    ChannelState* st = state(*chp);
    verbs::RecvWr r;
    r.wr_id = RECV_FLAG | slot;
    r.sg_list.push_back({st->rx[slot].mem.addr, *verbs::sge_length(st->rx[slot].mem.size), st->rx[slot].mr.lkey});
    (void)chp->qp->post_recv(r);
  };
  if (p.type == PING || p.type == PONG) {
    repost();
    if (p.type == PING) {
      Prefix q;
      q.type = PONG;
      q.msg_id = p.msg_id;
      const auto bytes = encode(q);
      with_tx_slot(*chp, [this, chp, bytes](size_t sl) {
        put_bytes(ctx_.runtime->memory(), state(*chp)->tx[sl].mem, bytes);
        post_send_slot(*chp, sl, bytes.size(), [](const verbs::WorkCompletion&) {});
      });
      return;
    }
    auto it = pings_.find(p.msg_id);
    if (it == pings_.end()) return;
    auto [t0, done] = std::move(it->second);
    pings_.erase(it);
    return done(ctx_.runtime->now() - t0);
  }
  if (p.type == FIN) {
    repost();
    auto it = outgoing_.find(p.msg_id);
    if (it == outgoing_.end()) return;
    // A FIN acknowledges one chunk, or a train of them (p.chunk: how many); never more than are outstanding.
    const uint32_t acknowledged = uint32_t(std::min<uint64_t>(messenger_wire::fin_chunks(p), it->second.chunks_left));
    it->second.chunks_left -= acknowledged;
    if (it->second.chunks_left > 0) return;
    Outgoing o = std::move(it->second);
    outgoing_.erase(it);
    if (o.has_view) ctx_.memory->release(o.view);
    return o.sent(ok_status());
  }
  if (p.type == READY) {
    repost();
    const auto key = std::make_pair(&ch, p.msg_id);
    auto it = pipelined_.find(key);
    if (it == pipelined_.end()) {
      uint32_t& early = early_ready_[key];
      early = std::max(early, p.fin_chunk + 1);
      return;
    }
    auto r = it->second;
    r->ready = std::max(r->ready, p.fin_chunk + 1);
    read_more(r);
    return;
  }
  Incoming in{ch.peer_task, p.header, p.payload_len, p.type == EAGER};
  if (p.type == EAGER) {
    const Buffer src = rx.mem.slice(region, p.payload_len);
    handler_(std::move(in), [this, src, repost, p](const Buffer& dst, std::function<void(Status)> landed) {
      if (p.payload_len == 0) {
        repost();
        return landed(ok_status());
      }
      if (dst.size < p.payload_len) { // the receiver's protocol expected less than the peer sent
        repost();
        return landed(Error::status("Internal", "message payload of " + std::to_string(p.payload_len) +
                                                    " bytes for a destination of " + std::to_string(dst.size)));
      }
      ctx_.memory->copy(dst, src, p.payload_len, [repost, landed](Status st) {
        repost();
        landed(st);
      });
    });
    return;
  }
  // RTS: read the payload when the receiver has a destination.
  repost();
  handler_(std::move(in), [this, chp, p](const Buffer& dst, std::function<void(Status)> landed) {
    if (dst.size < p.payload_len) // the receiver's protocol expected less than the peer announced
      return landed(Error::status("Internal", "message payload of " + std::to_string(p.payload_len) +
                                                  " bytes for a destination of " + std::to_string(dst.size)));
    auto r = std::make_shared<Reading>();
    r->ch = chp;
    r->msg_id = p.msg_id;
    r->addr = p.addr;
    r->rkey = p.rkey;
    r->len = p.payload_len;
    r->chunks = messenger_wire::chunk_count(p);
    r->landed = std::move(landed);
    const uint64_t chunk = p.chunk;
    if (p.flags & PIPELINED) {
      const auto key = std::make_pair(chp, p.msg_id);
      r->pipelined = true;
      auto e = early_ready_.find(key);
      r->ready = e == early_ready_.end() ? 0 : e->second;
      if (e != early_ready_.end()) early_ready_.erase(e);
      pipelined_[key] = r;
    } else {
      r->ready = r->chunks;
    }
    if (opt_.intra_node_copy && copy_from_peer(r, dst)) return;
    ctx_.memory->acquire(dst, verbs::Access::LOCAL_WRITE, [this, r, chunk](Result<memory::NicBuffer> v) {
      if (!v.ok()) {
        pipelined_.erase(std::make_pair(r->ch, r->msg_id));
        return r->landed(v.error());
      }
      r->view = v.value();
      r->chunks = uint32_t(r->len / chunk + (r->len % chunk != 0));
      read_chunk_size_[r.get()] = chunk;
      r->view_ready = true;
      read_more(r);
    });
  });
}

uint64_t Messenger::chunk_len(const Reading& r, uint32_t k, uint32_t count) const
{
  const uint64_t c = read_chunk_size_.at(&r);
  const uint64_t off = uint64_t(k) * c;
  return std::min(c * count, r.len - off);
}

void Messenger::stage_block(Channel* ch, uint64_t msg_id, memory::NicBuffer view, uint64_t len, uint32_t k,
                            std::shared_ptr<TransferRecord> rec)
{
  const uint64_t block = opt_.staging_block;
  const uint64_t off = uint64_t(k) * block;
  if (off >= len) return;
  const uint64_t n = std::min(block, len - off);
  if (rec) ++rec->copies;
  const bool queued = k > 0; // the blocks follow each other on one stream
  ctx_.memory->copy(
      view.nic.slice(off, n), view.original.slice(off, n), n,
      [this, ch, msg_id, view, len, k, rec](Status st) {
        if (!st.ok() || state(*ch)->failed) return; // the reader times out on the channel failure
        Prefix r;
        r.type = READY;
        r.msg_id = msg_id;
        r.fin_chunk = k;
        const auto bytes = encode(r);
        with_tx_slot(*ch, [this, ch, bytes](size_t slot) {
          put_bytes(ctx_.runtime->memory(), state(*ch)->tx[slot].mem, bytes);
          post_send_slot(*ch, slot, bytes.size(), [](const verbs::WorkCompletion&) {});
        });
        stage_block(ch, msg_id, view, len, k + 1, rec);
      },
      queued);
}

void Messenger::send_fin(Channel& ch, uint64_t msg_id, uint32_t first, uint32_t count)
{
  Prefix f;
  f.type = FIN;
  f.msg_id = msg_id;
  f.fin_chunk = first;
  f.chunk = count > 1 ? count : 0; // a one-chunk FIN is encoded as the protocol's own
  const auto bytes = encode(f);
  Channel* chp = &ch;
  with_tx_slot(ch, [this, chp, bytes, count](size_t slot) {
    put_bytes(ctx_.runtime->memory(), state(*chp)->tx[slot].mem, bytes);
    // A train's FIN stands for the chunks' FINs on the simulated NIC (WQE processing, message rate).
    post_send_slot(
        *chp, slot, bytes.size(), [](const verbs::WorkCompletion&) {}, count);
  });
}

bool Messenger::copy_from_peer(const std::shared_ptr<Reading>& r, const Buffer& dst)
{
  auto proc = ctx_.cluster.find(r->ch->peer_task);
  if (proc == ctx_.cluster.end()) return false;
  MemorySpace* peer = ctx_.runtime->peer_memory(proc->second);
  if (!peer) return false;
  auto region = peer->find(r->addr);
  if (!region || r->addr + r->len > region->addr + region->size) return false;
  const Buffer src = region->slice(r->addr - region->addr, r->len);
  ctx_.runtime->execute(Work::memcpy(dst, src, r->len), [this, r](Status st) {
    if (st.ok())
      for (uint32_t k = 0; k < r->chunks; ++k)
        send_fin(*r->ch, r->msg_id, k);
    r->landed(st);
  });
  return true;
}

void Messenger::finish_read(const std::shared_ptr<Reading>& r, Status st)
{
  read_chunk_size_.erase(r.get());
  if (r->pipelined) pipelined_.erase(std::make_pair(r->ch, r->msg_id));
  ctx_.memory->release(r->view);
  r->landed(st);
}

void Messenger::read_more(const std::shared_ptr<Reading>& r)
{
  // Not acquired yet (the acquire callback starts the reads), failed, or every chunk asked for.
  if (!r->view_ready || r->failed || r->next_chunk >= r->chunks) return;
  // Chunk trains (MessengerOptions::read_train): up to `train` readable chunks per READ, as many bytes in flight.
  const uint64_t chunk = read_chunk_size_.at(r.get());
  const uint32_t train =
      uint32_t(std::clamp<uint64_t>(opt_.read_train, 1, std::max<uint64_t>(1, verbs::MAX_MESSAGE_BYTES / chunk)));
  const uint32_t window = std::max<uint32_t>(1, opt_.max_chunks_in_flight / train);
  while (!r->failed && r->next_chunk < r->chunks && r->next_chunk < r->ready && r->in_flight < window) {
    const uint32_t k = r->next_chunk;
    const uint32_t count = std::min({train, r->chunks - k, r->ready - k});
    r->next_chunk += count;
    const uint64_t off = uint64_t(k) * chunk;
    const uint64_t n = chunk_len(*r, k, count);
    verbs::SendWr w;
    w.wr_id = next_wr_++;
    w.opcode = verbs::WrOpcode::RDMA_READ;
    w.sg_list.push_back({r->view.nic.addr + off, *verbs::sge_length(n), r->view.mr.lkey}); // n <= MAX_MESSAGE_BYTES
    w.remote_addr = r->addr + off;
    w.rkey = r->rkey;
    w.stands_for = count; // the simulated NIC charges a train as the chunk READs it stands for
    ++r->in_flight;
    post(*r->ch, w, [this, r, k, count](const verbs::WorkCompletion& wc) {
      --r->in_flight;
      if (r->failed) return;
      if (!wc.ok()) {
        r->failed = true;
        ctx_.memory->release(r->view);
        read_chunk_size_.erase(r.get());
        pipelined_.erase(std::make_pair(r->ch, r->msg_id));
        return r->landed(
            Error::status("Unavailable", std::string("rendezvous READ failed: ") + verbs::to_string(wc.status)));
      }
      send_fin(*r->ch, r->msg_id, k, count);
      if (r->chunks > 1 && r->view.staged) {
        // Several chunks into a staging buffer: copy each out as it lands (pipelined), finish after the last.
        const uint64_t off = uint64_t(k) * read_chunk_size_.at(r.get());
        const uint64_t n = chunk_len(*r, k, count);
        ctx_.memory->copy(r->view.original.slice(off, n), r->view.nic.slice(off, n), n, [this, r, count](Status st) {
          if (!st.ok() && !r->failed) {
            r->failed = true;
            finish_read(r, st);
            return;
          }
          r->copied_chunks += count;
          if (r->copied_chunks == r->chunks) finish_read(r, ok_status());
        });
        r->done_chunks += count;
        read_more(r);
        return;
      }
      r->done_chunks += count;
      if (r->done_chunks == r->chunks) {
        ctx_.memory->copy_out(r->view, r->len, [this, r](Status st) { finish_read(r, st); });
        return;
      }
      read_more(r);
    });
  }
}

void Messenger::fail_channel(Channel& ch, const Error& e)
{
  ChannelState* s = state(ch);
  if (!s || s->failed) return;
  s->failed = e;
  // Fail what waits on this channel: rendezvous sends (their FINs will not come).
  std::vector<uint64_t> ids;
  for (auto& [id, o] : outgoing_)
    ids.push_back(id);
  for (uint64_t id : ids) {
    auto o = std::move(outgoing_.at(id));
    outgoing_.erase(id);
    if (o.has_view) ctx_.memory->release(o.view);
    o.sent(e);
  }
  if (handler_on_failure_) handler_on_failure_(ch.peer_task, e);
}

} // namespace tp::transports
