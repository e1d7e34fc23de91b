// Timed copies; each direction: `iterations` back-to-back copies (the peer copies queued on one stream, as
// p2pBandwidthLatencyTest's asynchronous loop), bandwidth = bytes*iters/time.
#include "core/microbench/copy_bench.hpp"

#include <memory>

namespace tp::microbench {

namespace {

struct CopyRun : std::enable_shared_from_this<CopyRun> {
  Runtime& rt;
  CopyConfig cfg;
  std::function<void(Result<CopyResult>)> done;
  CopyResult result;
  Buffer host, gpu, gpu2, peer;
  int phase = 0; // 0 H2D, 1 D2H, 2 D2D, 3 peer
  int iter = 0;
  double t0 = 0;

  CopyRun(Runtime& r, CopyConfig c) : rt(r), cfg(c) {}

  void fail(const Error& e)
  {
    release();
    auto d = std::move(done);
    d(e);
  }
  void release()
  {
    for (Buffer* b : {&host, &gpu, &gpu2, &peer})
      if (b->addr) rt.memory().free(*b);
  }

  void start()
  {
    AllocAttr ha;
    ha.location = Location::host(cfg.host_node);
    ha.host_kind = cfg.pinned ? HostMemoryKind::PINNED : HostMemoryKind::PAGEABLE;
    auto h = rt.memory().allocate(cfg.bytes, ha);
    if (!h.ok()) return fail(h.error());
    host = h.value();
    AllocAttr ga;
    ga.location = Location::gpu(cfg.gpu);
    auto g = rt.memory().allocate(cfg.bytes, ga);
    if (!g.ok()) return fail(g.error());
    gpu = g.value();
    auto g2 = rt.memory().allocate(cfg.bytes, ga);
    if (!g2.ok()) return fail(g2.error());
    gpu2 = g2.value();
    if (cfg.peer_gpu >= 0) {
      if (cfg.peer_gpu == cfg.gpu)
        return fail(Error::at("", "peer_gpu", "a GPU other than gpu", std::to_string(cfg.gpu)));
      AllocAttr pa;
      pa.location = Location::gpu(cfg.peer_gpu);
      auto pg = rt.memory().allocate(cfg.bytes, pa);
      if (!pg.ok()) return fail(pg.error());
      peer = pg.value();
    }
    result.config = cfg;
    t0 = rt.now();
    step();
  }

  void step()
  {
    if (iter == cfg.iterations) {
      const double bw = double(cfg.bytes) * cfg.iterations / (rt.now() - t0);
      double* out[] = {&result.h2d_bandwidth, &result.d2h_bandwidth, &result.d2d_bandwidth, &result.p2p_bandwidth};
      *out[phase] = bw;
      ++phase;
      iter = 0;
      t0 = rt.now();
      if (phase == (cfg.peer_gpu >= 0 ? 4 : 3)) {
        release();
        auto d = std::move(done);
        d(result);
        return;
      }
    }
    auto self = shared_from_this();
    Work w = phase == 0   ? Work::memcpy(gpu, host, cfg.bytes)
             : phase == 1 ? Work::memcpy(host, gpu, cfg.bytes)
             : phase == 2 ? Work::memcpy(gpu2, gpu, cfg.bytes)
                          : Work::memcpy(peer, gpu, cfg.bytes);
    // p2pBandwidthLatencyTest queues its copies on one stream (cudaMemcpyPeerAsync in a loop) and waits once: after
    // the first, a copy's launch is hidden behind the one before it, unlike bandwidthTest's synchronous loop.
    w.queued = phase == 3 && iter > 0;
    rt.execute(w, [self](Status st) {
      if (!st.ok()) return self->fail(st.error());
      ++self->iter;
      self->step();
    });
  }
};

} // namespace

void run_copy_bench(Runtime& rt, const CopyConfig& cfg, std::function<void(Result<CopyResult>)> done)
{
  if (cfg.iterations < 1 || cfg.bytes == 0) {
    done(Error::at("", "pcie-copy", "a positive size and iteration count", "zero"));
    return;
  }
  auto run = std::make_shared<CopyRun>(rt, cfg);
  run->done = std::move(done);
  rt.post([run] { run->start(); });
}

} // namespace tp::microbench
