// verbs v1: buffers with local/remote status and job queues, stop-and-wait message buffer with ACKs,
// BUFFER_REQUEST/RESPONSE on first use and growth, BUFFER_IDLE after the consumer copied the tensor out.
#include "core/transports/verbs_v1/verbs_v1.hpp"
#include "core/transports/rdma/rdma_channels.hpp"
#include "core/transports/verbs_v1/verbs_v1_wire.hpp"
#include "core/transports/wire_common.hpp"

#include <deque>
#include <optional>
#include <unordered_map>

namespace tp::transports {

uint32_t verbs_v1_buffer_hash(const std::string& name)
{
  uint32_t h = 2166136261u ^ 0x1234ABCDu; // FNV-1a, seeded like TF's Hash32(name, 0x1234ABCD)
  for (unsigned char c : name) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

namespace verbs_v1_wire {

std::vector<uint8_t> encode(const Msg& m)
{
  rpc::Writer w;
  w.u8(uint8_t(m.type));
  w.str(m.name);
  w.u64(uint64_t(m.step));
  w.u64(m.buffer_size);
  w.u64(m.remote_addr);
  w.u32(m.rkey);
  write_meta(w, m.meta);
  w.str(m.error_code);
  w.str(m.error_text.substr(0, 100));
  return w.take();
}

Result<Msg> decode(const uint8_t* p, size_t n)
{
  auto bad = [](const char* field, const char* expected) {
    return Error::status("Internal",
                         std::string("verbs v1: malformed message header: ") + field + ": expected " + expected);
  };
  rpc::Reader r(p, n);
  Msg m;
  uint8_t t;
  uint64_t step;
  if (!r.u8(t) || t < 1 || t > 7) return bad("type", "1..7");
  if (!r.str(m.name, 512)) return bad("name", "a string of at most 512 bytes");
  if (!r.u64(step) || !r.u64(m.buffer_size) || !r.u64(m.remote_addr) || !r.u32(m.rkey))
    return bad("step, buffer size, address, rkey", "4 integers");
  if (!read_meta(r, m.meta)) return bad("meta-data", "dtype, dead flag, at most 16 dims, proto size");
  if (!r.str(m.error_code, 32) || !r.str(m.error_text, 100)) return bad("error status", "two short strings");
  m.type = MsgType(t);
  m.step = int64_t(step);
  if ((m.type == MsgType::BUFFER_REQUEST || m.type == MsgType::BUFFER_RESPONSE) &&
      (m.buffer_size < HEADER || m.buffer_size > MAX_BUFFER))
    return bad("buffer size", "a size within [720 B, 1 TiB]");
  return m;
}

Result<uint64_t> payload_bytes(const Msg& m, uint64_t buffer_size)
{
  const uint64_t n = m.meta.is_dead ? 0 : m.meta.total_bytes();
  if (buffer_size < HEADER || n > buffer_size - HEADER)
    return Error::status("Internal", "verbs v1: " + m.name + ": header announces " + std::to_string(n) +
                                         " bytes, the buffer holds " +
                                         std::to_string(buffer_size < HEADER ? 0 : buffer_size - HEADER));
  return n;
}

} // namespace verbs_v1_wire

namespace {

using verbs_v1_wire::decode;
using verbs_v1_wire::encode;
using verbs_v1_wire::HEADER;
using verbs_v1_wire::Msg;
using verbs_v1_wire::MsgType;

constexpr uint64_t WR_MESSAGE = 1, WR_ACK = 2, WR_TENSOR = 3;
const char* const RX_MESSAGE = "rx_message_buffer";
const char* const RX_ACK = "rx_ack_buffer";

enum class BufStatus : uint8_t { NONE, IDLE, BUSY };

/// One of a channel's buffers (message, ACK, or per-tensor).
struct RdmaBuffer {
  std::string name;
  Buffer mem;
  verbs::MemoryRegion mr;
  bool has_memory = false;
  RemoteBuffer remote;
  BufStatus local = BufStatus::NONE, remote_status = BufStatus::NONE;
  std::deque<std::pair<std::string, int64_t>> queue; ///< tensor buffer: pending "K;step" requests
  struct Stash {
    Tensor tensor;
    bool dead = false;
    int64_t step = 0;
    std::shared_ptr<TransferRecord> rec;
  };
  std::optional<Stash> resend;               ///< tensor waiting for a BUFFER_RESPONSE or for BUFFER_IDLE
  bool producing = false;                    ///< a request is between recv_local_async and the write
  std::deque<std::vector<uint8_t>> messages; ///< message buffer: queued messages
};

/// Consumer side of one receive.
struct Pending {
  rendezvous::RecvArgs args;
  rendezvous::RecvCallback done;
  std::shared_ptr<TransferRecord> rec;
};

struct V1Channel {
  RdmaBuffer tx_message, rx_message, tx_ack, rx_ack;
  std::unordered_map<std::string, std::unique_ptr<RdmaBuffer>> tensors; ///< by tensor name
  std::unordered_map<uint32_t, RdmaBuffer*> by_hash;
  std::unordered_map<std::string, Pending> callbacks; ///< "K;step"
  struct TensorWrite {
    RdmaBuffer* buffer = nullptr;
    uint64_t bytes = 0; ///< the WRITE_WITH_IMM's length: header + payload
    std::shared_ptr<TransferRecord> rec;
  };
  std::unordered_map<uint64_t, TensorWrite> tensor_writes;
  uint64_t next_wr = 16;
  std::optional<Error> failed;
};

std::string job_key(const std::string& k, int64_t step)
{
  return k + ";" + std::to_string(step);
}

class VerbsV1 final : public Transport {
public:
  explicit VerbsV1(const TaskContext& ctx)
      : ctx_(ctx), rpc_(*ctx.runtime, *ctx.streams, ctx.options.rpc_port),
        channels_(
            ctx, rpc_, channel_options(), [this](Channel& ch) { return init_channel(ch); },
            [](Channel& ch) {
              auto* s = state(ch);
              return std::vector<RemoteBuffer>{{s->rx_message.mem.addr, s->rx_message.mr.rkey, HEADER},
                                               {s->rx_ack.mem.addr, s->rx_ack.mr.rkey, HEADER}};
            },
            [this](Channel& ch, const verbs::WorkCompletion& wc) { on_completion(ch, wc); })
  {
  }
  const char* name() const override { return "verbs_v1"; }
  void start(std::function<void(Status)> done) override
  {
    Status st = rpc_.start();
    ctx_.runtime->post([st, done] { done(st); });
  }
  void shutdown() override { rpc_.shutdown(); }

  void recv_from_remote_async(int64_t step, const rendezvous::ParsedKey& key, const rendezvous::RecvArgs& args,
                              rendezvous::RecvCallback done) override
  {
    auto rec = std::make_shared<TransferRecord>();
    rec->transport = "verbs_v1";
    rec->side = Side::CONSUMER;
    rec->step = step;
    rec->key = key.full;
    rec->local_task = ctx_.task;
    rec->peer_task = key.src.task_name();
    rec->dst_location = args.dst_location.to_string();
    rec->t_start = ctx_.runtime->now();
    const std::string name = key.full;
    channels_.get(key.src.task_name(), [this, step, name, args, done, rec](Result<Channel*> ch) {
      if (!ch.ok()) return finish(Pending{args, done, rec}, ch.error());
      auto* s = state(*ch.value());
      if (s->failed) return finish(Pending{args, done, rec}, *s->failed);
      s->callbacks[job_key(name, step)] = Pending{args, done, rec};
      Msg m;
      m.type = MsgType::TENSOR_REQUEST;
      m.name = name;
      m.step = step;
      send_msg(*ch.value(), m);
    });
  }

private:
  static RdmaChannels::Options channel_options()
  {
    RdmaChannels::Options o;
    o.service = "VerbsService.GetRemoteAddress";
    o.queue_depth = 1024;
    o.recv_wrs = 100; // 100 receive WRs pre-posted per channel
    o.rc.access = verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_WRITE;
    o.fatal_wc_errors = true; // RdmaAdapter::Process_CQ CHECKs every completion's status
    o.describe_failure = [](Channel& ch, const verbs::WorkCompletion& wc) { return describe(ch, wc); };
    return o;
  }

  static V1Channel* state(Channel& ch) { return static_cast<V1Channel*>(ch.state.get()); }

  /// A failed tensor write that was longer than the RC message limit: its size and the limit.
  static std::string describe(Channel& ch, const verbs::WorkCompletion& wc)
  {
    auto* s = state(ch);
    if (!s || wc.status != verbs::WcStatus::LOC_LEN_ERR) return {};
    auto it = s->tensor_writes.find(wc.wr_id);
    if (it == s->tensor_writes.end() || it->second.bytes <= verbs::MAX_MESSAGE_BYTES) return {};
    return verbs::oversized_message(
        ("the WRITE_WITH_IMM of a tensor of " + std::to_string(it->second.bytes - HEADER) + " bytes and its header")
            .c_str(),
        it->second.bytes);
  }

  Status make_fixed(V1Channel& s, RdmaBuffer& b, const std::string& name)
  {
    AllocAttr a = AllocAttr::at(Location::host(ctx_.cpu_numa_node), HostMemoryKind::PINNED);
    a.materialize = true;
    auto m = ctx_.runtime->memory().allocate(HEADER, a);
    if (!m.ok()) return m.error();
    auto mr = ctx_.device->reg_mr(m->addr, m->size, verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_WRITE);
    if (!mr.ok()) return mr.error();
    b.name = name;
    b.mem = m.value();
    b.mr = mr.value();
    b.has_memory = true;
    b.local = b.remote_status = BufStatus::IDLE;
    s.by_hash[verbs_v1_buffer_hash(name)] = &b;
    return ok_status();
  }

  Status init_channel(Channel& ch)
  {
    auto s = std::make_shared<V1Channel>();
    TP_TRY(make_fixed(*s, s->tx_message, "tx_message_buffer"));
    TP_TRY(make_fixed(*s, s->rx_message, RX_MESSAGE));
    TP_TRY(make_fixed(*s, s->tx_ack, "tx_ack_buffer"));
    TP_TRY(make_fixed(*s, s->rx_ack, RX_ACK));
    ch.state = s;
    return ok_status();
  }

  RdmaBuffer& tensor_buffer(V1Channel& s, const std::string& name)
  {
    auto& p = s.tensors[name];
    if (!p) {
      p = std::make_unique<RdmaBuffer>();
      p->name = name;
      s.by_hash[verbs_v1_buffer_hash(name)] = p.get();
    }
    return *p;
  }

  // ---- message buffer: stop-and-wait, one message in flight per direction ----
  void send_msg(Channel& ch, const Msg& m)
  {
    state(ch)->tx_message.messages.push_back(encode(m));
    pump_messages(ch);
  }

  void pump_messages(Channel& ch)
  {
    V1Channel* s = state(ch);
    RdmaBuffer& tx = s->tx_message;
    if (s->failed || tx.messages.empty() || tx.local != BufStatus::IDLE || tx.remote_status != BufStatus::IDLE) return;
    auto bytes = std::move(tx.messages.front());
    tx.messages.pop_front();
    tx.local = tx.remote_status = BufStatus::BUSY;
    put_bytes(ctx_.runtime->memory(), tx.mem, bytes);
    post_write(ch, WR_MESSAGE, tx, HEADER, ch.remote_buffers.at(0), verbs_v1_buffer_hash(RX_MESSAGE), true);
  }

  void send_ack(Channel& ch)
  {
    V1Channel* s = state(ch);
    Msg a;
    a.type = MsgType::ACK;
    a.name = RX_ACK;
    put_bytes(ctx_.runtime->memory(), s->tx_ack.mem, encode(a));
    post_write(ch, WR_ACK, s->tx_ack, HEADER, ch.remote_buffers.at(1), verbs_v1_buffer_hash(RX_ACK), false);
  }

  void post_write(Channel& ch, uint64_t wr_id, const RdmaBuffer& from, uint64_t len, const RemoteBuffer& to,
                  uint32_t imm, bool signaled)
  {
    verbs::SendWr w;
    w.wr_id = wr_id;
    w.opcode = verbs::WrOpcode::RDMA_WRITE_WITH_IMM;
    w.sg_list.push_back({from.mem.addr, *verbs::sge_length(len), from.mr.lkey}); // a fixed HEADER-sized buffer
    w.remote_addr = to.addr;
    w.rkey = to.rkey;
    w.imm_data = imm;
    w.signaled = signaled;
    if (auto st = ch.qp->post_send(w); !st.ok()) fail_channel(ch, st.error());
  }

  void on_completion(Channel& ch, const verbs::WorkCompletion& wc)
  {
    V1Channel* s = state(ch);
    if (!wc.ok()) {
      std::string what = verbs::to_string(wc.status);
      if (auto w = s->tensor_writes.find(wc.wr_id); w != s->tensor_writes.end()) {
        // The producer's tensor write failed (TF CHECK-fails here): its record says so, with the size if the
        // write was longer than the NIC accepts.
        if (const std::string d = describe(ch, wc); !d.empty()) what += ": " + d;
        log_write(w->second, what);
        s->tensor_writes.erase(w);
      }
      fail_channel(ch,
                   Error::status("Unavailable", std::string("RDMA channel to ") + ch.peer_task + " failed: " + what));
      return;
    }
    if (wc.opcode == verbs::WcOpcode::RECV_RDMA_WITH_IMM) {
      (void)channels_.post_receives(ch, 1);
      auto it = s->by_hash.find(wc.imm_data);
      if (it == s->by_hash.end())
        return fail_channel(ch, Error::status("Internal", "verbs v1: write into an unknown buffer (hash " +
                                                              std::to_string(wc.imm_data) + ")"));
      RdmaBuffer& b = *it->second;
      if (&b == &s->rx_ack) {
        s->tx_message.remote_status = BufStatus::IDLE;
        return pump_messages(ch);
      }
      const uint8_t* p = ctx_.runtime->memory().resolve(b.mem.addr, std::min<uint64_t>(HEADER, b.mem.size));
      if (!p) return fail_channel(ch, Error::status("Internal", "verbs v1: no header bytes in " + b.name));
      auto m = decode(p, std::min<uint64_t>(HEADER, b.mem.size));
      if (!m.ok()) return fail_channel(ch, m.error());
      if (&b == &s->rx_message) {
        send_ack(ch); // the peer's message buffer is free again
        return handle_message(ch, *m);
      }
      return tensor_arrived(ch, b, *m);
    }
    if (wc.wr_id == WR_MESSAGE) {
      s->tx_message.local = BufStatus::IDLE;
      return pump_messages(ch);
    }
    auto w = s->tensor_writes.find(wc.wr_id);
    if (w != s->tensor_writes.end()) {
      RdmaBuffer* b = w->second.buffer;
      log_write(w->second, "");
      s->tensor_writes.erase(w);
      b->local = BufStatus::IDLE;
      resend_next(ch, *b);
    }
  }

  /// The producer's record of a tensor write, logged when the write completes (t_end stays the post time: the
  /// producer's part ends when the NIC has the write).
  void log_write(const V1Channel::TensorWrite& w, const std::string& error)
  {
    if (!w.rec) return;
    w.rec->ok = error.empty();
    w.rec->error = error;
    if (ctx_.log) ctx_.log->add(*w.rec);
  }

  void fail_channel(Channel& ch, const Error& e)
  {
    V1Channel* s = state(ch);
    if (!s->failed) s->failed = e;
    auto cbs = std::move(s->callbacks);
    s->callbacks.clear();
    for (auto& [k, p] : cbs)
      finish(std::move(p), e);
  }

  void finish(Pending p, Result<rendezvous::RecvOutcome> r)
  {
    p.rec->t_end = ctx_.runtime->now();
    p.rec->ok = r.ok();
    if (!r.ok())
      p.rec->error = r.error().message();
    else
      p.rec->is_dead = r->is_dead;
    if (ctx_.log) ctx_.log->add(*p.rec);
    p.done(std::move(r));
  }

  void handle_message(Channel& ch, const Msg& m)
  {
    V1Channel* s = state(ch);
    switch (m.type) {
    case MsgType::TENSOR_REQUEST: {
      RdmaBuffer& b = tensor_buffer(*s, m.name);
      b.queue.emplace_back(m.name, m.step);
      Channel* chp = &ch;
      RdmaBuffer* bp = &b;
      ctx_.runtime->post([this, chp, bp] { send_next(*chp, *bp); }); // scheduled on the compute pool
      return;
    }
    case MsgType::BUFFER_REQUEST: {
      // Consumer: make (or grow) our buffer for this tensor and tell the producer where it is.
      RdmaBuffer& b = tensor_buffer(*s, m.name);
      b.remote = RemoteBuffer{m.remote_addr, m.rkey, m.buffer_size};
      Channel* chp = &ch;
      RdmaBuffer* bp = &b;
      const std::string name = m.name;
      const int64_t step = m.step;
      ensure_buffer(b, m.buffer_size, [this, chp, bp, name, step](Status st) {
        if (!st.ok()) return fail_channel(*chp, st.error());
        Msg resp;
        resp.type = MsgType::BUFFER_RESPONSE;
        resp.name = name;
        resp.step = step;
        resp.buffer_size = bp->mem.size;
        resp.remote_addr = bp->mem.addr;
        resp.rkey = advertised_rkey(ctx_.options, bp->mr.rkey);
        send_msg(*chp, resp);
      });
      return;
    }
    case MsgType::BUFFER_RESPONSE: {
      RdmaBuffer& b = tensor_buffer(*s, m.name);
      if (m.buffer_size < b.mem.size)
        return fail_channel(ch, Error::status("Internal", "verbs v1: BUFFER_RESPONSE size mismatch for " + m.name));
      b.remote = RemoteBuffer{m.remote_addr, m.rkey, m.buffer_size};
      b.local = b.remote_status = BufStatus::IDLE;
      return resend_next(ch, b);
    }
    case MsgType::BUFFER_IDLE: {
      RdmaBuffer& b = tensor_buffer(*s, m.name);
      b.remote_status = BufStatus::IDLE;
      return resend_next(ch, b);
    }
    case MsgType::ERROR_STATUS: {
      auto it = s->callbacks.find(job_key(m.name, m.step));
      if (it == s->callbacks.end()) return;
      Pending p = std::move(it->second);
      s->callbacks.erase(it);
      return finish(std::move(p), Error::status(m.error_code, m.error_text));
    }
    default:
      return;
    }
  }

  /// (Re)allocate and register `b` so that it holds at least `size` bytes (never shrinks).
  void ensure_buffer(RdmaBuffer& b, uint64_t size, std::function<void(Status)> done)
  {
    if (b.has_memory && b.mem.size >= size) {
      ctx_.runtime->post([done] { done(ok_status()); });
      return;
    }
    if (b.has_memory) {
      ctx_.memory->deregister_buffer(b.mr);
      ctx_.runtime->memory().free(b.mem);
      b.has_memory = false;
    }
    AllocAttr a = AllocAttr::at(Location::host(ctx_.cpu_numa_node), HostMemoryKind::PINNED);
    a.materialize_prefix = HEADER; // the header is always real bytes; the payload follows the run's mode
    auto m = ctx_.runtime->memory().allocate(size, a);
    if (!m.ok()) {
      Error e = m.error();
      ctx_.runtime->post([done, e] { done(e); });
      return;
    }
    b.mem = m.value();
    RdmaBuffer* bp = &b;
    ctx_.memory->register_buffer(b.mem, verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_WRITE,
                                 [bp, done](Result<verbs::MemoryRegion> mr) {
                                   if (!mr.ok()) return done(mr.error());
                                   bp->mr = mr.value();
                                   bp->has_memory = true;
                                   done(ok_status());
                                 });
  }

  // ---- producer: tensor buffer logic ----
  void send_next(Channel& ch, RdmaBuffer& b)
  {
    if (b.producing || b.resend || b.queue.empty() || state(ch)->failed) return;
    // Plain variables, not a structured binding: lambdas below capture them (clang < 16 cannot capture bindings).
    const auto name = b.queue.front().first;
    const auto step = b.queue.front().second;
    b.queue.pop_front();
    b.producing = true;
    auto key = rendezvous::parse_key(name);
    auto rec = std::make_shared<TransferRecord>();
    rec->transport = "verbs_v1";
    rec->side = Side::PRODUCER;
    rec->step = step;
    rec->key = name;
    rec->local_task = ctx_.task;
    rec->peer_task = ch.peer_task;
    rec->t_start = ctx_.runtime->now();
    if (!key.ok() || key->src_incarnation != ctx_.incarnation) {
      b.producing = false;
      Error e = key.ok() ? Error::status("Aborted", "device incarnation mismatch: worker was probably restarted")
                         : key.error();
      Msg m;
      m.type = MsgType::ERROR_STATUS;
      m.name = name;
      m.step = step;
      m.error_code = e.code.empty() ? "Internal" : e.code;
      m.error_text = e.text();
      send_msg(ch, m);
      return send_next(ch, b);
    }
    Channel* chp = &ch;
    RdmaBuffer* bp = &b;
    ctx_.rendezvous->recv_local_async(
        step, key.value(), [this, chp, bp, step, rec](Result<rendezvous::RecvOutcome> got) {
          if (!got.ok()) {
            bp->producing = false;
            return fail_channel(*chp, got.error());
          }
          rec->src_location = got->tensor.location().to_string();
          if (!got->is_dead && !verbs::sge_length(HEADER + got->tensor.total_bytes())) {
            bp->producing = false; // refused in post_copy, before any staging copy
            return post_copy(*chp, *bp, RdmaBuffer::Stash{got->tensor, false, step, rec});
          }
          // GPU tensors are first copied to pinned host memory.
          if (!got->is_dead && got->tensor.location().is_gpu() && got->tensor.total_bytes() > 0) {
            const Tensor t = got->tensor;
            auto host = ctx_.memory->allocate(t.dtype, t.shape, Location::host(ctx_.cpu_numa_node),
                                              AllocatorAttributes{true, true, false}, t.proto_bytes);
            if (!host.ok()) {
              bp->producing = false;
              return fail_channel(*chp, host.error());
            }
            Tensor h = host.value();
            ++rec->copies;
            ctx_.memory->copy(*h.buffer(), *t.buffer(), t.total_bytes(),
                              // `t` stays referenced until the copy is done.
                              timed(*ctx_.runtime, rec, Phase::PCIE, [this, chp, bp, h, t, step, rec](Status) {
                                bp->producing = false;
                                post_copy(*chp, *bp, RdmaBuffer::Stash{h, false, step, rec});
                              }));
            return;
          }
          bp->producing = false;
          post_copy(*chp, *bp, RdmaBuffer::Stash{got->tensor, got->is_dead, step, rec});
        });
  }

  void post_copy(Channel& ch, RdmaBuffer& b, RdmaBuffer::Stash job)
  {
    const uint64_t bytes = job.dead ? 0 : job.tensor.total_bytes();
    const uint64_t size = HEADER + bytes;
    if (!verbs::sge_length(size)) {
      // TF's RdmaBuffer::Write puts header + tensor in one ibv_sge whose 32-bit length wraps: the original writes
      // `size mod 2^32` bytes and the consumer copies stale buffer bytes into the tensor (silent corruption), or
      // the wrapped length is still over the RC limit (LOC_LEN_ERR). Refused before any buffer is made.
      const std::string why = verbs::sge_wraps("a tensor WRITE_WITH_IMM (720 B header + tensor)", size) +
                              "; TF verbs v1 would corrupt the tensor silently: refused";
      job.rec->bytes = bytes;
      job.rec->t_end = ctx_.runtime->now();
      job.rec->ok = false;
      job.rec->error = why;
      if (ctx_.log) ctx_.log->add(*job.rec);
      Msg m;
      m.type = MsgType::ERROR_STATUS;
      m.name = b.name;
      m.step = job.step;
      m.error_code = "OutOfRange";
      m.error_text = "tensor of " + std::to_string(bytes) + " B: its write would wrap ibv_sge's 32-bit length";
      send_msg(ch, m);
      return send_next(ch, b);
    }
    const bool idle = b.local == BufStatus::IDLE && b.remote_status == BufStatus::IDLE;
    if (!b.has_memory || (b.mem.size < size && idle)) {
      // First use or growth: a bigger buffer here, and BUFFER_REQUEST so the consumer makes one too.
      b.resend = job;
      b.local = b.remote_status = BufStatus::BUSY;
      Channel* chp = &ch;
      RdmaBuffer* bp = &b;
      const double t0 = ctx_.runtime->now();
      auto rec = job.rec;
      ++rec->registrations;
      ensure_buffer(b, size, [this, chp, bp, t0, rec](Status st) {
        rec->add(Phase::REGISTRATION, ctx_.runtime->now() - t0);
        if (!st.ok()) return fail_channel(*chp, st.error());
        Msg m;
        m.type = MsgType::BUFFER_REQUEST;
        m.name = bp->name;
        m.step = bp->resend->step;
        m.buffer_size = bp->mem.size;
        m.remote_addr = bp->mem.addr;
        m.rkey = bp->mr.rkey;
        send_msg(*chp, m);
      });
      return;
    }
    if (!idle || b.mem.size < size) {
      b.resend = job; // a previous step's copy is still unconsumed
      return;
    }
    b.local = b.remote_status = BufStatus::BUSY;
    Msg h;
    h.type = MsgType::TENSOR_WRITE;
    h.name = b.name;
    h.step = job.step;
    h.meta = TensorMeta::of(job.tensor, job.dead);
    put_bytes(ctx_.runtime->memory(), b.mem, encode(h));
    job.rec->bytes = bytes;
    job.rec->is_dead = job.dead;
    Channel* chp = &ch;
    RdmaBuffer* bp = &b;
    auto write = [this, chp, bp, size, job]() {
      V1Channel* s = state(*chp);
      const uint64_t wr = s->next_wr++;
      const double t0 = ctx_.runtime->now();
      auto rec = job.rec;
      rec->add(Phase::WIRE, 0);
      rec->t_end = t0;
      // The record is logged when the write completes (on_completion): failed if the write failed.
      s->tensor_writes[wr] = V1Channel::TensorWrite{bp, size, rec};
      verbs::SendWr w;
      w.wr_id = wr;
      w.opcode = verbs::WrOpcode::RDMA_WRITE_WITH_IMM;
      w.sg_list.push_back({bp->mem.addr, *verbs::sge_length(size), bp->mr.lkey}); // checked in post_copy
      w.remote_addr = bp->remote.addr;
      w.rkey = bp->remote.rkey;
      w.imm_data = verbs_v1_buffer_hash(bp->name);
      if (auto st = chp->qp->post_send(w); !st.ok()) {
        log_write(s->tensor_writes[wr], st.error().message());
        s->tensor_writes.erase(wr);
        return fail_channel(*chp, st.error());
      }
    };
    if (bytes == 0) return write();
    // memcpy (POD) or serialization (other dtypes) into the pinned buffer, after the header.
    ++job.rec->copies;
    const Buffer payload = b.mem.slice(HEADER, bytes);
    if (!is_pod(job.tensor.dtype)) {
      ctx_.runtime->execute(Work::serialize(*job.tensor.buffer(), bytes),
                            timed(*ctx_.runtime, job.rec, Phase::SERIALIZE, [this, payload, job, bytes, write](Status) {
                              ctx_.memory->copy(payload, *job.tensor.buffer(), bytes, [write](Status) { write(); });
                            }));
      return;
    }
    ctx_.memory->copy(payload, *job.tensor.buffer(), bytes,
                      timed(*ctx_.runtime, job.rec, Phase::COPY, [write](Status) { write(); }));
  }

  void resend_next(Channel& ch, RdmaBuffer& b)
  {
    if (b.resend && b.local == BufStatus::IDLE && b.remote_status == BufStatus::IDLE) {
      auto job = std::move(*b.resend);
      b.resend.reset();
      return post_copy(ch, b, std::move(job));
    }
    if (!b.resend) send_next(ch, b);
  }

  // ---- consumer: tensor data arrived ----
  void tensor_arrived(Channel& ch, RdmaBuffer& b, const Msg& h)
  {
    V1Channel* s = state(ch);
    auto it = s->callbacks.find(job_key(h.name, h.step));
    if (it == s->callbacks.end())
      return fail_channel(ch, Error::status("Internal", "verbs v1: data for " + h.name + " with no receiver"));
    Pending p = std::move(it->second);
    s->callbacks.erase(it);
    const TensorMeta meta = h.meta;
    // The peer's header says how many bytes follow it: never more than this buffer holds.
    auto announced = verbs_v1_wire::payload_bytes(h, b.mem.size);
    if (!announced.ok()) {
      finish(std::move(p), announced.error());
      return fail_channel(ch, announced.error());
    }
    const uint64_t n = *announced;
    p.rec->bytes = n;
    p.rec->add(Phase::WIRE, 0);
    Channel* chp = &ch;
    RdmaBuffer* bp = &b;
    auto idle = [this, chp, bp, h]() {
      Msg m;
      m.type = MsgType::BUFFER_IDLE;
      m.name = h.name;
      m.step = h.step;
      send_msg(*chp, m);
    };
    if (meta.is_dead || n == 0) {
      Tensor t;
      t.dtype = meta.dtype;
      t.shape = meta.shape;
      idle();
      return finish(std::move(p), rendezvous::RecvOutcome{t, meta.is_dead});
    }
    auto dst = ctx_.memory->allocate(meta.dtype, meta.shape, p.args.dst_location, p.args.alloc_attrs, meta.proto_bytes);
    if (!dst.ok()) {
      idle();
      return finish(std::move(p), dst.error());
    }
    Tensor t = dst.value();
    ++p.rec->copies;
    const bool pcie = t.location().is_gpu();
    auto rec = p.rec;
    auto pp = std::make_shared<Pending>(std::move(p));
    ctx_.memory->copy(*t.buffer(), b.mem.slice(HEADER, n), n,
                      timed(*ctx_.runtime, rec, pcie ? Phase::PCIE : Phase::COPY, [this, t, pp, idle](Status st) {
                        idle(); // the producer may overwrite our buffer now
                        if (!st.ok()) return finish(std::move(*pp), st.error());
                        finish(std::move(*pp), rendezvous::RecvOutcome{t, false});
                      }));
  }

  TaskContext ctx_;
  rpc::RpcNode rpc_;
  RdmaChannels channels_;
};

} // namespace

std::unique_ptr<Transport> make_verbs_v1_transport(const TaskContext& ctx)
{
  return std::make_unique<VerbsV1>(ctx);
}

TransportInfo verbs_v1_transport_info()
{
  return {"verbs_v1",
          "TF contrib verbs (Yahoo, r1.2-r1.5): pinned buffer per (peer, tensor), copy in and out, BUFFER_IDLE",
          true,
          make_verbs_v1_transport,
          "a work completion with an error status is a fatal CHECK in RdmaAdapter::Process_CQ: the process aborts "
          "(\"Check failed: wc_[i].status == IBV_WC_SUCCESS\"), its peers then see their gRPC channels fail",
          {}};
}

} // namespace tp::transports
