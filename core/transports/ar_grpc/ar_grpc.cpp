// AR-gRPC: RecvTensor request/response as RDMA messages (eager or chunked rendezvous), per-peer tuning.
#include "core/transports/ar_grpc/ar_grpc.hpp"
#include "core/transports/ar_grpc/ar_grpc_wire.hpp"
#include "core/transports/grpc/grpc.hpp"
#include "core/transports/rdma/messenger.hpp"
#include "core/transports/wire_common.hpp"

#include <cmath>
#include <map>

namespace tp::transports {

ArGrpcTuning tune_ar_grpc(double rtt, double copy_bandwidth, double link_bandwidth)
{
  auto pow2_floor = [](double v) {
    uint64_t p = 1;
    while (double(p) * 2 <= v)
      p *= 2;
    return p;
  };
  auto pow2_ceil = [](double v) {
    uint64_t p = 1;
    while (double(p) < v)
      p *= 2;
    return p;
  };
  ArGrpcTuning t;
  t.eager_threshold = std::clamp<uint64_t>(pow2_floor(rtt * copy_bandwidth / 2), 2 << 10, 64 << 10);
  t.chunk_bytes = std::clamp<uint64_t>(pow2_ceil(2 * rtt * link_bandwidth), 64 << 10, 4 << 20);
  return t;
}

namespace ar_grpc_wire {

std::vector<uint8_t> encode(const Frame& f)
{
  rpc::Writer w;
  w.u8(f.type);
  w.u64(f.id);
  if (f.type == REQUEST) {
    w.u64(f.step);
    w.str(f.key);
  } else if (f.is_error) {
    w.u8(1);
    w.str(f.error_code);
    w.str(f.error_text);
  } else {
    w.u8(0); // ok
    write_meta(w, f.meta);
  }
  return w.take();
}

Result<Frame> decode(const std::vector<uint8_t>& header, uint64_t payload_len)
{
  auto bad = [](const std::string& what) { return Error::status("Internal", "malformed AR-gRPC message: " + what); };
  rpc::Reader r(header);
  Frame f;
  if (!r.u8(f.type) || (f.type != REQUEST && f.type != RESPONSE)) return bad("type: expected 1 or 2");
  if (!r.u64(f.id)) return bad("no call id");
  if (f.type == REQUEST) {
    if (!r.u64(f.step) || !r.str(f.key, 4096)) return bad("request: expected a step and a key of at most 4096 bytes");
  } else {
    uint8_t status = 0;
    if (!r.u8(status) || status > 1) return bad("response status: expected 0 or 1");
    f.is_error = status == 1;
    if (f.is_error) {
      if (!r.str(f.error_code, 64) || !r.str(f.error_text, 1000)) return bad("error status: expected two strings");
    } else if (!read_meta(r, f.meta)) {
      return bad("meta-data: expected dtype, dead flag, at most 16 dims, proto size");
    }
  }
  if (!r.done()) return bad(std::to_string(r.remaining()) + " trailing bytes");
  if (payload_len != f.payload_bytes())
    return bad("a payload of " + std::to_string(payload_len) + " bytes, expected " + std::to_string(f.payload_bytes()));
  return f;
}

} // namespace ar_grpc_wire

namespace {

using ar_grpc_wire::Frame;
using ar_grpc_wire::REQUEST;
using ar_grpc_wire::RESPONSE;
constexpr uint64_t MAX_EAGER = 64 << 10; // bounce buffers fit the largest tunable threshold

class ArGrpc final : public Transport {
public:
  explicit ArGrpc(const TaskContext& ctx)
      : ctx_(ctx), rpc_(*ctx.runtime, *ctx.streams, ctx.options.rpc_port),
        messenger_(ctx, rpc_, options(ctx.options.of<ArGrpcOptions>(), ctx.device),
                   [this](Incoming m, Messenger::Deliver d) { arrived(std::move(m), std::move(d)); })
  {
    messenger_.on_failure([this](const std::string& peer, const Error& e) { peer_failed(peer, e); });
  }
  const char* name() const override { return "ar_grpc"; }
  void start(std::function<void(Status)> done) override
  {
    // Bootstrap (QP exchange) uses the RPC port; tensors never touch TCP.
    Status st = rpc_.start();
    // The paper (Biswas, Lu, Panda, HiPC 2018) finds completions by busy polling on dedicated polling thread(s), since
    // multi-core nodes have cores to spare; how many is not given: one per process, a core busy for its life.
    if (st.ok()) ctx_.runtime->start_busy_poller(ctx_.cpu_numa_node);
    if (!st.ok() || ctx_.options.of<ArGrpcOptions>().eager_threshold) {
      ctx_.runtime->post([st, done] { done(st); });
      return;
    }
    // Measure the copy bandwidth once for auto-tuning.
    AllocAttr a = AllocAttr::at(Location::host(ctx_.cpu_numa_node), HostMemoryKind::PINNED);
    a.materialize = false;
    auto src = ctx_.runtime->memory().allocate(64 << 10, a);
    auto dst = ctx_.runtime->memory().allocate(64 << 10, a);
    if (!src.ok() || !dst.ok()) {
      ctx_.runtime->post([done] { done(ok_status()); });
      return;
    }
    const double t0 = ctx_.runtime->now();
    Buffer s = src.value(), d = dst.value();
    ctx_.runtime->execute(Work::memcpy(d, s, 64 << 10), [this, t0, s, d, done](Status) {
      copy_bandwidth_ = double(64 << 10) / std::max(1e-12, ctx_.runtime->now() - t0);
      ctx_.runtime->memory().free(s);
      ctx_.runtime->memory().free(d);
      done(ok_status());
    });
  }
  void shutdown() override { rpc_.shutdown(); }

  void recv_from_remote_async(int64_t step, const rendezvous::ParsedKey& key, const rendezvous::RecvArgs& args,
                              rendezvous::RecvCallback done) override
  {
    auto rec = std::make_shared<TransferRecord>();
    rec->transport = "ar_grpc";
    rec->side = Side::CONSUMER;
    rec->step = step;
    rec->key = key.full;
    rec->local_task = ctx_.task;
    rec->peer_task = key.src.task_name();
    rec->dst_location = args.dst_location.to_string();
    rec->t_start = ctx_.runtime->now();
    const uint64_t id = next_call_++;
    calls_[id] = Call{args, std::move(done), rec, key.src.task_name(), ctx_.runtime->now()};
    Frame req;
    req.type = REQUEST;
    req.id = id;
    req.step = uint64_t(step);
    req.key = key.full;
    auto header = ar_grpc_wire::encode(req);
    const std::string peer = key.src.task_name();
    with_tuning(peer, [this, peer, header, id](const ArGrpcTuning& t) {
      auto it = calls_.find(id);
      if (it == calls_.end()) return;
      it->second.t_sent = ctx_.runtime->now();
      messenger_.send(
          peer, header, nullptr, 0, nullptr,
          [this, id](Status st) {
            if (!st.ok()) fail_call(id, st.error());
          },
          t.eager_threshold, t.chunk_bytes);
    });
  }

private:
  struct Call {
    rendezvous::RecvArgs args;
    rendezvous::RecvCallback done;
    std::shared_ptr<TransferRecord> rec;
    std::string producer;
    double t_sent = 0;
  };

  static MessengerOptions options(const ArGrpcOptions& own, const verbs::Device* device)
  {
    MessengerOptions o;
    o.service = "ArGrpc.Bootstrap";
    o.eager_threshold = MAX_EAGER;
    o.max_chunks_in_flight = 8;
    o.read_train = ar_grpc_read_train(own, device);
    return o;
  }

  /// Per-peer thresholds: the configured ones, or tuned at the first call to that peer.
  void with_tuning(const std::string& peer, std::function<void(const ArGrpcTuning&)> use)
  {
    if (ctx_.options.of<ArGrpcOptions>().eager_threshold && ctx_.options.of<ArGrpcOptions>().chunk_bytes)
      return use(
          ArGrpcTuning{ctx_.options.of<ArGrpcOptions>().eager_threshold, ctx_.options.of<ArGrpcOptions>().chunk_bytes});
    auto it = tuning_.find(peer);
    if (it != tuning_.end()) return use(it->second);
    auto& waiting = tuning_waiters_[peer];
    waiting.push_back(std::move(use));
    if (waiting.size() > 1) return;
    messenger_.ping(peer, [this, peer](Result<double> rtt) {
      const double link = ctx_.device ? ctx_.device->query().port_rate_bps / 8 : 1e9;
      ArGrpcTuning t = tune_ar_grpc(rtt.ok() ? rtt.value() : 5e-6, copy_bandwidth_, link);
      if (ctx_.options.of<ArGrpcOptions>().eager_threshold)
        t.eager_threshold = ctx_.options.of<ArGrpcOptions>().eager_threshold;
      if (ctx_.options.of<ArGrpcOptions>().chunk_bytes) t.chunk_bytes = ctx_.options.of<ArGrpcOptions>().chunk_bytes;
      t.eager_threshold = std::min(t.eager_threshold, MAX_EAGER);
      tuning_[peer] = t;
      auto list = std::move(tuning_waiters_[peer]);
      tuning_waiters_.erase(peer);
      for (auto& f : list)
        f(t);
    });
  }

  void arrived(Incoming m, Messenger::Deliver deliver)
  {
    auto f = ar_grpc_wire::decode(m.header, m.payload_len);
    if (!f.ok()) {
      deliver(Buffer{}, [](Status) {}); // nothing lands (the Messenger refuses a payload for an empty destination)
      // A malformed response to one of our calls fails that call; anything else from a malformed peer is dropped.
      rpc::Reader r(m.header);
      uint8_t type = 0;
      uint64_t id = 0;
      if (r.u8(type) && type == RESPONSE && r.u64(id)) fail_call(id, f.error());
      return;
    }
    if (f->type == REQUEST) return serve(m, *f, std::move(deliver));
    return response(*f, std::move(deliver));
  }

  // ---- producer: the gRPC handler above an RDMA endpoint ----
  void serve(const Incoming& m, const Frame& f, Messenger::Deliver deliver)
  {
    deliver(Buffer{}, [](Status) {}); // the request had no payload
    const uint64_t id = f.id, step = f.step;
    const std::string& key_text = f.key;
    const std::string consumer = m.peer_task;
    auto key = rendezvous::parse_key(key_text);
    if (!key.ok()) return reply_error(consumer, id, key.error());
    if (key->src_incarnation != ctx_.incarnation)
      return reply_error(consumer, id,
                         Error::status("Aborted", "device incarnation mismatch: worker was probably restarted"));
    auto rec = std::make_shared<TransferRecord>();
    rec->transport = "ar_grpc";
    rec->side = Side::PRODUCER;
    rec->step = int64_t(step);
    rec->key = key_text;
    rec->local_task = ctx_.task;
    rec->peer_task = consumer;
    rec->t_start = ctx_.runtime->now();
    ctx_.rendezvous->recv_local_async(
        int64_t(step), key.value(), [this, consumer, id, rec](Result<rendezvous::RecvOutcome> got) {
          if (!got.ok()) return reply_error(consumer, id, got.error());
          const Tensor t = got->tensor;
          const uint64_t n = got->is_dead ? 0 : t.total_bytes();
          rec->bytes = n;
          rec->src_location = t.location().to_string();
          // gRPC core stays above the RDMA endpoint (docs/protocols.md, ar_grpc), with TF's maximum message size: a
          // response over INT32_MAX bytes is refused before it reaches the endpoint (RESOURCE_EXHAUSTED).
          Frame probe;
          probe.type = RESPONSE;
          probe.id = id;
          probe.meta = TensorMeta::of(t, got->is_dead);
          if (const uint64_t message = n + ar_grpc_wire::encode(probe).size(); message > GRPC_MAX_MESSAGE) {
            const Error e = grpc_message_too_large(message, n);
            rec->t_end = ctx_.runtime->now();
            rec->ok = false;
            rec->error = e.message();
            if (ctx_.log) ctx_.log->add(*rec);
            return reply_error(consumer, id, e);
          }
          auto send = [this, consumer, id, rec, n, got](Tensor src) {
            Frame resp;
            resp.type = RESPONSE;
            resp.id = id;
            resp.meta = TensorMeta::of(got->tensor, got->is_dead);
            auto header = ar_grpc_wire::encode(resp);
            with_tuning(consumer, [this, consumer, header, src, n, rec](const ArGrpcTuning& tu) {
              messenger_.send(
                  consumer, header, src.buffer(), n, rec,
                  [this, rec, src](Status st) {
                    rec->t_end = ctx_.runtime->now();
                    rec->ok = st.ok();
                    if (!st.ok()) rec->error = st.error().message();
                    if (ctx_.log) ctx_.log->add(*rec);
                  },
                  tu.eager_threshold, tu.chunk_bytes);
            });
          };
          if (n > 0 && t.location().is_gpu()) {
            // TF's gRPC code copies a GPU tensor to pinned host memory (from the registered pool) before gRPC sees it.
            auto host = ctx_.memory->allocate(t.dtype, t.shape, Location::host(ctx_.cpu_numa_node),
                                              AllocatorAttributes{true, true, true}, t.proto_bytes);
            if (!host.ok()) return reply_error(consumer, id, host.error());
            Tensor h = host.value();
            ++rec->copies;
            ctx_.memory->copy(*h.buffer(), *t.buffer(), n,
                              // `t` stays referenced until the copy is done.
                              timed(*ctx_.runtime, rec, Phase::PCIE, [send, h, t](Status) { send(h); }));
            return;
          }
          send(t);
        });
  }

  void reply_error(const std::string& consumer, uint64_t id, const Error& e)
  {
    Frame resp;
    resp.type = RESPONSE;
    resp.id = id;
    resp.is_error = true;
    resp.error_code = e.code.empty() ? "Internal" : e.code.substr(0, 64);
    resp.error_text = e.text().substr(0, 900);
    messenger_.send(consumer, ar_grpc_wire::encode(resp), nullptr, 0, nullptr, [](Status) {});
  }

  // ---- consumer ----
  void response(const Frame& f, Messenger::Deliver deliver)
  {
    auto it = calls_.find(f.id);
    if (it == calls_.end()) {
      deliver(Buffer{}, [](Status) {});
      return;
    }
    Call c = std::move(it->second);
    calls_.erase(it);
    if (f.is_error) {
      deliver(Buffer{}, [](Status) {});
      return finish(std::move(c), Error::status(f.error_code, f.error_text));
    }
    const TensorMeta meta = f.meta;
    const uint64_t n = meta.is_dead ? 0 : meta.total_bytes();
    c.rec->bytes = n;
    if (n == 0 || meta.is_dead) {
      deliver(Buffer{}, [](Status) {});
      Tensor t;
      t.dtype = meta.dtype;
      t.shape = meta.shape;
      c.rec->add(Phase::WIRE, ctx_.runtime->now() - c.t_sent);
      return finish(std::move(c), rendezvous::RecvOutcome{t, meta.is_dead});
    }
    const bool to_gpu = c.args.dst_location.is_gpu() && !c.args.alloc_attrs.on_host;
    // gRPC hands TF the bytes: a host destination is filled directly (zero copy from a registered tensor);
    // a GPU destination goes through a host tensor and an H2D copy, as TF's gRPC path does.
    const Location land = to_gpu ? Location::host(ctx_.cpu_numa_node) : c.args.dst_location;
    AllocatorAttributes attrs = c.args.alloc_attrs;
    attrs.nic_compatible = true;
    auto dst = ctx_.memory->allocate(meta.dtype, meta.shape, land, attrs, meta.proto_bytes);
    if (!dst.ok()) {
      deliver(Buffer{}, [](Status) {});
      return finish(std::move(c), dst.error());
    }
    Tensor t = dst.value();
    auto cp = std::make_shared<Call>(std::move(c));
    deliver(*t.buffer(), [this, cp, t, to_gpu, meta, n](Status st) {
      cp->rec->add(Phase::WIRE, ctx_.runtime->now() - cp->t_sent);
      if (!st.ok()) return finish(std::move(*cp), st.error());
      if (!to_gpu) return finish(std::move(*cp), rendezvous::RecvOutcome{t, false});
      auto g =
          ctx_.memory->allocate(meta.dtype, meta.shape, cp->args.dst_location, cp->args.alloc_attrs, meta.proto_bytes);
      if (!g.ok()) return finish(std::move(*cp), g.error());
      Tensor gt = g.value();
      ++cp->rec->copies;
      ctx_.memory->copy(*gt.buffer(), *t.buffer(), n,
                        timed(*ctx_.runtime, cp->rec, Phase::PCIE, [this, cp, gt, t](Status s2) {
                          if (!s2.ok()) return finish(std::move(*cp), s2.error());
                          finish(std::move(*cp), rendezvous::RecvOutcome{gt, false});
                        }));
    });
  }

  void finish(Call c, Result<rendezvous::RecvOutcome> r)
  {
    c.rec->t_end = ctx_.runtime->now();
    c.rec->ok = r.ok();
    if (!r.ok())
      c.rec->error = r.error().message();
    else
      c.rec->is_dead = r->is_dead;
    if (ctx_.log) ctx_.log->add(*c.rec);
    if (c.done) c.done(std::move(r));
  }

  void fail_call(uint64_t id, const Error& e)
  {
    auto it = calls_.find(id);
    if (it == calls_.end()) return;
    Call c = std::move(it->second);
    calls_.erase(it);
    finish(std::move(c), e);
  }

  void peer_failed(const std::string& peer, const Error& e)
  {
    std::vector<uint64_t> ids;
    for (auto& [id, c] : calls_)
      if (c.producer == peer) ids.push_back(id);
    for (uint64_t id : ids)
      fail_call(id, e);
  }

  TaskContext ctx_;
  rpc::RpcNode rpc_;
  Messenger messenger_;
  std::map<uint64_t, Call> calls_;
  std::map<std::string, ArGrpcTuning> tuning_;
  std::map<std::string, std::vector<std::function<void(const ArGrpcTuning&)>>> tuning_waiters_;
  double copy_bandwidth_ = 10e9;
  uint64_t next_call_ = 1;
};

} // namespace

uint32_t ar_grpc_read_train(const ArGrpcOptions& options, const verbs::Device* device)
{
  // Trains only where the NIC charges a train's READ and FIN as the chunks they stand for (the simulator's): on a real
  // or software device a 4-chunk READ would be another protocol.
  return options.chunk_trains && device && device->charges_stand_ins() ? AR_GRPC_TRAIN_CHUNKS : 1;
}

std::unique_ptr<Transport> make_ar_grpc_transport(const TaskContext& ctx)
{
  return std::make_unique<ArGrpc>(ctx);
}

TransportInfo ar_grpc_transport_info()
{
  return {"ar_grpc",
          "OSU AR-gRPC: gRPC over an RDMA endpoint, eager SEND (coalesced) or chunked RDMA READ rendezvous, auto-tuned",
          true,
          make_ar_grpc_transport,
          "not described by the AR-gRPC papers; assumed like gRPC: the RPC fails with UnavailableError and the step "
          "is aborted",
          {{"ar_chunk_trains", "ar-chunk-by-chunk",
            "ar_grpc: one RDMA READ and one FIN per rendezvous chunk, as published, instead of the simulator's default "
            "chunk trains (4 chunks per READ and FIN, 2 READs in flight: the same bytes outstanding, 4x fewer events, "
            "steps within 0.02 %; docs/model.md \"Chunk trains\")",
            true, [](TransportOptions& o, bool v) { o.own<ArGrpcOptions>().chunk_trains = v; },
            [](const TransportOptions& o) { return o.of<ArGrpcOptions>().chunk_trains; }}}};
}

} // namespace tp::transports
