// AR-gRPC: RecvTensor request/response as RDMA messages (eager or chunked rendezvous), per-peer tuning.
#include "core/transports/ar_grpc/ar_grpc.hpp"
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

namespace {

constexpr uint8_t REQUEST = 1, RESPONSE = 2;
constexpr uint64_t MAX_EAGER = 64 << 10; // bounce buffers fit the largest tunable threshold

class ArGrpc final : public Transport {
public:
  explicit ArGrpc(const TaskContext& ctx)
      : ctx_(ctx), rpc_(*ctx.runtime, *ctx.streams, ctx.options.rpc_port),
        messenger_(ctx, rpc_, options(),
                   [this](Incoming m, Messenger::Deliver d) { arrived(std::move(m), std::move(d)); })
  {
    messenger_.on_failure([this](const std::string& peer, const Error& e) { peer_failed(peer, e); });
  }
  const char* name() const override { return "ar_grpc"; }
  void start(std::function<void(Status)> done) override
  {
    // Bootstrap (QP exchange) uses the RPC port; tensors never touch TCP.
    Status st = rpc_.start();
    if (!st.ok() || ctx_.options.ar_eager_threshold) {
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
    rec->side = "consumer";
    rec->step = step;
    rec->key = key.full;
    rec->local_task = ctx_.task;
    rec->peer_task = key.src.task_name();
    rec->dst_location = args.dst_location.to_string();
    rec->t_start = ctx_.runtime->now();
    const uint64_t id = next_call_++;
    calls_[id] = Call{args, std::move(done), rec, key.src.task_name(), ctx_.runtime->now()};
    rpc::Writer w;
    w.u8(REQUEST);
    w.u64(id);
    w.u64(uint64_t(step));
    w.str(key.full);
    auto header = w.take();
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

  static MessengerOptions options()
  {
    MessengerOptions o;
    o.service = "ArGrpc.Bootstrap";
    o.eager_threshold = MAX_EAGER;
    o.max_chunks_in_flight = 8;
    return o;
  }

  /// Per-peer thresholds: the configured ones, or tuned at the first call to that peer.
  void with_tuning(const std::string& peer, std::function<void(const ArGrpcTuning&)> use)
  {
    if (ctx_.options.ar_eager_threshold && ctx_.options.ar_chunk_bytes)
      return use(ArGrpcTuning{ctx_.options.ar_eager_threshold, ctx_.options.ar_chunk_bytes});
    auto it = tuning_.find(peer);
    if (it != tuning_.end()) return use(it->second);
    auto& waiting = tuning_waiters_[peer];
    waiting.push_back(std::move(use));
    if (waiting.size() > 1) return;
    messenger_.ping(peer, [this, peer](Result<double> rtt) {
      const double link = ctx_.device ? ctx_.device->query().port_rate_bps / 8 : 1e9;
      ArGrpcTuning t = tune_ar_grpc(rtt.ok() ? rtt.value() : 5e-6, copy_bandwidth_, link);
      if (ctx_.options.ar_eager_threshold) t.eager_threshold = ctx_.options.ar_eager_threshold;
      if (ctx_.options.ar_chunk_bytes) t.chunk_bytes = ctx_.options.ar_chunk_bytes;
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
    rpc::Reader r(m.header);
    uint8_t type = 0;
    uint64_t id = 0;
    if (!r.u8(type) || !r.u64(id)) return deliver(Buffer{}, [](Status) {});
    if (type == REQUEST) return serve(m, r, id, std::move(deliver));
    if (type == RESPONSE) return response(m, r, id, std::move(deliver));
    deliver(Buffer{}, [](Status) {});
  }

  // ---- producer: the gRPC handler above an RDMA endpoint ----
  void serve(const Incoming& m, rpc::Reader& r, uint64_t id, Messenger::Deliver deliver)
  {
    deliver(Buffer{}, [](Status) {}); // the request had no payload
    uint64_t step = 0;
    std::string key_text;
    const std::string consumer = m.peer_task;
    if (!r.u64(step) || !r.str(key_text, 4096)) return;
    auto key = rendezvous::parse_key(key_text);
    if (!key.ok()) return reply_error(consumer, id, key.error());
    if (key->src_incarnation != ctx_.incarnation)
      return reply_error(consumer, id,
                         Error::status("Aborted", "device incarnation mismatch: worker was probably restarted"));
    auto rec = std::make_shared<TransferRecord>();
    rec->transport = "ar_grpc";
    rec->side = "producer";
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
          auto send = [this, consumer, id, rec, n, got](Tensor src) {
            rpc::Writer w;
            w.u8(RESPONSE);
            w.u64(id);
            w.u8(0); // ok
            write_meta(w, TensorMeta::of(got->tensor, got->is_dead));
            auto header = w.take();
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
    rpc::Writer w;
    w.u8(RESPONSE);
    w.u64(id);
    w.u8(1);
    w.str(e.code.empty() ? "Internal" : e.code);
    w.str(e.message().substr(0, 900));
    messenger_.send(consumer, w.take(), nullptr, 0, nullptr, [](Status) {});
  }

  // ---- consumer ----
  void response(const Incoming& m, rpc::Reader& r, uint64_t id, Messenger::Deliver deliver)
  {
    auto it = calls_.find(id);
    uint8_t status = 0;
    if (it == calls_.end() || !r.u8(status)) {
      deliver(Buffer{}, [](Status) {});
      return;
    }
    Call c = std::move(it->second);
    calls_.erase(it);
    if (status == 1) {
      std::string code, text;
      r.str(code, 64);
      r.str(text, 1000);
      deliver(Buffer{}, [](Status) {});
      return finish(std::move(c), Error::status(code, text));
    }
    TensorMeta meta;
    if (!read_meta(r, meta)) {
      deliver(Buffer{}, [](Status) {});
      return finish(std::move(c), Error::status("Internal", "malformed AR-gRPC response"));
    }
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

std::unique_ptr<Transport> make_ar_grpc_transport(const TaskContext& ctx)
{
  return std::make_unique<ArGrpc>(ctx);
}

} // namespace tp::transports
