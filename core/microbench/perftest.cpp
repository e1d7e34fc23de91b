// perftest driver: set-up (buffers, registration, CQ, QPs), out-of-band exchange over the stream,
// bring-up, then one bandwidth or latency run per size. Everything is callback driven.
#include "core/microbench/perftest.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace tp::microbench {

using namespace tp::verbs;

const char* to_string(Verb v)
{
  switch (v) {
  case Verb::WRITE:
    return "RDMA_Write";
  case Verb::READ:
    return "RDMA_Read";
  case Verb::SEND:
    return "Send";
  }
  return "?";
}

bool parse_verb(const std::string& text, Verb& out)
{
  if (text == "write")
    out = Verb::WRITE;
  else if (text == "read")
    out = Verb::READ;
  else if (text == "send")
    out = Verb::SEND;
  else
    return false;
  return true;
}

std::vector<uint64_t> PerftestConfig::all_sizes()
{
  std::vector<uint64_t> s;
  for (int e = 1; e <= 23; ++e)
    s.push_back(uint64_t(1) << e);
  return s;
}

LatRow latency_stats(uint64_t bytes, std::vector<double> v)
{
  LatRow r;
  r.bytes = bytes;
  r.iterations = v.size();
  if (v.empty()) return r;
  std::sort(v.begin(), v.end());
  auto pct = [&](double p) {
    size_t i = size_t(std::ceil(p * double(v.size())));
    i = i == 0 ? 0 : i - 1;
    return v[std::min(i, v.size() - 1)];
  };
  r.t_min = v.front();
  r.t_max = v.back();
  r.t_typical = v[v.size() / 2];
  r.t_avg = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  double var = 0;
  for (double x : v)
    var += (x - r.t_avg) * (x - r.t_avg);
  r.t_stdev = std::sqrt(var / double(v.size()));
  r.p99 = pct(0.99);
  r.p999 = pct(0.999);
  return r;
}

double peak_bandwidth(uint64_t bytes, const std::vector<double>& posted, const std::vector<double>& completed)
{
  const size_t n = std::min(posted.size(), completed.size());
  if (n == 0) return 0;
  const size_t stride = std::max<size_t>(1, n / 2048); // exact for n <= 2048, strided beyond
  double best = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < n; i += stride)
    for (size_t j = i; j < n; j += stride) {
      const double dt = (completed[j] - posted[i]) / double(j - i + 1);
      if (dt > 0 && dt < best) best = dt;
    }
  return std::isfinite(best) ? double(bytes) / best : 0;
}

namespace {

struct SideState {
  PerftestSide side;
  std::unique_ptr<CompletionQueue> cq;
  std::vector<std::unique_ptr<QueuePair>> qps;
  Buffer buf;
  MemoryRegion mr;
  std::vector<QpEndpoint> local;
  std::vector<QpEndpoint> remote;
  uint64_t remote_addr = 0;
  uint32_t remote_rkey = 0;
  StreamPtr conn;
  uint32_t inline_limit = 0;
  std::function<void(const WorkCompletion&)> on_wc;
};

std::vector<uint8_t> encode_info(const SideState& s)
{
  std::vector<uint8_t> out;
  auto put = [&out](uint64_t v, int n) {
    for (int i = 0; i < n; ++i)
      out.push_back(uint8_t(v >> (8 * i)));
  };
  put(s.local.size(), 4);
  for (const auto& e : s.local) {
    auto b = e.encode();
    out.insert(out.end(), b.begin(), b.end());
  }
  put(s.buf.addr, 8);
  put(s.mr.rkey, 4);
  return out;
}

bool decode_info(const std::vector<uint8_t>& in, SideState& s)
{
  size_t off = 0;
  auto get = [&](int n, uint64_t& v) {
    if (off + size_t(n) > in.size()) return false;
    v = 0;
    for (int i = 0; i < n; ++i)
      v |= uint64_t(in[off + size_t(i)]) << (8 * i);
    off += size_t(n);
    return true;
  };
  uint64_t count = 0;
  if (!get(4, count) || count > 4096) return false;
  s.remote.clear();
  for (uint64_t i = 0; i < count; ++i) {
    QpEndpoint e;
    if (off + 26 > in.size() || !QpEndpoint::decode(in.data() + off, 26, e)) return false;
    off += 26;
    s.remote.push_back(e);
  }
  uint64_t addr = 0, rkey = 0;
  if (!get(8, addr) || !get(4, rkey) || off != in.size()) return false;
  s.remote_addr = addr;
  s.remote_rkey = uint32_t(rkey);
  return true;
}

} // namespace

struct Perftest::Impl : std::enable_shared_from_this<Perftest::Impl> {
  PerftestConfig cfg;
  SideState server, client;
  std::function<void(Result<PerftestResult>)> done;
  PerftestResult result;
  uint64_t slot = 64;
  bool finished = false;
  size_t size_index = 0;
  // current run
  uint64_t iters = 0;
  std::vector<uint64_t> posted, completed, received;
  std::vector<double> tposted, tcompleted, samples;
  double t_start = 0;
  uint64_t lat_iter = 0;
  double lat_t0 = 0;

  uint64_t cur_size() const { return cfg.sizes[size_index]; }
  Runtime& rt() { return *client.side.runtime; }

  void fail(const Error& e)
  {
    if (finished) return;
    finished = true;
    server.on_wc = nullptr;
    client.on_wc = nullptr;
    auto d = std::move(done);
    if (d) d(e);
  }

  // ---- set-up ----
  Status setup_side(SideState& s, bool is_client)
  {
    Device& dev = *s.side.device;
    const DeviceAttr attr = dev.query();
    if (is_client) {
      result.device = attr.name;
      result.attr = attr;
    }
    s.inline_limit = 0;
    if (cfg.metric == Metric::LAT && cfg.verb != Verb::READ)
      s.inline_limit = cfg.inline_size >= 0 ? uint32_t(cfg.inline_size) : std::min<uint32_t>(220, attr.max_inline_data);
    else if (cfg.inline_size > 0 && cfg.verb != Verb::READ)
      s.inline_limit = uint32_t(cfg.inline_size);
    s.inline_limit = std::min(s.inline_limit, attr.max_inline_data);
    AllocAttr aa;
    aa.location = s.side.buffer_location;
    aa.host_kind = HostMemoryKind::PINNED;
    auto buf = s.side.runtime->memory().allocate(slot * uint64_t(cfg.qps), aa);
    if (!buf.ok()) return buf.error();
    s.buf = buf.value();
    auto mr = dev.reg_mr(s.buf.addr, s.buf.size, Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ);
    if (!mr.ok()) return mr.error();
    s.mr = mr.value();
    auto cq = dev.create_cq(cfg.qps * (cfg.tx_depth + cfg.rx_depth) + 16);
    if (!cq.ok()) return cq.error();
    s.cq = std::move(cq.value());
    std::weak_ptr<Impl> weak = shared_from_this();
    SideState* sp = &s;
    s.cq->set_handler([weak, sp](const WorkCompletion& wc) {
      if (auto self = weak.lock(); self && sp->on_wc) sp->on_wc(wc);
    });
    for (int q = 0; q < cfg.qps; ++q) {
      QpInitAttr ia;
      ia.send_cq = s.cq.get();
      ia.recv_cq = s.cq.get();
      ia.cap.max_send_wr = uint32_t(cfg.tx_depth) + 4;
      ia.cap.max_recv_wr = uint32_t(cfg.rx_depth) + 4;
      ia.cap.max_inline_data = s.inline_limit;
      auto qp = dev.create_qp(ia);
      if (!qp.ok()) return qp.error();
      QpEndpoint ep;
      ep.port = dev.port_address();
      ep.qp_num = qp.value()->qp_num();
      ep.psn = uint32_t((0x1000 * (q + 1) + (is_client ? 7 : 3)) & 0xFFFFFF);
      s.local.push_back(ep);
      s.qps.push_back(std::move(qp.value()));
    }
    return ok_status();
  }

  Status connect_qps(SideState& s)
  {
    RcConnectOptions opt;
    opt.path_mtu = cfg.mtu;
    for (size_t q = 0; q < s.qps.size(); ++q)
      TP_TRY(bring_up_rc_qp(*s.qps[q], s.local[q].psn, s.remote[q], opt));
    return ok_status();
  }

  void register_then(SideState& s, std::function<void(Status)> next)
  {
    // Charge the registration time on the runtime, then register (as ibv_reg_mr would take that long).
    s.side.runtime->execute(Work::registration(Buffer{0, slot * uint64_t(cfg.qps), s.side.buffer_location}),
                            std::move(next));
  }

  void start()
  {
    const uint64_t max_size = *std::max_element(cfg.sizes.begin(), cfg.sizes.end());
    slot = std::max<uint64_t>(64, (max_size + 63) / 64 * 64);
    auto self = shared_from_this();
    register_then(server, [self](Status st) {
      if (!st.ok()) return self->fail(st.error());
      register_then_client(self);
    });
  }

  static void register_then_client(const std::shared_ptr<Impl>& self)
  {
    self->register_then(self->client, [self](Status st) {
      if (!st.ok()) return self->fail(st.error());
      if (auto s1 = self->setup_side(self->server, false); !s1.ok()) return self->fail(s1.error());
      if (auto s2 = self->setup_side(self->client, true); !s2.ok()) return self->fail(s2.error());
      self->exchange();
    });
  }

  void exchange()
  {
    // The connections' receive handlers hold the test weakly: the connections are the test's own (server.conn,
    // client.conn), so a strong capture would be a cycle that keeps both alive forever (LeakSanitizer found it).
    // So does the listener, which the stream network keeps until the simulation ends: a strong capture there
    // destroyed the test, and its QPs, after their device (UBSan: SimQueuePair's destructor on a dead SimDevice).
    // Perftest owns the test for the whole run, so the weak reference is always there when a message arrives.
    std::weak_ptr<Impl> weak = weak_from_this();
    auto st = server.side.streams->listen(cfg.port, [weak](StreamPtr conn) {
      auto self = weak.lock();
      if (!self) return;
      self->server.conn = conn;
      conn->set_receive_handler([weak](Message m) {
        auto self = weak.lock();
        if (!self) return;
        if (!decode_info(m.bytes, self->server) || self->server.remote.size() != self->server.qps.size())
          return self->fail(
              Error::at("", "perftest exchange", "the client's QP endpoints and MR key", "a malformed message"));
        if (auto c = self->connect_qps(self->server); !c.ok()) return self->fail(c.error());
        self->server.conn->send(Message{encode_info(self->server), 0});
      });
    });
    if (!st.ok()) return fail(st.error());
    client.side.streams->connect(server.side.name, cfg.port, [weak](Result<StreamPtr> r) {
      auto self = weak.lock();
      if (!self) return;
      if (!r.ok()) return self->fail(r.error());
      self->client.conn = r.value();
      self->client.conn->set_receive_handler([weak](Message m) {
        auto self = weak.lock();
        if (!self) return;
        if (!decode_info(m.bytes, self->client) || self->client.remote.size() != self->client.qps.size())
          return self->fail(
              Error::at("", "perftest exchange", "the server's QP endpoints and MR key", "a malformed message"));
        if (auto c = self->connect_qps(self->client); !c.ok()) return self->fail(c.error());
        self->result.buffer_location = self->client.side.buffer_location.to_string();
        self->run_size();
      });
      self->client.conn->send(Message{encode_info(self->client), 0});
    });
  }

  // ---- helpers ----
  // len <= verbs::MAX_MESSAGE_BYTES: sizes over the RC limit are refused when the run is configured.
  Sge local_sge(SideState& s, size_t q, uint64_t len)
  {
    return Sge{s.buf.addr + q * slot, *sge_length(len), s.mr.lkey};
  }
  uint64_t remote_slot(SideState& s, size_t q) { return s.remote_addr + q * slot; }

  size_t qp_index(SideState& s, uint32_t qpn)
  {
    for (size_t q = 0; q < s.qps.size(); ++q)
      if (s.qps[q]->qp_num() == qpn) return q;
    return s.qps.size();
  }

  Status post_recv(SideState& s, size_t q, uint64_t id)
  {
    RecvWr r;
    r.wr_id = id;
    r.sg_list.push_back(local_sge(s, q, slot));
    return s.qps[q]->post_recv(r);
  }

  Status post_op(SideState& from, size_t q, uint64_t len, uint64_t id, bool signaled = true)
  {
    SendWr wr;
    wr.wr_id = id;
    wr.signaled = signaled;
    if (len > 0) wr.sg_list.push_back(local_sge(from, q, len));
    wr.inline_data = len <= from.inline_limit && from.inline_limit > 0 && cfg.verb != Verb::READ;
    switch (cfg.verb) {
    case Verb::WRITE:
      wr.opcode = WrOpcode::RDMA_WRITE;
      break;
    case Verb::READ:
      wr.opcode = WrOpcode::RDMA_READ;
      break;
    case Verb::SEND:
      wr.opcode = WrOpcode::SEND;
      break;
    }
    wr.remote_addr = remote_slot(from, q);
    wr.rkey = from.remote_rkey;
    return from.qps[q]->post_send(wr);
  }

  Error wc_error(const char* who, const WorkCompletion& wc)
  {
    return Error::at("",
                     std::string("perftest ") + who + " completion (wr_id " + std::to_string(wc.wr_id) + ", QP " +
                         std::to_string(wc.qp_num) + ")",
                     "success", to_string(wc.status));
  }

  // ---- runs ----
  void run_size()
  {
    if (finished) return;
    if (size_index >= cfg.sizes.size()) {
      finished = true;
      server.on_wc = nullptr;
      client.on_wc = nullptr;
      auto d = std::move(done);
      result.config = cfg;
      if (d) d(result);
      return;
    }
    iters = cfg.effective_iterations();
    const size_t nq = size_t(cfg.qps);
    posted.assign(nq, 0);
    completed.assign(nq, 0);
    received.assign(nq, 0);
    tposted.clear();
    tcompleted.clear();
    samples.clear();
    if (cfg.metric == Metric::BW)
      run_bw();
    else
      run_lat();
  }

  void next_size()
  {
    ++size_index;
    auto self = shared_from_this();
    rt().post([self] { self->run_size(); });
  }

  void fill(size_t q)
  {
    const uint64_t len = cur_size();
    while (posted[q] < iters && posted[q] - completed[q] < uint64_t(cfg.tx_depth)) {
      tposted.push_back(rt().now());
      if (auto st = post_op(client, q, len, posted[q]); !st.ok()) return fail(st.error());
      ++posted[q];
    }
  }

  void run_bw()
  {
    auto self = shared_from_this();
    const size_t nq = size_t(cfg.qps);
    if (cfg.verb == Verb::SEND) {
      // The server keeps rx_depth receives posted per QP (posted once; re-posted on every completion).
      if (size_index == 0)
        for (size_t q = 0; q < nq; ++q)
          for (int i = 0; i < cfg.rx_depth; ++i)
            if (auto st = post_recv(server, q, uint64_t(i)); !st.ok()) return fail(st.error());
      server.on_wc = [self](const WorkCompletion& wc) {
        if (!wc.ok()) return self->fail(self->wc_error("server receive", wc));
        const size_t q = self->qp_index(self->server, wc.qp_num);
        if (auto st = self->post_recv(self->server, q, wc.wr_id); !st.ok()) return self->fail(st.error());
      };
    }
    client.on_wc = [self, nq](const WorkCompletion& wc) {
      if (!wc.ok()) return self->fail(self->wc_error("client send", wc));
      const size_t q = self->qp_index(self->client, wc.qp_num);
      ++self->completed[q];
      ++self->result.operations;
      self->tcompleted.push_back(self->rt().now());
      self->fill(q);
      for (size_t i = 0; i < nq; ++i)
        if (self->completed[i] < self->iters) return;
      self->finish_bw();
    };
    t_start = rt().now();
    for (size_t q = 0; q < nq; ++q)
      fill(q);
  }

  void finish_bw()
  {
    BwRow r;
    r.bytes = cur_size();
    r.iterations = iters;
    const double total = double(iters) * double(cfg.qps);
    r.seconds = tcompleted.back() - tposted.front();
    r.bw_average = r.seconds > 0 ? total * double(r.bytes) / r.seconds : 0;
    r.msg_rate = r.seconds > 0 ? total / r.seconds : 0;
    r.bw_peak = std::max(peak_bandwidth(r.bytes, tposted, tcompleted), r.bw_average);
    result.bw.push_back(r);
    client.on_wc = nullptr;
    next_size();
  }

  void run_lat()
  {
    auto self = shared_from_this();
    lat_iter = 0;
    if (cfg.verb == Verb::READ) {
      client.on_wc = [self](const WorkCompletion& wc) {
        if (!wc.ok()) return self->fail(self->wc_error("client read", wc));
        ++self->result.operations;
        self->samples.push_back(self->rt().now() - self->lat_t0);
        self->lat_step();
      };
      server.on_wc = nullptr;
    } else if (cfg.verb == Verb::SEND) {
      // Ping-pong of SENDs: each side keeps receives posted; the server answers every receive.
      if (size_index == 0)
        for (int i = 0; i < 4; ++i) {
          if (auto st = post_recv(server, 0, 1000 + uint64_t(i)); !st.ok()) return fail(st.error());
          if (auto st = post_recv(client, 0, 2000 + uint64_t(i)); !st.ok()) return fail(st.error());
        }
      server.on_wc = [self](const WorkCompletion& wc) {
        if (!wc.ok()) return self->fail(self->wc_error("server", wc));
        if (wc.opcode != WcOpcode::RECV) return;
        if (auto st = self->post_recv(self->server, 0, wc.wr_id); !st.ok()) return self->fail(st.error());
        if (auto st = self->post_op(self->server, 0, self->cur_size(), 7); !st.ok()) return self->fail(st.error());
      };
      client.on_wc = [self](const WorkCompletion& wc) {
        if (!wc.ok()) return self->fail(self->wc_error("client", wc));
        if (wc.opcode != WcOpcode::RECV) return;
        ++self->result.operations;
        if (auto st = self->post_recv(self->client, 0, wc.wr_id); !st.ok()) return self->fail(st.error());
        self->samples.push_back((self->rt().now() - self->lat_t0) / 2);
        self->lat_step();
      };
    } else {
      // write_lat: each side spins on the last byte of its buffer; the server writes back on every arrival.
      server.on_wc = [self](const WorkCompletion& wc) {
        if (!wc.ok()) self->fail(self->wc_error("server write", wc));
      };
      client.on_wc = [self](const WorkCompletion& wc) {
        if (!wc.ok()) self->fail(self->wc_error("client write", wc));
      };
      arm_server_watch();
    }
    lat_step_first();
  }

  void arm_server_watch()
  {
    auto self = shared_from_this();
    const uint64_t len = cur_size();
    auto st = server.side.device->watch_memory(server.buf.addr + len - 1, 1, [self, len] {
      if (self->finished || self->cur_size() != len) return;
      if (self->lat_iter + 1 < self->iters) self->arm_server_watch();
      if (auto s2 = self->post_op(self->server, 0, len, 9); !s2.ok()) self->fail(s2.error());
    });
    if (!st.ok()) fail(st.error());
  }

  void lat_step_first()
  {
    lat_t0 = rt().now();
    issue_lat();
  }

  void issue_lat()
  {
    const uint64_t len = cur_size();
    if (cfg.verb == Verb::WRITE) {
      auto self = shared_from_this();
      auto st = client.side.device->watch_memory(client.buf.addr + len - 1, 1, [self] {
        ++self->result.operations;
        self->samples.push_back((self->rt().now() - self->lat_t0) / 2);
        self->lat_step();
      });
      if (!st.ok()) return fail(st.error());
    }
    if (auto st = post_op(client, 0, len, lat_iter); !st.ok()) fail(st.error());
  }

  void lat_step()
  {
    if (finished) return;
    ++lat_iter;
    if (lat_iter >= iters) {
      result.lat.push_back(latency_stats(cur_size(), samples));
      client.on_wc = nullptr;
      server.on_wc = nullptr;
      next_size();
      return;
    }
    lat_t0 = rt().now();
    issue_lat();
  }
};

Perftest::Perftest(PerftestSide server, PerftestSide client, PerftestConfig config) : impl_(std::make_shared<Impl>())
{
  impl_->cfg = std::move(config);
  impl_->server.side = server;
  impl_->client.side = client;
}

Perftest::~Perftest() = default;

void Perftest::start(std::function<void(Result<PerftestResult>)> done)
{
  if (impl_->cfg.sizes.empty() || impl_->cfg.qps < 1 || impl_->cfg.tx_depth < 1) {
    done(Error::at("", "perftest", "at least one size, one QP and a positive tx depth", "an empty configuration"));
    return;
  }
  for (uint64_t s : impl_->cfg.sizes)
    if (s == 0 || s > verbs::MAX_MESSAGE_BYTES) {
      done(Error::at("", "perftest --size", "1 B .. 2 GiB", std::to_string(s)));
      return;
    }
  impl_->done = std::move(done);
  impl_->start();
}

} // namespace tp::microbench
