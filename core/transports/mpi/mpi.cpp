// MPI rendezvous: request/response/data messages, tag matching, MPI thread.
#include "core/transports/mpi/mpi.hpp"
#include "core/transports/mpi/mpi_wire.hpp"
#include "core/transports/rdma/messenger.hpp"
#include "core/transports/wire_common.hpp"

#include <cmath>
#include <deque>
#include <map>
#include <optional>
#include <utility>

namespace tp::transports {

namespace mpi_wire {

std::vector<uint8_t> encode(const Envelope& e)
{
  rpc::Writer w;
  w.u32(e.tag);
  w.bytes(e.body);
  return w.take();
}

std::vector<uint8_t> encode(const Request& r)
{
  rpc::Writer w;
  w.u64(r.step);
  w.str(r.key);
  w.u64(r.request_id);
  return w.take();
}

std::vector<uint8_t> encode(const Response& r)
{
  rpc::Writer w;
  w.u64(r.step);
  w.str(r.key);
  w.u8(uint8_t(r.carried));
  if (r.carried == Carried::ERROR) {
    w.str(r.error_code.substr(0, 64));
    w.str(r.error_text.substr(0, 512));
  } else {
    write_meta(w, r.meta);
  }
  return w.take();
}

namespace {

Error bad(const std::string& what)
{
  return Error::status("Internal", "malformed MPI message: " + what);
}

} // namespace

Result<Envelope> decode_envelope(const std::vector<uint8_t>& header, uint64_t payload_len)
{
  rpc::Reader r(header);
  Envelope e;
  if (!r.u32(e.tag) || (e.tag != TAG_REQUEST && e.tag != TAG_RESPONSE && e.tag != TAG_DATA))
    return bad("tag: expected 1010, 2020 or 3030");
  if (!r.bytes(e.body, 1 << 20) || !r.done()) return bad("envelope: expected a body of at most 1 MiB and no more");
  if (e.tag == TAG_REQUEST && payload_len != 0) return bad("a request with a payload");
  if (e.tag == TAG_DATA && !e.body.empty()) return bad("a data message with a body");
  return e;
}

Result<Request> decode_request(const std::vector<uint8_t>& body)
{
  rpc::Reader r(body);
  Request q;
  if (!r.u64(q.step) || !r.str(q.key, 4096) || !r.u64(q.request_id) || !r.done())
    return bad("request: expected a step, a key of at most 4096 bytes and a request id");
  return q;
}

Result<Response> decode_response(const std::vector<uint8_t>& body, uint64_t payload_len)
{
  rpc::Reader r(body);
  Response p;
  uint8_t carried = 0;
  if (!r.u64(p.step) || !r.str(p.key, 4096)) return bad("response: expected a step and a key of at most 4096 bytes");
  if (!r.u8(carried) || carried > 2) return bad("response: expected 0, 1 or 2 for how the tensor is carried");
  p.carried = Carried(carried);
  if (p.carried == Carried::ERROR) {
    if (!r.str(p.error_code, 64) || !r.str(p.error_text, 4096)) return bad("error status: expected two strings");
  } else if (!read_meta(r, p.meta)) {
    return bad("response meta-data: expected dtype, dead flag, at most 16 dims, proto size");
  }
  if (!r.done()) return bad(std::to_string(r.remaining()) + " trailing bytes");
  if (payload_len != p.payload_bytes())
    return bad("a payload of " + std::to_string(payload_len) + " bytes, expected " + std::to_string(p.payload_bytes()));
  return p;
}

} // namespace mpi_wire

MessengerOptions mpi_messenger_options()
{
  MessengerOptions o;
  o.service = "MpiBootstrap.Connect";
  o.eager_threshold = 12 << 10; // assumption: MVAPICH2/OpenMPI IB eager limits are of the order of 8-17 KiB
  o.chunk_bytes = 0;            // one RDMA READ per rendezvous message
  o.intra_node_copy = true;     // CUDA-aware MPI: shared memory / CUDA IPC between ranks of one node
  // CUDA-aware MPI pipelines host staging of GPU buffers the NIC cannot reach in fixed blocks (MVAPICH2's
  // MV2_CUDA_BLOCK_SIZE, 256 KiB by default per its user guide, as remembered; assumption for OpenMPI too).
  o.staging_block = 256 << 10;
  // ... and above a few KiB sends GPU buffers through that pipeline rather than let the NIC read GPU memory
  // (MVAPICH2-GDR's MV2_GPUDIRECT_LIMIT, 8 KiB by default per its user guide, as remembered).
  o.gpu_read_limit = 8 << 10;
  o.fatal_wc_errors = true; // CHECKs only; MPI_ERRORS_ARE_FATAL
  // Non-overtaking: the MPI thread's data messages on tag 3030 are matched in the order they were sent (an optimal-path
  // response's data after a larger one's used to overtake it while the larger one's payload was being registered).
  o.ordered = true;
  return o;
}

namespace {

using mpi_wire::Carried;
using mpi_wire::TAG_DATA;
using mpi_wire::TAG_REQUEST;
using mpi_wire::TAG_RESPONSE;
constexpr uint64_t INT_MAX_BYTES = 0x7FFFFFFF; ///< INT_MAX: MPI counts and protobuf's ByteSize() are C ints

/// What `static_cast<int>(count)` makes of a 64-bit count (two's complement, the low 32 bits).
int64_t as_c_int(uint64_t count)
{
  return int64_t(int32_t(uint32_t(count & 0xFFFFFFFFull)));
}

/// The transport's MPI thread: one MPI call at a time, each costing `call_seconds` (the host CPU profile's
/// mpi_call_overhead, TaskContext::library_call_seconds); a job may hold the thread until it calls its `release` (a
/// blocking MPI_Recv).
class MpiThread {
public:
  MpiThread(Runtime& rt, double call_seconds) : rt_(rt), call_seconds_(call_seconds) {}
  void submit(std::function<void(std::function<void()> release)> job)
  {
    jobs_.push_back(std::move(job));
    pump();
  }

private:
  void pump()
  {
    if (busy_ || jobs_.empty()) return;
    busy_ = true;
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    rt_.after(call_seconds_, [this, job = std::move(job)] {
      job([this] {
        busy_ = false;
        pump();
      });
    });
  }
  Runtime& rt_;
  double call_seconds_;
  bool busy_ = false;
  std::deque<std::function<void(std::function<void()>)>> jobs_;
};

struct Matching {
  Incoming msg;
  Messenger::Deliver deliver;
};

class MpiTransport final : public Transport {
public:
  explicit MpiTransport(const TaskContext& ctx)
      : ctx_(ctx), rpc_(*ctx.runtime, *ctx.streams, ctx.options.rpc_port),
        thread_(*ctx.runtime, ctx.library_call_seconds),
        reg_cache_(memory::make_tensor_memory(*ctx.runtime, ctx.device, cache_options(ctx))),
        messenger_(mpi_context(ctx, reg_cache_.get()), rpc_, messenger_options(),
                   [this](Incoming m, Messenger::Deliver d) { arrived(std::move(m), std::move(d)); })
  {
    messenger_.on_failure([this](const std::string& peer, const Error& e) { peer_failed(peer, e); });
  }
  const char* name() const override { return "mpi"; }
  void start(std::function<void(Status)> done) override
  {
    // The MPI thread's per-call cost comes from the host's CPU profile: a backend that did not give it is a bug, not
    // a free MPI library.
    Status st = std::isfinite(ctx_.library_call_seconds) && ctx_.library_call_seconds >= 0
                    ? rpc_.start()
                    : Status(Error::at("", "library_call_seconds",
                                       "the host's MPI call cost (the backend fills it from the CPU profile)",
                                       std::to_string(ctx_.library_call_seconds)));
    // TF's MPIRendezvousMgr starts its MPI thread in its constructor: a `while (1)` loop of MPI_Iprobe / MPI_Test
    // that never sleeps (tensorflow/contrib/mpi/mpi_rendezvous_mgr.cc, MPIBackgroundThread), so it holds a core for
    // the process's life. A collective library calling MPI from its own threads has no such loop.
    if (st.ok() && !ctx_.collective_library_only) ctx_.runtime->start_busy_poller(ctx_.cpu_numa_node);
    ctx_.runtime->post([st, done] { done(st); });
  }
  void shutdown() override { rpc_.shutdown(); }

  void recv_from_remote_async(int64_t step, const rendezvous::ParsedKey& key, const rendezvous::RecvArgs& args,
                              rendezvous::RecvCallback done) override
  {
    auto rec = std::make_shared<TransferRecord>();
    rec->transport = "mpi";
    rec->side = Side::CONSUMER;
    rec->step = step;
    rec->key = key.full;
    rec->local_task = ctx_.task;
    rec->peer_task = key.src.task_name();
    rec->dst_location = args.dst_location.to_string();
    rec->t_start = ctx_.runtime->now();
    const std::string id = std::to_string(step) + ";" + key.full;
    pending_[id] = Pending{args, std::move(done), rec, key.src.task_name()};
    auto header = mpi_wire::encode(mpi_wire::Request{uint64_t(step), key.full, next_request_id_++});
    const std::string peer = key.src.task_name();
    // The request closure runs on the MPI thread: serialize, MPI_Alloc_mem, Isend(1010). A request that cannot be
    // sent (the channel to the producer failed, perhaps before this Recv was posted, so peer_failed did not see it)
    // fails the Recv instead of leaving it to wait for a response that will not come.
    thread_.submit([this, peer, header, rec, id](std::function<void()> release) {
      isend(peer, TAG_REQUEST, header, nullptr, 0, rec, [this, id](Status st) {
        if (st.ok()) return;
        auto it = pending_.find(id);
        if (it == pending_.end()) return;
        Pending p = std::move(it->second);
        pending_.erase(it);
        finish(std::move(p), st.error());
      });
      release();
    });
  }

private:
  struct Pending {
    rendezvous::RecvArgs args;
    rendezvous::RecvCallback done;
    std::shared_ptr<TransferRecord> rec;
    std::string producer;
  };

  static memory::StrategyOptions cache_options(const TaskContext& ctx)
  {
    memory::StrategyOptions o;
    o.kind = memory::StrategyKind::ON_DEMAND_CACHED; // the MPI library's own registration cache
    o.nic_socket = ctx.cpu_numa_node;
    o.gpudirect_gpus = {}; // CUDA-aware MPI is not assumed: GPU buffers go through host staging
    return o;
  }
  static TaskContext mpi_context(TaskContext ctx, memory::TensorMemory* cache)
  {
    ctx.memory = cache;
    return ctx;
  }
  static MessengerOptions messenger_options() { return mpi_messenger_options(); }

  // ---- MPI library: tagged messages with matching ----
  void isend(const std::string& peer, uint32_t tag, std::vector<uint8_t> body, const Buffer* payload, uint64_t len,
             std::shared_ptr<TransferRecord> rec, std::function<void(Status)> sent)
  {
    messenger_.send(peer, mpi_wire::encode(mpi_wire::Envelope{tag, std::move(body)}), payload, len, std::move(rec),
                    std::move(sent));
  }

  void arrived(Incoming m, Messenger::Deliver deliver)
  {
    auto env = mpi_wire::decode_envelope(m.header, m.payload_len);
    if (!env.ok()) return deliver(Buffer{}, [](Status) {}); // not an MPI envelope: dropped (a malformed peer)
    const uint32_t tag = env->tag;
    m.header = std::move(env->body);
    if (tag == TAG_DATA) {
      // Matched by the MPI thread's blocking Recv(3030), in order per source.
      auto& posted = data_recvs_[m.peer_task];
      if (!posted.empty()) {
        auto recv = std::move(posted.front());
        posted.pop_front();
        return recv(std::move(m), std::move(deliver));
      }
      unexpected_data_[m.peer_task].push_back(Matching{std::move(m), std::move(deliver)});
      return;
    }
    // Iprobe(1010) / Iprobe(2020) succeed in the MPI thread's loop.
    thread_.submit([this, tag, m = std::move(m), deliver = std::move(deliver)](std::function<void()> release) mutable {
      if (tag == TAG_REQUEST)
        serve_request(std::move(m), std::move(deliver), std::move(release));
      else if (tag == TAG_RESPONSE)
        handle_response(std::move(m), std::move(deliver), std::move(release));
      else
        release();
    });
  }

  void recv_data(const std::string& peer, std::function<void(Incoming, Messenger::Deliver)> on)
  {
    auto& q = unexpected_data_[peer];
    if (!q.empty()) {
      auto mm = std::move(q.front());
      q.pop_front();
      return on(std::move(mm.msg), std::move(mm.deliver));
    }
    data_recvs_[peer].push_back(std::move(on));
  }

  // ---- producer ----
  void serve_request(Incoming m, Messenger::Deliver deliver, std::function<void()> release)
  {
    // Blocking Recv of the (eager) request into an MPI_Alloc_mem buffer, then parse.
    deliver(Buffer{}, [](Status) {});
    auto req = mpi_wire::decode_request(m.header);
    release();
    if (!req.ok()) return; // nobody to answer: the key is unknown
    const uint64_t step = req->step;
    const std::string key_text = req->key;
    auto key = rendezvous::parse_key(key_text);
    auto rec = std::make_shared<TransferRecord>();
    rec->transport = "mpi";
    rec->side = Side::PRODUCER;
    rec->step = int64_t(step);
    rec->key = key_text;
    rec->local_task = ctx_.task;
    rec->peer_task = m.peer_task;
    rec->t_start = ctx_.runtime->now();
    const std::string consumer = m.peer_task;
    if (!key.ok() || key->src_incarnation != ctx_.incarnation) {
      Error e = key.ok() ? Error::status("Aborted", "device incarnation mismatch: worker was probably restarted")
                         : key.error();
      return respond_error(consumer, int64_t(step), key_text, e);
    }
    ctx_.rendezvous->recv_local_async(int64_t(step), key.value(),
                                      [this, consumer, step, key_text, rec](Result<rendezvous::RecvOutcome> got) {
                                        if (!got.ok())
                                          return respond_error(consumer, int64_t(step), key_text, got.error());
                                        respond(consumer, int64_t(step), key_text, got.value(), rec);
                                      });
  }

  void respond_error(const std::string& consumer, int64_t step, const std::string& key, const Error& e)
  {
    mpi_wire::Response resp;
    resp.step = uint64_t(step);
    resp.key = key;
    resp.carried = Carried::ERROR;
    resp.error_code = e.code.empty() ? "Internal" : e.code;
    resp.error_text = e.text();
    auto body = mpi_wire::encode(resp);
    thread_.submit([this, consumer, body](std::function<void()> release) {
      isend(consumer, TAG_RESPONSE, body, nullptr, 0, nullptr, [](Status) {});
      release();
    });
  }

  void respond(const std::string& consumer, int64_t step, const std::string& key, rendezvous::RecvOutcome got,
               std::shared_ptr<TransferRecord> rec)
  {
    const Tensor t = got.tensor;
    const uint64_t n = got.is_dead ? 0 : t.total_bytes();
    rec->bytes = n;
    rec->src_location = t.location().to_string();
    const bool optimal =
        ctx_.options.of<MpiOptions>().optimal_path && is_pod(t.dtype) && n >= MPI_OPTIMAL_MIN_BYTES && !got.is_dead;
    auto header = [&](Carried carried) {
      return mpi_wire::encode(mpi_wire::Response{uint64_t(step), key, carried, {}, {}, TensorMeta::of(t, got.is_dead)});
    };
    if (auto refused =
            count_limit(t, n, optimal, header(optimal ? Carried::DATA_FOLLOWS : Carried::IN_PAYLOAD).size())) {
      rec->t_end = ctx_.runtime->now();
      rec->ok = false;
      rec->error = refused->first.message();
      if (ctx_.log) ctx_.log->add(*rec);
      // The original aborts (fatal) or would corrupt the tensor (refused): the consumer's Recv gets the reason.
      if (refused->second && ctx_.on_fatal) ctx_.on_fatal(refused->first);
      return respond_error(consumer, step, key, refused->first);
    }
    auto log = [this, rec](Status st) {
      rec->t_end = ctx_.runtime->now();
      rec->ok = st.ok(); // a send that failed is logged as failed, not as a transfer that took this long
      if (!st.ok()) rec->error = st.error().message();
      if (ctx_.log) ctx_.log->add(*rec);
    };
    if (optimal) {
      // Metadata on 2020, the payload from the tensor's own buffer on 3030 (zero copy at the sender).
      auto body = header(Carried::DATA_FOLLOWS);
      thread_.submit([this, consumer, body, t, n, rec, log](std::function<void()> release) {
        isend(consumer, TAG_RESPONSE, body, nullptr, 0, nullptr, [](Status) {});
        isend(consumer, TAG_DATA, {}, t.buffer(), n, rec, [t, log](Status st) { log(st); }); // keeps t alive
        release();
      });
      return;
    }
    // Default: the whole TensorProto (host copy; GPU tensors copied to the host first) in the response.
    auto proto = ctx_.memory->allocate(t.dtype, t.shape, Location::host(ctx_.cpu_numa_node),
                                       AllocatorAttributes{true, true, false}, t.proto_bytes);
    if (n > 0 && !proto.ok()) return respond_error(consumer, step, key, proto.error());
    auto body = header(Carried::IN_PAYLOAD);
    auto send = [this, consumer, body, n, rec, log](Tensor p) {
      thread_.submit([this, consumer, body, p, n, rec, log](std::function<void()> release) {
        isend(consumer, TAG_RESPONSE, body, p.buffer(), n, rec, [p, log](Status st) { log(st); });
        release();
      });
    };
    if (n == 0) return send(Tensor{});
    Tensor p = proto.value();
    const bool pcie = t.location().is_gpu();
    // AsProtoTensorContent (a copy; GPU tensors come over PCIe), then SerializeToString into the MPI_Alloc_mem
    // buffer: a second copy for POD content (a bytes field), the encoder for other dtypes.
    rec->copies += 2;
    ctx_.memory->copy(*p.buffer(), *t.buffer(), n,
                      timed(*ctx_.runtime, rec, pcie ? Phase::PCIE : Phase::COPY, [this, p, t, n, rec, send](Status) {
                        if (!is_pod(t.dtype)) {
                          ctx_.runtime->execute(
                              Work::serialize(*p.buffer(), n),
                              timed(*ctx_.runtime, rec, Phase::SERIALIZE, [p, send](Status) { send(p); }));
                          return;
                        }
                        ctx_.memory->copy(*p.buffer(), *p.buffer(), n,
                                          timed(*ctx_.runtime, rec, Phase::COPY, [p, send](Status) { send(p); }));
                      }));
  }

  /// The error, and whether the original treats it as fatal, when the tensor's bytes exceed what a C int counts
  /// (TF's mpi_rendezvous_mgr.cc): the default path's `CHECK(mRes_.ByteSize() < INT_MAX) << "Buffer too large for
  /// single transfer"` on the whole response (the tensor plus `header` bytes); the optimal path's
  /// `MPI_Isend(data, static_cast<int>(TotalBytes()), MPI_CHAR, ...)`, whose count is negative from 2^31 bytes
  /// (MPI_ERR_COUNT; MPI_ERRORS_ARE_FATAL) and, from 2^32 bytes, may wrap to a smaller non-negative count (the
  /// receiver's MPI_Recv takes the same wrong count: silent truncation, refused here). With mpi_typed_counts the
  /// count is in elements of the tensor's datatype (Baidu's and Horovod's rings: MPI_FLOAT).
  std::optional<std::pair<Error, bool>> count_limit(const Tensor& t, uint64_t n, bool optimal, uint64_t header) const
  {
    if (!optimal) {
      if (n + header < INT_MAX_BYTES) return std::nullopt;
      return std::make_pair(Error::status("Aborted", "mpi: CHECK failed: mRes_.ByteSize() < INT_MAX (Buffer too large "
                                                     "for single transfer): a response of " +
                                                         std::to_string(n + header) + " bytes carrying a tensor of " +
                                                         std::to_string(n) + " bytes (the limit is " +
                                                         std::to_string(INT_MAX_BYTES) + "; the original aborts)"),
                            true);
    }
    const bool typed = ctx_.options.of<MpiOptions>().typed_counts;
    const uint64_t unit = typed ? std::max<uint64_t>(1, dtype_size(t.dtype)) : 1;
    const uint64_t count = n / unit;
    if (count <= INT_MAX_BYTES) return std::nullopt;
    const int64_t c = as_c_int(count);
    const std::string what = "mpi: MPI_Isend of a tensor of " + std::to_string(n) + " bytes: its count " +
                             std::to_string(count) + (typed ? " elements" : " bytes") +
                             " exceeds INT_MAX (2147483647) and becomes " + std::to_string(c) + " as a C int";
    if (c < 0) return std::make_pair(Error::status("Aborted", what + ": MPI_ERR_COUNT (the original aborts)"), true);
    return std::make_pair(Error::status("OutOfRange", what + ": the original would send " +
                                                          std::to_string(uint64_t(c) * unit) +
                                                          " bytes and report success (silent truncation): refused"),
                          false);
  }

  // ---- consumer ----
  void handle_response(Incoming m, Messenger::Deliver deliver, std::function<void()> release)
  {
    auto resp = mpi_wire::decode_response(m.header, m.payload_len);
    if (!resp.ok()) {
      deliver(Buffer{}, [](Status) {});
      release();
      // A malformed response to one of our requests fails it; anything else from a malformed peer is dropped.
      rpc::Reader r(m.header);
      uint64_t step = 0;
      std::string key;
      if (!r.u64(step) || !r.str(key, 4096)) return;
      auto it = pending_.find(std::to_string(step) + ";" + key);
      if (it == pending_.end()) return;
      Pending p = std::move(it->second);
      pending_.erase(it);
      return finish(std::move(p), resp.error());
    }
    const std::string id = std::to_string(resp->step) + ";" + resp->key;
    auto it = pending_.find(id);
    if (it == pending_.end()) {
      deliver(Buffer{}, [](Status) {});
      return release();
    }
    Pending p = std::move(it->second);
    pending_.erase(it);
    if (resp->carried == Carried::ERROR) {
      deliver(Buffer{}, [](Status) {});
      release();
      return finish(std::move(p), Error::status(resp->error_code, resp->error_text));
    }
    const TensorMeta meta = resp->meta;
    const bool in_payload = resp->carried == Carried::IN_PAYLOAD;
    const uint64_t n = meta.is_dead ? 0 : meta.total_bytes();
    p.rec->bytes = n;
    if (meta.is_dead || n == 0) {
      deliver(Buffer{}, [](Status) {});
      release();
      Tensor t;
      t.dtype = meta.dtype;
      t.shape = meta.shape;
      return finish(std::move(p), rendezvous::RecvOutcome{t, meta.is_dead});
    }
    auto dst = ctx_.memory->allocate(meta.dtype, meta.shape, p.args.dst_location, p.args.alloc_attrs, meta.proto_bytes);
    if (!dst.ok()) {
      deliver(Buffer{}, [](Status) {});
      release();
      return finish(std::move(p), dst.error());
    }
    Tensor out = dst.value();
    auto pp = std::make_shared<Pending>(std::move(p));
    if (in_payload) {
      // The proto came with the response: receive it into an MPI_Alloc_mem buffer, then MakeTensorFromProto.
      auto proto = ctx_.memory->allocate(meta.dtype, meta.shape, Location::host(ctx_.cpu_numa_node),
                                         AllocatorAttributes{true, true, false}, meta.proto_bytes);
      if (!proto.ok()) {
        deliver(Buffer{}, [](Status) {});
        release();
        return finish(std::move(*pp), proto.error());
      }
      Tensor pr = proto.value();
      const double t0 = ctx_.runtime->now();
      deliver(*pr.buffer(), [this, pp, pr, out, n, t0, release](Status st) {
        pp->rec->add(Phase::WIRE, ctx_.runtime->now() - t0);
        release(); // the blocking receive is over
        if (!st.ok()) return finish(std::move(*pp), st.error());
        // ParseFromString (a copy of the bytes field, or the decoder for non-POD), then MakeTensorFromProto (a copy
        // into the destination; H2D for a GPU).
        pp->rec->copies += 2;
        const bool pcie = out.location().is_gpu();
        auto make = [this, pp, pr, out, n, pcie](Status) {
          // The completion holds `pr` until the copy out of it is done: otherwise the MPI_Alloc_mem buffer went
          // back to the pool while the copy was still reading it, and the next response's RDMA READ could land
          // in it mid-copy (ThreadSanitizer found this; docs/sanitizers.md).
          ctx_.memory->copy(
              *out.buffer(), *pr.buffer(), n,
              timed(*ctx_.runtime, pp->rec, pcie ? Phase::PCIE : Phase::COPY, [this, pp, pr, out](Status s2) {
                if (!s2.ok()) return finish(std::move(*pp), s2.error());
                finish(std::move(*pp), rendezvous::RecvOutcome{out, false});
              }));
        };
        if (!is_pod(out.dtype))
          ctx_.runtime->execute(Work::serialize(*pr.buffer(), n, true),
                                timed(*ctx_.runtime, pp->rec, Phase::SERIALIZE, make));
        else
          ctx_.memory->copy(*pr.buffer(), *pr.buffer(), n, timed(*ctx_.runtime, pp->rec, Phase::COPY, make));
      });
      return;
    }
    // Optimal path: the 2020 message was metadata only; a blocking Recv(3030) straight into the tensor. The MPI
    // thread is held until the data has landed.
    deliver(Buffer{}, [](Status) {});
    const std::string producer = m.peer_task;
    // MPI_Irecv instead of MPI_Recv (the way Baidu's ring posts its receives): the thread is free at once.
    const bool nonblocking = ctx_.options.of<MpiOptions>().nonblocking_recv;
    if (nonblocking) release();
    recv_data(producer, [this, pp, out, release, nonblocking](Incoming, Messenger::Deliver d) {
      const double t0 = ctx_.runtime->now();
      d(*out.buffer(), [this, pp, out, release, t0, nonblocking](Status st) {
        pp->rec->add(Phase::WIRE, ctx_.runtime->now() - t0);
        if (!nonblocking) release();
        if (!st.ok()) return finish(std::move(*pp), st.error());
        finish(std::move(*pp), rendezvous::RecvOutcome{out, false});
      });
    });
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
    if (p.done) p.done(std::move(r));
  }

  void peer_failed(const std::string& peer, const Error& e)
  {
    std::vector<std::string> ids;
    for (auto& [id, p] : pending_)
      if (p.producer == peer) ids.push_back(id);
    for (const auto& id : ids) {
      Pending p = std::move(pending_.at(id));
      pending_.erase(id);
      finish(std::move(p), e);
    }
  }

  TaskContext ctx_;
  rpc::RpcNode rpc_;
  MpiThread thread_;
  std::unique_ptr<memory::TensorMemory> reg_cache_;
  Messenger messenger_;
  std::map<std::string, Pending> pending_;
  std::map<std::string, std::deque<std::function<void(Incoming, Messenger::Deliver)>>> data_recvs_;
  std::map<std::string, std::deque<Matching>> unexpected_data_;
  uint64_t next_request_id_ = 1;
};

} // namespace

std::unique_ptr<Transport> make_mpi_transport(const TaskContext& ctx)
{
  return std::make_unique<MpiTransport>(ctx);
}

} // namespace tp::transports

namespace tp::transports {

std::vector<OptionKnob> mpi_option_knobs()
{
  return {
      {"mpi_optimal_path", "mpi-optimal-path",
       "mpi: raw-buffer data messages (TF's MPI_OPTIMAL_PATH=1; CUDA-aware MPI)", false,
       [](TransportOptions& o, bool v) { o.own<MpiOptions>().optimal_path = v; },
       [](const TransportOptions& o) { return o.of<MpiOptions>().optimal_path; }},
      {"mpi_nonblocking_recv", "mpi-nonblocking-recv",
       "mpi: data receives posted as MPI_Irecv (Baidu's ring) instead of TF grpc+mpi's blocking MPI_Recv", false,
       [](TransportOptions& o, bool v) { o.own<MpiOptions>().nonblocking_recv = v; },
       [](const TransportOptions& o) { return o.of<MpiOptions>().nonblocking_recv; }},
      {"mpi_typed_counts", "", "mpi: message counts in elements of the tensor's datatype (MPI_FLOAT), not bytes", false,
       [](TransportOptions& o, bool v) { o.own<MpiOptions>().typed_counts = v; },
       [](const TransportOptions& o) { return o.of<MpiOptions>().typed_counts; }},
  };
}

TransportInfo mpi_transport_info()
{
  return {"mpi",
          "TF contrib MPI rendezvous (grpc+mpi): tagged MPI messages from one MPI thread over an MPI library model",
          true,
          make_mpi_transport,
          "CHECKs only, no status propagation: with MPI_ERRORS_ARE_FATAL the MPI library aborts and mpirun kills "
          "every rank of the job",
          mpi_option_knobs()};
}

} // namespace tp::transports
