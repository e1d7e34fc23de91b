// GDR: RecvTensor with dma_ok, remote memory region descriptors, READ + release.
#include "core/transports/gdr/gdr.hpp"
#include "core/transports/gdr/gdr_wire.hpp"
#include "core/transports/grpc/grpc.hpp"
#include "core/transports/rdma/rdma_channels.hpp"

#include <unordered_map>

namespace tp::transports {

namespace gdr_wire {

void write_remote_region(rpc::Writer& w, const RemoteRegion& region)
{
  w.u64(region.addr);
  w.u32(region.rkey);
  w.u32(region.key);
}

Result<RemoteRegion> read_remote_region(rpc::Reader& r, const TensorMeta& meta)
{
  RemoteRegion region;
  if (!r.u64(region.addr) || !r.u32(region.rkey) || !r.u32(region.key) || !r.done())
    return Error::status("Internal", "malformed GDR remote memory region in RecvTensor response");
  if (meta.is_dead || !is_pod(meta.dtype))
    return Error::status("Internal", "GDR remote memory region for a dead or non-POD tensor");
  region.bytes = meta.total_bytes();
  if (region.bytes == 0) return Error::status("Internal", "GDR remote memory region of 0 bytes");
  // One RDMA READ of the whole tensor, whose length is a 32-bit SGE length (rdma_post_read casts it): a longer
  // one would wrap (the original reads `bytes mod 2^32` and reports success). A READ over the RC limit but within
  // 32 bits is posted: the NIC fails it with LOC_LEN_ERR, as it fails the original's.
  if (!verbs::sge_length(region.bytes))
    return Error::status("OutOfRange", "GDR: " + verbs::sge_wraps("the RDMA READ", region.bytes) +
                                           "; the original would read that many bytes and report success: refused");
  return region;
}

} // namespace gdr_wire

namespace {

using gdr_wire::KIND_GDR;

class GdrTransport final : public GrpcTransport {
public:
  explicit GdrTransport(const TaskContext& ctx)
      : GrpcTransport(ctx, "gdr"),
        channels_(ctx, rpc_, channel_options(ctx), nullptr, nullptr,
                  [this](Channel& ch, const verbs::WorkCompletion& wc) { on_completion(ch, wc); })
  {
  }

  void start(std::function<void(Status)> done) override
  {
    // GdrMemoryManager::Run, on its own thread for the process's life: a `while (!stopped_)` loop of a non-blocking
    // rdma_get_request and ibv_poll_cq over every connection's CQ, which never blocks (tensorflow/contrib/gdr/
    // gdr_memory_manager.cc as first merged, and again once the client side was made asynchronous; one version in
    // between waited in epoll_wait with a 1 ms timeout instead): a core busy.
    GrpcTransport::start([this, done = std::move(done)](Status st) {
      if (st.ok()) ctx_.runtime->start_busy_poller(ctx_.cpu_numa_node);
      done(st);
    });
  }

protected:
  bool dma_ok() const override { return true; }

  void produce(std::shared_ptr<TransferRecord> rec, rendezvous::RecvOutcome got, double t_arrived, bool dma,
               const std::string& consumer_task, rpc::Responder respond) override
  {
    const Tensor t = got.tensor;
    const uint64_t n = got.is_dead ? 0 : t.total_bytes();
    if (!dma || got.is_dead || !is_pod(t.dtype) || n <= ctx_.options.of<GdrOptions>().min_bytes || !ctx_.device)
      return encode(rec, std::move(got), t_arrived, std::move(respond));
    if (!verbs::sge_length(n)) {
      // The consumer's rdma_post_read would cast the length to 32 bits and read `n mod 2^32` bytes (silent
      // corruption): refused here, before anything is registered or copied.
      rec->bytes = n;
      rec->src_location = t.location().to_string();
      const Error e = Error::status("OutOfRange", "GDR: " + verbs::sge_wraps("the consumer's RDMA READ", n) +
                                                      "; the original would read that many bytes and report "
                                                      "success: refused");
      log_producer(rec, e.message());
      return respond(e);
    }
    rec->bytes = n;
    rec->src_location = t.location().to_string();
    const double t0 = ctx_.runtime->now();
    const uint64_t reg0 = ctx_.memory->stats().registrations;
    ctx_.memory->acquire(
        *t.buffer(), verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_READ,
        [this, rec, t, n, t_arrived, respond, t0, reg0](Result<memory::NicBuffer> v) {
          if (!v.ok()) {
            log_producer(rec, v.error().message());
            return respond(Error::status("Unavailable", "Cannot find pinned memory region: " + v.error().message()));
          }
          rec->add(Phase::REGISTRATION, ctx_.runtime->now() - t0);
          rec->registrations += uint32_t(ctx_.memory->stats().registrations - reg0);
          auto view = v.value();
          if (view.staged) ++rec->copies;
          const bool pcie = view.staged && t.location().is_gpu();
          ctx_.memory->copy_in(view, n,
                               timed(*ctx_.runtime, rec, pcie ? Phase::PCIE : Phase::COPY,
                                     [this, rec, t, n, t_arrived, respond, view](Status st) {
                                       if (!st.ok()) {
                                         log_producer(rec, st.error().message());
                                         return respond(st.error());
                                       }
                                       // Keep the tensor (and its NIC view) alive until the consumer releases the key.
                                       const uint32_t key = next_key_++;
                                       held_[key] = Held{t, view, rec};
                                       rpc::Writer w = response_header(KIND_GDR, TensorMeta::of(t, false), t_arrived);
                                       gdr_wire::write_remote_region(
                                           w, {view.nic.addr, advertised_rkey(ctx_.options, view.mr.rkey), key, n});
                                       rpc::Payload p{w.take(), 0};
                                       p.extra_wire_bytes = grpc_wire_bytes(p.bytes.size(), 60) - p.bytes.size();
                                       respond(std::move(p));
                                     }));
        });
  }

  void consume(uint8_t kind, const TensorMeta& meta, rpc::Reader& r, rpc::Payload resp,
               std::shared_ptr<TransferRecord> rec, const rendezvous::RecvArgs& args, const std::string& producer,
               Finish finish) override
  {
    if (kind != KIND_GDR)
      return GrpcTransport::consume(kind, meta, r, std::move(resp), rec, args, producer, std::move(finish));
    auto region = gdr_wire::read_remote_region(r, meta);
    if (!region.ok()) return finish(region.error());
    const uint64_t addr = region->addr, n = region->bytes;
    const uint32_t rkey = region->rkey, key = region->key;
    AllocatorAttributes attrs = args.alloc_attrs;
    attrs.nic_compatible = true;
    auto dst = ctx_.memory->allocate(meta.dtype, meta.shape, args.dst_location, attrs, meta.proto_bytes);
    if (!dst.ok()) return finish(dst.error());
    Tensor out = dst.value();
    const double t0 = ctx_.runtime->now();
    const uint64_t reg0 = ctx_.memory->stats().registrations;
    const std::string producer_task = rec->peer_task;
    ctx_.memory->acquire(*out.buffer(), verbs::Access::LOCAL_WRITE, [=, this](Result<memory::NicBuffer> v) {
      if (!v.ok()) return finish(v.error());
      rec->add(Phase::REGISTRATION, ctx_.runtime->now() - t0);
      rec->registrations += uint32_t(ctx_.memory->stats().registrations - reg0);
      const memory::NicBuffer view = v.value();
      channels_.get(producer_task, [=, this](Result<Channel*> ch) {
        if (!ch.ok()) {
          ctx_.memory->release(view);
          return finish(ch.error());
        }
        Channel* c = ch.value();
        verbs::SendWr w;
        w.wr_id = next_wr_++;
        w.opcode = verbs::WrOpcode::RDMA_READ;
        w.sg_list.push_back({view.nic.addr, *verbs::sge_length(n), view.mr.lkey}); // read_remote_region checked
        w.remote_addr = addr;
        w.rkey = rkey;
        const double t_read = ctx_.runtime->now();
        reads_[w.wr_id] = [=, this](const verbs::WorkCompletion& wc) {
          rec->add(Phase::WIRE, ctx_.runtime->now() - t_read);
          if (!wc.ok()) {
            ctx_.memory->release(view);
            // GdrMemoryManager::TensorFromTransportOptions: Unavailable(ibv_wc_status_str(status)).
            std::string what = verbs::to_string(wc.status);
            if (wc.status == verbs::WcStatus::LOC_LEN_ERR && n > verbs::MAX_MESSAGE_BYTES)
              what += ": " + verbs::oversized_message("the RDMA READ", n);
            return finish(Error::status("Unavailable", "GDR RDMA READ failed: " + what));
          }
          // Release the producer's buffer: zero-length WRITE_WITH_IMM carrying the key.
          verbs::SendWr rel;
          rel.wr_id = 0;
          rel.opcode = verbs::WrOpcode::RDMA_WRITE_WITH_IMM;
          rel.imm_data = key;
          rel.signaled = false;
          (void)c->qp->post_send(rel);
          if (view.staged) ++rec->copies;
          const bool pcie = view.staged && out.location().is_gpu();
          ctx_.memory->copy_out(view, n,
                                timed(*ctx_.runtime, rec, pcie ? Phase::PCIE : Phase::COPY, [=, this](Status st) {
                                  ctx_.memory->release(view);
                                  if (!st.ok()) return finish(st.error());
                                  finish(rendezvous::RecvOutcome{out, false});
                                }));
        };
        if (auto st = c->qp->post_send(w); !st.ok()) {
          reads_.erase(w.wr_id);
          ctx_.memory->release(view);
          finish(st.error());
        }
      });
    });
  }

private:
  struct Held {
    Tensor tensor;
    memory::NicBuffer view;
    std::shared_ptr<TransferRecord> rec;
  };

  static RdmaChannels::Options channel_options(const TaskContext& ctx)
  {
    RdmaChannels::Options o;
    o.service = "GdrService.Connect"; // stands in for RDMA CM on the gRPC host:port
    o.queue_depth = ctx.options.of<GdrOptions>().queue_depth;
    o.recv_wrs = o.queue_depth; // 1024 zero-length receives per connection
    o.rc.access = verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_WRITE | verbs::Access::REMOTE_READ;
    return o;
  }

  void on_completion(Channel& ch, const verbs::WorkCompletion& wc)
  {
    if (wc.opcode == verbs::WcOpcode::RECV_RDMA_WITH_IMM && wc.ok()) {
      (void)channels_.post_receives(ch, 1);
      auto it = held_.find(wc.imm_data);
      if (it == held_.end()) return;
      Held h = std::move(it->second);
      held_.erase(it);
      ctx_.memory->release(h.view);
      log_producer(h.rec, "");
      return;
    }
    auto it = reads_.find(wc.wr_id);
    if (it != reads_.end()) {
      auto cb = std::move(it->second);
      reads_.erase(it);
      cb(wc);
      return;
    }
    if (!wc.ok()) {
      // A failed channel (e.g. the QP went to ERR): every read in flight on it fails.
      auto reads = std::move(reads_);
      reads_.clear();
      for (auto& [id, cb] : reads)
        cb(wc);
    }
  }

  RdmaChannels channels_;
  std::unordered_map<uint32_t, Held> held_;
  std::unordered_map<uint64_t, std::function<void(const verbs::WorkCompletion&)>> reads_;
  uint32_t next_key_ = 0x5EED0001; // "32-bit, random start"
  uint64_t next_wr_ = 1;
};

} // namespace

std::unique_ptr<Transport> make_gdr_transport(const TaskContext& ctx)
{
  return std::make_unique<GdrTransport>(ctx);
}

TransportInfo gdr_transport_info()
{
  return {"gdr",
          "TF contrib GDR (HKUST): metadata over gRPC, one RDMA READ of NIC-registered (GPUDirect) memory",
          true,
          make_gdr_transport,
          "a READ completion error becomes Unavailable(<wc status>) for that RecvTensor and the step fails with "
          "UnavailableError; the metadata RPC fails like gRPC's",
          {}};
}

} // namespace tp::transports
