// verbs v2: message buffers and flow control, consumer request state machine, producer response state
// machine. Message layout and imm encoding follow docs/protocols.md, verbs_v2.
#include "core/transports/verbs_v2/verbs_v2.hpp"
#include "core/transports/rdma/rdma_channels.hpp"
#include "core/transports/verbs_v2/verbs_v2_wire.hpp"
#include "core/transports/wire_common.hpp"

#include <deque>
#include <unordered_map>

namespace tp::transports {

namespace verbs_v2_wire {

std::vector<uint8_t> encode(const Msg& m)
{
  rpc::Writer w;
  w.u8(uint8_t(m.type));
  w.str(m.name);
  w.u64(uint64_t(m.step));
  w.u32(m.index);
  w.u64(m.remote_addr);
  w.u32(m.rkey);
  write_meta(w, m.meta);
  w.str(m.error_code);
  w.str(m.error_text);
  return w.take();
}

Result<Msg> decode(const uint8_t* p, size_t n)
{
  auto bad = [](const char* field, const char* expected) {
    return Error::status("Internal", std::string("verbs v2: malformed message: ") + field + ": expected " + expected);
  };
  rpc::Reader r(p, n);
  Msg m;
  uint8_t type;
  uint64_t step;
  if (!r.u8(type) || type < 1 || type > 4) return bad("type", "1..4");
  if (!r.str(m.name, 512)) return bad("name", "a string of at most 512 bytes");
  if (!r.u64(step) || !r.u32(m.index) || !r.u64(m.remote_addr) || !r.u32(m.rkey))
    return bad("step, index, address, rkey", "4 integers");
  if (m.index > MAX_INDEX) return bad("index", "an index below the reserved immediates");
  if (!read_meta(r, m.meta)) return bad("meta-data", "dtype, dead flag, at most 16 dims, proto size");
  if (!r.str(m.error_code, 64) || !r.str(m.error_text, 4000)) return bad("error status", "two short strings");
  m.type = MsgType(type);
  m.step = int64_t(step);
  return m;
}

} // namespace verbs_v2_wire

namespace {

using verbs_v2_wire::decode;
using verbs_v2_wire::encode;
using verbs_v2_wire::HEADER_BYTES;
using verbs_v2_wire::IMM_ACK;
using verbs_v2_wire::IMM_MESSAGE;
using verbs_v2_wire::MAX_INDEX;
using verbs_v2_wire::MESSAGE_BUFFER;
using verbs_v2_wire::Msg;
using verbs_v2_wire::MsgType;

constexpr uint64_t WR_MESSAGE = 1, WR_ACK = 2, WR_CONTENT = 3;

/// Consumer side of one receive.
struct Request {
  int64_t step = 0;
  rendezvous::ParsedKey key;
  rendezvous::RecvArgs args;
  rendezvous::RecvCallback done;
  std::shared_ptr<TransferRecord> rec;
  Tensor result;
  memory::NicBuffer view;
  bool has_view = false;
  TensorMeta meta;
  double t_requested = -1; ///< when the (re-)request carrying the destination went out
};

/// Producer side of one response, parked while waiting for a TENSOR_RE_REQUEST.
struct Response {
  Tensor tensor; // the clone
  bool is_dead = false;
  std::shared_ptr<TransferRecord> rec;
};

struct V2Channel {
  Buffer tx, rx;
  verbs::MemoryRegion tx_mr, rx_mr;
  bool local_idle = true, remote_idle = true;
  std::deque<std::vector<uint8_t>> queue;
  uint32_t next_index = 0;
  std::unordered_map<uint32_t, std::shared_ptr<Request>> requests;
  std::unordered_map<uint32_t, std::shared_ptr<Response>> responses;
  std::unordered_map<uint64_t, std::function<void(const verbs::WorkCompletion&)>> content_writes;
  std::unordered_map<uint64_t, uint64_t> content_bytes; ///< length of each content write in flight
  uint64_t next_wr = 16;
  std::optional<Error> failed;
};

class VerbsV2 final : public Transport {
public:
  explicit VerbsV2(const TaskContext& ctx)
      : ctx_(ctx), rpc_(*ctx.runtime, *ctx.streams, ctx.options.rpc_port),
        channels_(
            ctx, rpc_, channel_options(ctx), [this](Channel& ch) { return init_channel(ch); },
            [](Channel& ch) {
              auto* s = static_cast<V2Channel*>(ch.state.get());
              return std::vector<RemoteBuffer>{{s->rx.addr, s->rx_mr.rkey, s->rx.size}};
            },
            [this](Channel& ch, const verbs::WorkCompletion& wc) { on_completion(ch, wc); })
  {
  }
  const char* name() const override { return "verbs_v2"; }
  void start(std::function<void(Status)> done) override
  {
    Status st = rpc_.start();
    ctx_.runtime->post([st, done] { done(st); });
  }
  void shutdown() override { rpc_.shutdown(); }

  void recv_from_remote_async(int64_t step, const rendezvous::ParsedKey& key, const rendezvous::RecvArgs& args,
                              rendezvous::RecvCallback done) override
  {
    auto req = std::make_shared<Request>();
    req->step = step;
    req->key = key;
    req->args = args;
    req->done = std::move(done);
    req->rec = std::make_shared<TransferRecord>();
    auto& rec = *req->rec;
    rec.transport = "verbs_v2";
    rec.side = Side::CONSUMER;
    rec.step = step;
    rec.key = key.full;
    rec.local_task = ctx_.task;
    rec.peer_task = key.src.task_name();
    rec.dst_location = args.dst_location.to_string();
    rec.t_start = ctx_.runtime->now();
    channels_.get(key.src.task_name(), [this, req](Result<Channel*> ch) {
      if (!ch.ok()) return finish(req, ch.error());
      auto* st = state(*ch.value());
      if (st->failed) return finish(req, *st->failed);
      uint32_t idx = st->next_index;
      st->next_index = st->next_index >= MAX_INDEX ? 0 : st->next_index + 1;
      st->requests[idx] = req;
      auto cached = meta_cache_.find(req->key.name_without_frame());
      if (cached == meta_cache_.end()) {
        Msg m;
        m.type = MsgType::TENSOR_REQUEST;
        m.name = req->key.full;
        m.step = req->step;
        m.index = idx;
        m.meta.dtype = DataType::INVALID;
        send_msg(*ch.value(), m);
        return;
      }
      req->meta = cached->second;
      prepare_destination(*ch.value(), idx, req, MsgType::TENSOR_REQUEST);
    });
  }

private:
  static RdmaChannels::Options channel_options(const TaskContext& ctx)
  {
    RdmaChannels::Options o;
    o.service = "VerbsService.GetRemoteAddress";
    o.queue_depth = ctx.options.of<VerbsV2Options>().queue_depth;
    o.recv_wrs = o.queue_depth - 1; // queue_depth - 1 receives + the ping in TF
    o.rc.access = verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_WRITE;
    o.fatal_wc_errors = true; // RdmaAdapter::Process_CQ CHECKs every completion's status
    o.describe_failure = [](Channel& ch, const verbs::WorkCompletion& wc) { return describe(ch, wc); };
    return o;
  }

  static V2Channel* state(Channel& ch) { return static_cast<V2Channel*>(ch.state.get()); }

  /// A failed content write that was longer than the RC message limit: its size and the limit.
  static std::string describe(Channel& ch, const verbs::WorkCompletion& wc)
  {
    auto* s = state(ch);
    if (!s || wc.status != verbs::WcStatus::LOC_LEN_ERR) return {};
    auto it = s->content_bytes.find(wc.wr_id);
    if (it == s->content_bytes.end() || it->second <= verbs::MAX_MESSAGE_BYTES) return {};
    return verbs::oversized_message("the tensor content WRITE_WITH_IMM", it->second);
  }

  Status init_channel(Channel& ch)
  {
    auto s = std::make_shared<V2Channel>();
    AllocAttr a = AllocAttr::at(Location::host(ctx_.cpu_numa_node), HostMemoryKind::PINNED);
    a.materialize = true; // control messages are real bytes in every mode
    auto tx = ctx_.runtime->memory().allocate(MESSAGE_BUFFER, a);
    auto rx = ctx_.runtime->memory().allocate(MESSAGE_BUFFER, a);
    if (!tx.ok()) return tx.error();
    if (!rx.ok()) return rx.error();
    s->tx = tx.value();
    s->rx = rx.value();
    auto txm = ctx_.device->reg_mr(s->tx.addr, s->tx.size, verbs::Access::LOCAL_WRITE);
    auto rxm = ctx_.device->reg_mr(s->rx.addr, s->rx.size, verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_WRITE);
    if (!txm.ok()) return txm.error();
    if (!rxm.ok()) return rxm.error();
    s->tx_mr = txm.value();
    s->rx_mr = rxm.value();
    ch.state = s;
    return ok_status();
  }

  // ---- control messages: stop-and-wait on one buffer per direction ----
  void send_msg(Channel& ch, const Msg& m)
  {
    state(ch)->queue.push_back(encode(m));
    pump(ch);
  }

  void pump(Channel& ch)
  {
    V2Channel* s = state(ch);
    if (s->failed || !s->local_idle || !s->remote_idle || s->queue.empty()) return;
    std::vector<uint8_t> bytes = std::move(s->queue.front());
    s->queue.pop_front();
    s->local_idle = s->remote_idle = false;
    put_bytes(ctx_.runtime->memory(), s->tx, bytes);
    verbs::SendWr w;
    w.wr_id = WR_MESSAGE;
    w.opcode = verbs::WrOpcode::RDMA_WRITE_WITH_IMM;
    // At most MESSAGE_BUFFER bytes (encode keeps the error text within the error-status area).
    const uint64_t len = std::min<uint64_t>(std::max<uint64_t>(bytes.size(), HEADER_BYTES), s->tx.size);
    w.sg_list.push_back({s->tx.addr, *verbs::sge_length(len), s->tx_mr.lkey});
    w.imm_data = IMM_MESSAGE;
    w.remote_addr = ch.remote_buffers.at(0).addr;
    w.rkey = ch.remote_buffers.at(0).rkey;
    if (auto st = ch.qp->post_send(w); !st.ok()) fail_channel(ch, st.error());
  }

  void send_ack(Channel& ch)
  {
    verbs::SendWr w;
    w.wr_id = WR_ACK;
    w.opcode = verbs::WrOpcode::RDMA_WRITE_WITH_IMM;
    w.imm_data = IMM_ACK;
    w.signaled = false;
    w.remote_addr = ch.remote_buffers.at(0).addr;
    w.rkey = ch.remote_buffers.at(0).rkey;
    if (auto st = ch.qp->post_send(w); !st.ok()) fail_channel(ch, st.error());
  }

  void on_completion(Channel& ch, const verbs::WorkCompletion& wc)
  {
    V2Channel* s = state(ch);
    if (!wc.ok()) {
      std::string what = verbs::to_string(wc.status);
      if (const std::string d = describe(ch, wc); !d.empty()) what += ": " + d;
      if (auto it = s->content_writes.find(wc.wr_id); it != s->content_writes.end()) {
        // The producer's record of this write says it failed, and why.
        auto cb = std::move(it->second);
        s->content_writes.erase(it);
        s->content_bytes.erase(wc.wr_id);
        cb(wc);
      }
      fail_channel(ch,
                   Error::status("Unavailable", std::string("RDMA channel to ") + ch.peer_task + " failed: " + what));
      return;
    }
    if (wc.opcode == verbs::WcOpcode::RECV_RDMA_WITH_IMM) {
      (void)channels_.post_receives(ch, 1);
      if (wc.imm_data == IMM_ACK) {
        s->remote_idle = true;
        pump(ch);
      } else if (wc.imm_data == IMM_MESSAGE) {
        // Never look past our message buffer, whatever length the completion reports.
        const uint64_t len = std::min<uint64_t>(wc.byte_len, s->rx.size);
        const uint8_t* p = ctx_.runtime->memory().resolve(s->rx.addr, len);
        auto m = p ? decode(p, len) : Result<Msg>(Error::status("Internal", "verbs v2: no message bytes"));
        if (!m.ok()) {
          Error e = m.error();
          e.detail += " (from " + ch.peer_task + ")";
          fail_channel(ch, e);
          return;
        }
        send_ack(ch); // the peer's tx buffer is free as soon as we have parsed it
        handle(ch, *m);
      } else {
        content_arrived(ch, wc.imm_data);
      }
      return;
    }
    if (wc.wr_id == WR_MESSAGE) {
      s->local_idle = true;
      pump(ch);
      return;
    }
    auto it = s->content_writes.find(wc.wr_id);
    if (it != s->content_writes.end()) {
      auto cb = std::move(it->second);
      s->content_writes.erase(it);
      s->content_bytes.erase(wc.wr_id);
      cb(wc);
    }
  }

  void fail_channel(Channel& ch, const Error& e)
  {
    V2Channel* s = state(ch);
    if (!s->failed) s->failed = e;
    auto reqs = std::move(s->requests);
    s->requests.clear();
    for (auto& [idx, r] : reqs)
      finish(r, e);
  }

  // ---- consumer ----
  void prepare_destination(Channel& ch, uint32_t idx, std::shared_ptr<Request> req, MsgType type)
  {
    const TensorMeta meta = req->meta;
    Msg m;
    m.type = type;
    m.name = req->key.full;
    m.step = req->step;
    m.index = idx;
    m.meta = meta;
    if (meta.is_dead || meta.total_bytes() == 0) {
      Tensor t;
      t.dtype = meta.dtype;
      t.shape = meta.shape;
      req->result = t;
      req->t_requested = ctx_.runtime->now();
      send_msg(ch, m);
      return;
    }
    AllocatorAttributes attrs = req->args.alloc_attrs;
    attrs.nic_compatible = true;
    auto t = ctx_.memory->allocate(meta.dtype, meta.shape, req->args.dst_location, attrs, meta.proto_bytes);
    if (!t.ok()) return fail_request(ch, idx, t.error());
    req->result = t.value();
    const double t0 = ctx_.runtime->now();
    const uint64_t reg0 = ctx_.memory->stats().registrations;
    ctx_.memory->acquire(*req->result.buffer(), verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_WRITE,
                         [this, &ch, idx, req, m, t0, reg0](Result<memory::NicBuffer> v) mutable {
                           if (!v.ok()) return fail_request(ch, idx, v.error());
                           req->rec->add(Phase::REGISTRATION, ctx_.runtime->now() - t0);
                           req->rec->registrations += uint32_t(ctx_.memory->stats().registrations - reg0);
                           req->view = v.value();
                           req->has_view = true;
                           m.remote_addr = req->view.nic.addr;
                           m.rkey = advertised_rkey(ctx_.options, req->view.mr.rkey);
                           req->t_requested = ctx_.runtime->now();
                           send_msg(ch, m);
                         });
  }

  void fail_request(Channel& ch, uint32_t idx, const Error& e)
  {
    auto* s = state(ch);
    auto it = s->requests.find(idx);
    if (it == s->requests.end()) return;
    auto r = it->second;
    s->requests.erase(it);
    finish(r, e);
  }

  void content_arrived(Channel& ch, uint32_t idx)
  {
    auto* s = state(ch);
    auto it = s->requests.find(idx);
    if (it == s->requests.end()) return;
    auto req = it->second;
    s->requests.erase(it);
    req->rec->bytes = req->meta.total_bytes();
    // From the request that carried the destination to the content's arrival: the request's trip, the
    // producer's write and the data on the wire (the producer's own copies are in its record).
    if (req->t_requested >= 0) req->rec->add(Phase::WIRE, ctx_.runtime->now() - req->t_requested);
    if (!req->has_view) return finish(req, rendezvous::RecvOutcome{req->result, req->meta.is_dead});
    // A proxy (staged) destination: copy into the real result (host copy or H2D).
    const bool pcie = req->view.staged && req->result.location().is_gpu();
    if (req->view.staged) ++req->rec->copies;
    ctx_.memory->copy_out(req->view, req->meta.total_bytes(),
                          timed(*ctx_.runtime, req->rec, pcie ? Phase::PCIE : Phase::COPY, [this, req](Status st) {
                            ctx_.memory->release(req->view);
                            req->has_view = false;
                            if (!st.ok()) return finish(req, st.error());
                            finish(req, rendezvous::RecvOutcome{req->result, req->meta.is_dead});
                          }));
  }

  void finish(const std::shared_ptr<Request>& req, Result<rendezvous::RecvOutcome> r)
  {
    if (req->has_view) {
      ctx_.memory->release(req->view);
      req->has_view = false;
    }
    req->rec->t_end = ctx_.runtime->now();
    req->rec->ok = r.ok();
    req->rec->is_dead = r.ok() && r->is_dead;
    if (!r.ok()) req->rec->error = r.error().message();
    if (ctx_.log) ctx_.log->add(*req->rec);
    auto done = std::move(req->done);
    if (done) done(std::move(r));
  }

  // ---- both sides: incoming control messages ----
  void handle(Channel& ch, const Msg& m)
  {
    auto* s = state(ch);
    switch (m.type) {
    case MsgType::TENSOR_REQUEST:
      return serve_request(ch, m);
    case MsgType::TENSOR_RE_REQUEST: {
      auto it = s->responses.find(m.index);
      if (it == s->responses.end()) return;
      auto resp = it->second;
      s->responses.erase(it);
      send_content(ch, m, resp->tensor, resp->is_dead, resp->rec);
      return;
    }
    case MsgType::META_DATA_UPDATE: {
      auto it = s->requests.find(m.index);
      if (it == s->requests.end()) return;
      auto req = it->second;
      meta_cache_[req->key.name_without_frame()] = m.meta;
      if (req->has_view) {
        ctx_.memory->release(req->view);
        req->has_view = false;
      }
      req->result = Tensor{};
      req->meta = m.meta;
      prepare_destination(ch, m.index, req, MsgType::TENSOR_RE_REQUEST);
      return;
    }
    case MsgType::ERROR_STATUS:
      fail_request(ch, m.index, Error::status(m.error_code, m.error_text));
      return;
    }
  }

  // ---- producer ----
  void send_error(Channel& ch, uint32_t idx, const std::string& name, int64_t step, const Error& e)
  {
    Msg err;
    err.type = MsgType::ERROR_STATUS;
    err.index = idx;
    err.name = name;
    err.step = step;
    err.error_code = e.code.empty() ? "Internal" : e.code;
    err.error_text = e.text().substr(0, 3900);
    send_msg(ch, err);
  }

  void serve_request(Channel& ch, const Msg& m)
  {
    auto key = rendezvous::parse_key(m.name);
    if (!key.ok()) return send_error(ch, m.index, m.name, m.step, key.error());
    if (key->src_incarnation != ctx_.incarnation)
      return send_error(
          ch, m.index, m.name, m.step,
          Error::status("Aborted", "verbs request for a different device incarnation: worker was probably restarted"));
    auto rec = std::make_shared<TransferRecord>();
    rec->transport = "verbs_v2";
    rec->side = Side::PRODUCER;
    rec->step = m.step;
    rec->key = m.name;
    rec->local_task = ctx_.task;
    rec->peer_task = ch.peer_task;
    rec->t_start = ctx_.runtime->now();
    Channel* chp = &ch;
    ctx_.rendezvous->recv_local_async(m.step, key.value(), [this, chp, m, rec](Result<rendezvous::RecvOutcome> got) {
      if (!got.ok()) {
        rec->ok = false;
        rec->error = got.error().message();
        log(rec);
        return send_error(*chp, m.index, m.name, m.step, got.error());
      }
      const Tensor t = got->tensor;
      const TensorMeta have = TensorMeta::of(t, got->is_dead);
      rec->src_location = t.location().to_string();
      // Before any clone or META_DATA_UPDATE: a tensor whose write would wrap never gets that far.
      if (!got->is_dead && refuse_wrapping(*chp, m, have.total_bytes(), rec)) return;
      if (have.same(m.meta)) return send_content(*chp, m, t, got->is_dead, rec);
      // Stale or missing meta-data: clone (the source buffer may be reused before the re-request) and tell.
      auto park = [this, chp, m, have, rec](Tensor clone, bool dead) {
        auto resp = std::make_shared<Response>();
        resp->tensor = clone;
        resp->is_dead = dead;
        resp->rec = rec;
        state(*chp)->responses[m.index] = resp;
        Msg up;
        up.type = MsgType::META_DATA_UPDATE;
        up.name = m.name;
        up.step = m.step;
        up.index = m.index;
        up.meta = have;
        send_msg(*chp, up);
      };
      if (got->is_dead || have.total_bytes() == 0) return park(t, got->is_dead);
      auto clone = ctx_.memory->allocate(t.dtype, t.shape, Location::host(ctx_.cpu_numa_node),
                                         AllocatorAttributes{true, true, true}, t.proto_bytes);
      if (!clone.ok()) return send_error(*chp, m.index, m.name, m.step, clone.error());
      Tensor c = clone.value();
      ++rec->copies;
      const bool pcie = t.location().is_gpu();
      ctx_.memory->copy(
          *c.buffer(), *t.buffer(), have.total_bytes(),
          // The source stays referenced until the copy is done (its buffer could be reused otherwise).
          timed(*ctx_.runtime, rec, pcie ? Phase::PCIE : Phase::COPY, [park, c, t](Status) { park(c, false); }));
    });
  }

  /// TF's RdmaMessageBuffer::Write assigns the size_t length to ibv_sge.length: for 4 GiB and more the original
  /// writes `n mod 2^32` bytes and the consumer takes them for the whole tensor (silent corruption), or the wrapped
  /// length is still over the RC limit (LOC_LEN_ERR). Refused instead (true): the consumer's Recv gets the reason.
  bool refuse_wrapping(Channel& ch, const Msg& req, uint64_t n, const std::shared_ptr<TransferRecord>& rec)
  {
    if (verbs::sge_length(n)) return false;
    const Error e =
        Error::status("OutOfRange", "verbs_v2: " + verbs::sge_wraps("the tensor content WRITE_WITH_IMM", n) +
                                        "; TF verbs would corrupt the tensor silently: refused");
    rec->bytes = n;
    rec->ok = false;
    rec->error = e.message();
    log(rec);
    send_error(ch, req.index, req.name, req.step, e);
    return true;
  }

  void send_content(Channel& ch, const Msg& req, const Tensor& t, bool dead, std::shared_ptr<TransferRecord> rec)
  {
    const uint64_t n = dead ? 0 : t.total_bytes();
    rec->bytes = n;
    rec->is_dead = dead;
    if (refuse_wrapping(ch, req, n, rec)) return;
    Channel* chp = &ch;
    auto post = [this, chp, req, rec, t, n](const memory::NicBuffer* view) {
      V2Channel* s = state(*chp);
      verbs::SendWr w;
      w.wr_id = s->next_wr++;
      w.opcode = verbs::WrOpcode::RDMA_WRITE_WITH_IMM;
      w.imm_data = req.index;
      w.remote_addr = req.remote_addr;
      w.rkey = req.rkey;
      if (view) w.sg_list.push_back({view->nic.addr, *verbs::sge_length(n), view->mr.lkey}); // checked above
      s->content_bytes[w.wr_id] = n;
      memory::NicBuffer v = view ? *view : memory::NicBuffer{};
      const bool release = view != nullptr;
      const double t0 = ctx_.runtime->now();
      s->content_writes[w.wr_id] = [this, rec, t, v, release, t0, n](const verbs::WorkCompletion& wc) {
        rec->add(Phase::WIRE, ctx_.runtime->now() - t0);
        if (release) ctx_.memory->release(v);
        rec->ok = wc.ok();
        if (!wc.ok()) {
          rec->error = verbs::to_string(wc.status);
          if (wc.status == verbs::WcStatus::LOC_LEN_ERR && n > verbs::MAX_MESSAGE_BYTES)
            rec->error += ": " + verbs::oversized_message("the tensor content WRITE_WITH_IMM", n);
        }
        log(rec);
      };
      if (auto st = chp->qp->post_send(w); !st.ok()) {
        s->content_writes.erase(w.wr_id);
        s->content_bytes.erase(w.wr_id);
        fail_channel(*chp, st.error());
      }
    };
    if (n == 0) return post(nullptr);
    const double t0 = ctx_.runtime->now();
    const uint64_t reg0 = ctx_.memory->stats().registrations;
    ctx_.memory->acquire(*t.buffer(), verbs::Access::LOCAL_WRITE,
                         [this, chp, req, rec, t, n, post, t0, reg0](Result<memory::NicBuffer> v) {
                           if (!v.ok()) return send_error(*chp, req.index, req.name, req.step, v.error());
                           rec->add(Phase::REGISTRATION, ctx_.runtime->now() - t0);
                           rec->registrations += uint32_t(ctx_.memory->stats().registrations - reg0);
                           auto view = std::make_shared<memory::NicBuffer>(v.value());
                           if (view->staged) ++rec->copies;
                           const bool pcie = view->staged && t.location().is_gpu();
                           ctx_.memory->copy_in(*view, n,
                                                timed(*ctx_.runtime, rec, pcie ? Phase::PCIE : Phase::COPY,
                                                      [post, view](Status) { post(view.get()); }));
                         });
  }

  void log(const std::shared_ptr<TransferRecord>& rec)
  {
    rec->t_end = ctx_.runtime->now();
    if (ctx_.log) ctx_.log->add(*rec);
  }

  TaskContext ctx_;
  rpc::RpcNode rpc_;
  RdmaChannels channels_;
  std::unordered_map<std::string, TensorMeta> meta_cache_;
};

} // namespace

std::unique_ptr<Transport> make_verbs_v2_transport(const TaskContext& ctx)
{
  return std::make_unique<VerbsV2>(ctx);
}

TransportInfo verbs_v2_transport_info()
{
  return {"verbs_v2",
          "TF verbs with 0 copies: TENSOR_REQUEST with the destination, WRITE_WITH_IMM into it (Mellanox, TF >= 1.8)",
          true,
          make_verbs_v2_transport,
          "a work completion with an error status is a fatal CHECK (process abort); only producer-side errors "
          "(unknown tensor, restarted worker) travel back as ERROR_STATUS and fail the step with a status",
          {}};
}

} // namespace tp::transports
