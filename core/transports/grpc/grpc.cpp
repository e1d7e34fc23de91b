// gRPC RecvTensor: consumer issues the RPC, producer waits for the local Send, encodes, responds.
#include "core/transports/grpc/grpc.hpp"
#include "core/rpc/rpc.hpp"
#include "core/transports/wire_common.hpp"

#include <cmath>
#include <cstring>

namespace tp::transports {

Error grpc_message_too_large(uint64_t message_bytes, uint64_t tensor_bytes)
{
  // gRPC core's message size check: "Sent message larger than max (%u vs. %d)", status RESOURCE_EXHAUSTED.
  return Error::status("ResourceExhausted", "Sent message larger than max (" + std::to_string(message_bytes) + " vs. " +
                                                std::to_string(GRPC_MAX_MESSAGE) +
                                                "): a RecvTensor response "
                                                "carrying a tensor of " +
                                                std::to_string(tensor_bytes) +
                                                " bytes (TF sets gRPC's maximum message size to INT32_MAX)");
}

uint64_t grpc_wire_bytes(uint64_t n, uint64_t header_bytes)
{
  const uint64_t msg = n + 5;
  const uint64_t frames = msg == 0 ? 1 : (msg + 16383) / 16384;
  return msg + 9 * frames + header_bytes;
}

namespace {
constexpr uint64_t REQUEST_HEADERS = 120; // :method, :path /tensorflow.WorkerService/RecvTensor, content-type, te
constexpr uint64_t RESPONSE_HEADERS = 60; // :status, content-type, grpc-status trailer
} // namespace

GrpcTransport::GrpcTransport(const TaskContext& ctx, const char* name)
    : ctx_(ctx), rpc_(*ctx.runtime, *ctx.streams, ctx.options.rpc_port), name_(name)
{
  rpc_.add_method("RecvTensor",
                  [this](rpc::Payload req, rpc::Responder respond) { serve(std::move(req), std::move(respond)); });
}

void GrpcTransport::start(std::function<void(Status)> done)
{
  Status st = rpc_.start();
  ctx_.runtime->post([st, done] { done(st); });
}

void GrpcTransport::shutdown()
{
  rpc_.shutdown();
}

std::shared_ptr<TransferRecord> GrpcTransport::new_record(Side side, int64_t step, const std::string& key,
                                                          const std::string& peer)
{
  auto rec = std::make_shared<TransferRecord>();
  rec->transport = name_;
  rec->side = side;
  rec->step = step;
  rec->key = key;
  rec->local_task = ctx_.task;
  rec->peer_task = peer;
  rec->t_start = ctx_.runtime->now();
  return rec;
}

void GrpcTransport::recv_from_remote_async(int64_t step, const rendezvous::ParsedKey& key,
                                           const rendezvous::RecvArgs& args, rendezvous::RecvCallback done)
{
  Runtime& rt = *ctx_.runtime;
  auto rec = new_record(Side::CONSUMER, step, key.full, key.src.task_name());
  rec->dst_location = args.dst_location.to_string();
  auto finish = [this, rec, done](Result<rendezvous::RecvOutcome> r) {
    rec->t_end = ctx_.runtime->now();
    rec->ok = r.ok();
    if (!r.ok()) rec->error = r.error().message();
    if (ctx_.log) ctx_.log->add(*rec);
    done(std::move(r));
  };
  auto peer = ctx_.cluster.find(key.src.task_name());
  if (peer == ctx_.cluster.end())
    return finish(Error::status("Unavailable", "no process runs task " + key.src.task_name()));
  rpc::Writer w;
  w.u64(uint64_t(step));
  w.str(key.full);
  w.u8(dma_ok() ? 1 : 0);
  w.u64(next_request_id_++);
  rpc::Payload req{w.take(), 0};
  req.extra_wire_bytes = grpc_wire_bytes(req.bytes.size(), REQUEST_HEADERS) - req.bytes.size();
  const double t_call = rt.now();
  const std::string producer = peer->second;
  rpc_.call(producer, "RecvTensor", std::move(req),
            [this, rec, args, finish, t_call, producer](Result<rpc::Payload> resp) {
              if (!resp.ok()) return finish(resp.error());
              rpc::Reader r(resp.value().bytes);
              auto h = read_recv_tensor_header(r);
              if (!h.ok()) return finish(h.error());
              // The call's time beyond the producer's: its messages on the wire, and waiting for the gRPC threads
              // of either end (Phase::CPU).
              const double away = std::max(0.0, ctx_.runtime->now() - t_call - h->producer_seconds);
              const double cpu = std::min(away, resp.value().cpu_seconds);
              rec->add(Phase::CPU, cpu);
              rec->add(Phase::WIRE, away - cpu);
              rec->bytes = h->meta.total_bytes();
              rec->is_dead = h->meta.is_dead;
              consume(h->kind, h->meta, r, std::move(resp.value()), rec, args, producer, finish);
            });
}

Result<RecvTensorHeader> read_recv_tensor_header(rpc::Reader& r)
{
  RecvTensorHeader h;
  if (!r.u8(h.kind) || !read_meta(r, h.meta) || !r.f64(h.producer_seconds))
    return Error::status("Internal", "malformed RecvTensor response");
  if (!std::isfinite(h.producer_seconds) || h.producer_seconds < 0)
    return Error::status("Internal", "RecvTensor response: producer time " + std::to_string(h.producer_seconds));
  return h;
}

void GrpcTransport::consume(uint8_t kind, const TensorMeta& meta, rpc::Reader& r, rpc::Payload resp,
                            std::shared_ptr<TransferRecord> rec, const rendezvous::RecvArgs& args, const std::string&,
                            Finish finish)
{
  if (kind != 0)
    return finish(Error::status("Internal", "RecvTensor response of an unknown kind " + std::to_string(kind)));
  receive_content(meta, r, std::move(resp), rec, args, std::move(finish));
}

void GrpcTransport::receive_content(const TensorMeta& meta, rpc::Reader& r, rpc::Payload resp,
                                    std::shared_ptr<TransferRecord> rec, const rendezvous::RecvArgs& args,
                                    Finish finish)
{
  Runtime& rt = *ctx_.runtime;
  uint8_t has_bytes = 0;
  if (!r.u8(has_bytes) || has_bytes > 1) return finish(Error::status("Internal", "malformed RecvTensor response"));
  const uint64_t n = meta.total_bytes();
  if (has_bytes) {
    if (r.remaining() != n)
      return finish(Error::status("Internal", "RecvTensor response: payload size does not match the meta-data"));
  } else if (!r.done()) {
    return finish(Error::status("Internal", "malformed RecvTensor response (trailing bytes)"));
  }
  if (meta.is_dead) {
    Tensor t;
    t.dtype = meta.dtype;
    t.shape = meta.shape;
    return finish(rendezvous::RecvOutcome{t, true});
  }
  memory::TensorMemory& mem = *ctx_.memory;
  // The bytes arrived in gRPC's slice buffers in host memory.
  AllocAttr sa = AllocAttr::at(Location::host(ctx_.cpu_numa_node));
  sa.materialize = has_bytes && n > 0;
  auto slices = rt.memory().allocate(n, sa);
  if (!slices.ok()) return finish(slices.error());
  if (has_bytes && n > 0)
    if (uint8_t* d = rt.memory().resolve(slices->addr, n)) // the socket read's copy
      std::memcpy(d, resp.bytes.data() + (resp.bytes.size() - n), n);
  const Buffer sl = slices.value();
  MemorySpace* space = &rt.memory();
  auto release_slices = [space, sl] { space->free(sl); };
  const bool to_gpu = args.dst_location.is_gpu() && !args.alloc_attrs.on_host;
  if (!to_gpu) {
    // TensorResponse::ParseFrom: allocate the destination, copy the content out of the slices (one copy).
    auto dst = mem.allocate(meta.dtype, meta.shape, args.dst_location, args.alloc_attrs, meta.proto_bytes);
    if (!dst.ok()) {
      release_slices();
      return finish(dst.error());
    }
    Tensor t = dst.value();
    ++rec->copies;
    mem.copy(*t.buffer(), sl, n, timed(rt, rec, Phase::COPY, [t, release_slices, finish](Status st) {
      release_slices();
      if (!st.ok()) return finish(st.error());
      finish(rendezvous::RecvOutcome{t, false});
    }));
    return;
  }
  // GPU destination: parse into a full proto (a host copy), then MakeTensorFromProto (host -> GPU).
  auto proto = mem.allocate(meta.dtype, meta.shape, Location::host(ctx_.cpu_numa_node),
                            AllocatorAttributes{true, true, false}, meta.proto_bytes);
  auto dst = mem.allocate(meta.dtype, meta.shape, args.dst_location, args.alloc_attrs, meta.proto_bytes);
  if (!proto.ok() || !dst.ok()) {
    release_slices();
    return finish(!proto.ok() ? proto.error() : dst.error());
  }
  Tensor host = proto.value(), t = dst.value();
  rec->copies += 2;
  mem.copy(*host.buffer(), sl, n,
           timed(rt, rec, Phase::COPY, [this, rec, host, t, n, release_slices, finish](Status st) {
             release_slices();
             if (!st.ok()) return finish(st.error());
             ctx_.memory->copy(*t.buffer(), *host.buffer(), n,
                               timed(*ctx_.runtime, rec, Phase::PCIE, [host, t, finish](Status s2) {
                                 if (!s2.ok()) return finish(s2.error());
                                 finish(rendezvous::RecvOutcome{t, false});
                               }));
           }));
}

// ---- producer: GrpcWorker::GrpcRecvTensorAsync ----
void GrpcTransport::serve(rpc::Payload req, rpc::Responder respond)
{
  Runtime& rt = *ctx_.runtime;
  rpc::Reader r(req.bytes);
  uint64_t step = 0, request_id = 0;
  std::string key_text;
  uint8_t dma_ok = 0;
  if (!r.u64(step) || !r.str(key_text, 4096) || !r.u8(dma_ok) || !r.u64(request_id) || !r.done())
    return respond(Error::status("InvalidArgument", "malformed RecvTensorRequest"));
  auto key = rendezvous::parse_key(key_text);
  if (!key.ok()) return respond(key.error());
  if (key->src.task_name() != ctx_.task)
    return respond(
        Error::status("InvalidArgument", "RecvTensor for " + key->src.task_name() + " sent to " + ctx_.task));
  if (key->src_incarnation != ctx_.incarnation)
    return respond(
        Error::status("Aborted", "RecvTensor expects a different device incarnation: worker was probably restarted"));
  auto rec = new_record(Side::PRODUCER, int64_t(step), key_text, key->dst.task_name());
  const double t_arrived = rt.now();
  const bool dma = dma_ok == 1;
  const std::string consumer_task = key->dst.task_name();
  ctx_.rendezvous->recv_local_async(
      int64_t(step), key.value(),
      [this, rec, respond, t_arrived, dma, consumer_task](Result<rendezvous::RecvOutcome> got) {
        if (!got.ok()) {
          log_producer(rec, got.error().message());
          return respond(got.error());
        }
        produce(rec, got.value(), t_arrived, dma, consumer_task, respond);
      });
}

void GrpcTransport::produce(std::shared_ptr<TransferRecord> rec, rendezvous::RecvOutcome got, double t_arrived, bool,
                            const std::string&, rpc::Responder respond)
{
  encode(rec, std::move(got), t_arrived, std::move(respond));
}

rpc::Writer GrpcTransport::response_header(uint8_t kind, const TensorMeta& meta, double t_arrived)
{
  rpc::Writer w;
  w.u8(kind);
  write_meta(w, meta);
  w.f64(ctx_.runtime->now() - t_arrived);
  return w;
}

void GrpcTransport::encode(std::shared_ptr<TransferRecord> rec, rendezvous::RecvOutcome got, double t_arrived,
                           rpc::Responder respond)
{
  Runtime& rt = *ctx_.runtime;
  memory::TensorMemory& mem = *ctx_.memory;
  const Tensor t = got.tensor;
  const TensorMeta meta = TensorMeta::of(t, got.is_dead);
  const uint64_t n = got.is_dead ? 0 : meta.total_bytes();
  rec->bytes = n;
  rec->is_dead = got.is_dead;
  rec->src_location = t.location().to_string();
  // The RecvTensorResponse message is the tensor plus its meta-data: over INT32_MAX bytes gRPC refuses to send it.
  const uint64_t message = n + response_header(0, meta, t_arrived).take().size() + 1;
  if (message > GRPC_MAX_MESSAGE) {
    const Error e = grpc_message_too_large(message, n);
    log_producer(rec, e.message());
    return respond(e);
  }
  auto reply = [this, rec, meta, n, t_arrived, respond](const Tensor& src) {
    Runtime& rt2 = *ctx_.runtime;
    rpc::Writer w = response_header(0, meta, t_arrived);
    // Real bytes where the tensor has them (the emulator, a materialized simulation): copied once, straight
    // into the message (the socket write's copy).
    const uint8_t* content = (n && src.buffer()) ? rt2.memory().resolve(src.buffer()->addr, n) : nullptr;
    w.u8(content ? 1 : 0);
    rpc::Payload p{w.take(), 0};
    if (content) p.bytes.insert(p.bytes.end(), content, content + n);
    const uint64_t real = p.bytes.size();
    p.extra_wire_bytes = grpc_wire_bytes(real + (content ? 0 : n), RESPONSE_HEADERS) - real;
    log_producer(rec, "");
    respond(std::move(p));
  };
  if (got.is_dead || n == 0) return reply(t);
  auto encode_host = [this, rec, n, reply](const Tensor& host) {
    memory::TensorMemory& m = *ctx_.memory;
    if (!is_pod(host.dtype)) {
      // AsProtoTensorContent + SerializeToString: a copy plus the encoding work.
      ++rec->copies;
      ctx_.runtime->execute(Work::serialize(*host.buffer(), n),
                            timed(*ctx_.runtime, rec, Phase::SERIALIZE, [reply, host](Status) { reply(host); }));
      return;
    }
    if (n <= ctx_.options.of<GrpcOptions>().inline_bytes) {
      // Small payloads are memcpy'd into the header slice.
      auto slice = ctx_.runtime->memory().allocate(n, AllocAttr::at(Location::host(ctx_.cpu_numa_node)));
      if (!slice.ok()) return reply(host);
      ++rec->copies;
      Buffer sl = slice.value();
      MemorySpace* space = &ctx_.runtime->memory();
      m.copy(sl, *host.buffer(), n, timed(*ctx_.runtime, rec, Phase::COPY, [reply, host, sl, space](Status) {
               space->free(sl);
               reply(host);
             }));
      return;
    }
    reply(host); // zero copy: a slice points at the tensor's own buffer
  };
  if (t.location().is_gpu()) {
    // GPU tensor: copy into a pinned host tensor first.
    auto host = mem.allocate(t.dtype, t.shape, Location::host(ctx_.cpu_numa_node),
                             AllocatorAttributes{true, true, false}, t.proto_bytes);
    if (!host.ok()) return respond(host.error());
    Tensor h = host.value();
    ++rec->copies;
    // `t` rides along: the source must stay allocated until the device-to-host copy has read it.
    mem.copy(*h.buffer(), *t.buffer(), n, timed(rt, rec, Phase::PCIE, [encode_host, h, t](Status) { encode_host(h); }));
    return;
  }
  encode_host(t);
}

void GrpcTransport::log_producer(const std::shared_ptr<TransferRecord>& rec, const std::string& error)
{
  rec->t_end = ctx_.runtime->now();
  rec->ok = error.empty();
  rec->error = error;
  if (ctx_.log) ctx_.log->add(*rec);
}

std::unique_ptr<Transport> make_grpc_transport(const TaskContext& ctx)
{
  return std::make_unique<GrpcTransport>(ctx);
}

TransportInfo grpc_transport_info()
{
  return {"grpc",
          "TensorFlow's default gRPC RecvTensor over TCP (Ethernet or IPoIB)",
          false,
          make_grpc_transport,
          "the RecvTensor RPC fails with UnavailableError (\"Socket closed\" / \"Connection reset by peer\" / "
          "deadline); the master aborts the step and session.run() raises it; the processes keep running. "
          "RecvTensor has no deadline by default: a peer that answers nothing (power loss) hangs the step",
          {}};
}

} // namespace tp::transports
