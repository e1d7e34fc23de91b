// Software verbs device (see soft_device.hpp).
#include "emulator/soft_device.hpp"

#include "emulator/completion_delivery.hpp"
#include "emulator/host_memory.hpp"
#include "emulator/process_wire.hpp"

#include "core/device/qp_state_machine.hpp"
#include "core/device/rc_responder_rules.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace tp::emu {

using namespace verbs;

// ---------------------------------------------------------------- fabric (the wire thread)

SoftFabric::SoftFabric(uint16_t first_lid) : next_lid_(first_lid)
{
  thread_ = std::thread([this] { run(); });
}

SoftFabric::~SoftFabric()
{
  link_.reset();
  {
    std::lock_guard<std::mutex> lock(q_mu_);
    stop_ = true;
  }
  q_cv_.notify_all();
  thread_.join();
}

uint16_t SoftFabric::attach(SoftDevice* dev)
{
  std::lock_guard<std::mutex> lock(state_mu_);
  const uint16_t lid = next_lid_++;
  if (link_ && !link_->owns(lid))
    throw std::logic_error("software fabric: more than " + std::to_string(ProcessLink::LIDS_PER_PROCESS) +
                           " devices in one linked process");
  devices_[lid] = dev;
  return lid;
}

void SoftFabric::detach(uint16_t lid)
{
  std::lock_guard<std::mutex> lock(state_mu_);
  devices_.erase(lid);
}

SoftDevice* SoftFabric::device(uint16_t lid) const
{
  auto it = devices_.find(lid);
  return it == devices_.end() ? nullptr : it->second;
}

void SoftFabric::submit(std::function<void()> op, double delay)
{
  {
    std::lock_guard<std::mutex> lock(q_mu_);
    if (delay <= 0)
      ready_.push_back(std::move(op));
    else
      delayed_.emplace(std::chrono::steady_clock::now() +
                           std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(delay)),
                       std::move(op));
  }
  q_cv_.notify_one();
}

void SoftFabric::run()
{
  std::unique_lock<std::mutex> lock(q_mu_);
  while (!stop_) {
    const auto now = std::chrono::steady_clock::now();
    while (!delayed_.empty() && delayed_.begin()->first <= now) {
      ready_.push_back(std::move(delayed_.begin()->second));
      delayed_.erase(delayed_.begin());
    }
    if (!ready_.empty()) {
      auto op = std::move(ready_.front());
      ready_.pop_front();
      lock.unlock();
      op();
      lock.lock();
      continue;
    }
    if (!delayed_.empty())
      q_cv_.wait_until(lock, delayed_.begin()->first);
    else
      q_cv_.wait(lock);
  }
}

// ---------------------------------------------------------------- completion queue

namespace {

class SoftCq final : public CompletionQueue {
public:
  explicit SoftCq(Runtime& rt) : delivery_(rt) {}
  void set_handler(CompletionHandler handler) override { delivery_.set_handler(std::move(handler)); }
  /// From the wire thread: deliver on the owner's runtime.
  void push(const WorkCompletion& wc) { delivery_.deliver(wc); }

private:
  CompletionDelivery delivery_;
};
} // namespace

// ---------------------------------------------------------------- queue pair

struct PendingSend {
  SendWr wr;
  std::vector<uint8_t> inline_bytes; ///< IBV_SEND_INLINE payload, copied at post time
  uint32_t retries = 0, rnr_retries = 0;
  bool in_flight = false; ///< sent to a responder in another process, its response not yet back
  uint64_t seq = 0;       ///< matches the response to the request
};

/// A contiguous piece of memory: where the requester's payload is, or where it goes.
struct Span {
  uint64_t addr;
  uint64_t len;
};

struct ResponderRequest {
  WrOpcode opcode;
  uint64_t len;
  uint32_t rkey;
  uint64_t remote_addr;
  uint32_t imm_data;
  bool unused = false;
};

struct QpCore;
ResponderVerdict respond(SoftDevice* pdev, QpCore* peer, const ResponderRequest& r, const std::vector<Span>& payload,
                         const std::vector<Span>& read_into, uint8_t& rnr_timer);

struct QpCore : std::enable_shared_from_this<QpCore> {
  SoftDevice& dev;
  QpInitAttr init;
  QpAttr attr;
  uint32_t qpn = 0;
  std::deque<PendingSend> sq;
  std::deque<RecvWr> rq;
  bool scheduled = false; ///< a process() is queued or waiting (RNR / timeout)

  QpCore(SoftDevice& d, const QpInitAttr& a) : dev(d), init(a) {}
  SoftCq* send_cq() const { return static_cast<SoftCq*>(init.send_cq); }
  SoftCq* recv_cq() const { return static_cast<SoftCq*>(init.recv_cq); }

  void complete_send(const PendingSend& p, WcStatus st, WcOpcode opc, uint32_t len)
  {
    if (st == WcStatus::SUCCESS && !p.wr.signaled && !init.sq_sig_all) return;
    WorkCompletion wc;
    wc.wr_id = p.wr.wr_id;
    wc.status = st;
    wc.opcode = opc;
    wc.byte_len = len;
    wc.qp_num = qpn;
    send_cq()->push(wc);
  }
  void complete_recv(const RecvWr& r, WcStatus st, WcOpcode opc, uint32_t len, bool imm, uint32_t imm_data)
  {
    WorkCompletion wc;
    wc.wr_id = r.wr_id;
    wc.status = st;
    wc.opcode = opc;
    wc.byte_len = len;
    wc.with_imm = imm;
    wc.imm_data = imm_data;
    wc.qp_num = qpn;
    recv_cq()->push(wc);
  }
  /// To ERR: every outstanding WR completes with WR_FLUSH_ERR.
  void enter_error()
  {
    attr.qp_state = QpState::ERR;
    while (!sq.empty()) {
      PendingSend p = std::move(sq.front());
      sq.pop_front();
      WorkCompletion wc;
      wc.wr_id = p.wr.wr_id;
      wc.status = WcStatus::WR_FLUSH_ERR;
      wc.opcode = WcOpcode::SEND;
      wc.qp_num = qpn;
      send_cq()->push(wc);
    }
    while (!rq.empty()) {
      complete_recv(rq.front(), WcStatus::WR_FLUSH_ERR, WcOpcode::RECV, 0, false, 0);
      rq.pop_front();
    }
  }
  void schedule(double delay = 0)
  {
    if (scheduled) return;
    scheduled = true;
    std::weak_ptr<QpCore> weak = weak_from_this();
    SoftFabric& f = dev.fabric();
    f.submit(
        [weak, &f] {
          std::lock_guard<std::mutex> lock(f.state());
          if (auto self = weak.lock()) {
            self->scheduled = false;
            self->process();
          }
        },
        delay);
  }

  enum class Outcome { DONE, STALL, FAILED, WAIT };

  /// Execute send-queue heads in order until one stalls or the queue is empty (state lock held).
  void process()
  {
    while (!sq.empty() && attr.qp_state != QpState::ERR) {
      double delay = 0;
      const Outcome o = execute(sq.front(), delay);
      if (o == Outcome::WAIT) return; // the process link brings the response
      if (o == Outcome::STALL) {
        schedule(delay);
        return;
      }
      if (o == Outcome::FAILED) {
        enter_error();
        return;
      }
      sq.pop_front();
    }
  }

  static std::vector<Span> spans(const std::vector<Sge>& sges)
  {
    std::vector<Span> v;
    for (const auto& s : sges)
      v.push_back({s.addr, s.length});
    return v;
  }
  /// Copy `len` bytes from `src` pieces to `dst` pieces straight (no staging buffer: one memcpy per overlap).
  static void copy_spans(const std::vector<Span>& dst, const std::vector<Span>& src, uint64_t len)
  {
    size_t di = 0, si = 0;
    uint64_t doff = 0, soff = 0, done = 0;
    while (done < len && di < dst.size() && si < src.size()) {
      const uint64_t n = std::min({dst[di].len - doff, src[si].len - soff, len - done});
      if (n > 0)
        std::memcpy(reinterpret_cast<void*>(dst[di].addr + doff), reinterpret_cast<const void*>(src[si].addr + soff),
                    n);
      done += n, doff += n, soff += n;
      if (doff == dst[di].len) ++di, doff = 0;
      if (si < src.size() && soff == src[si].len) ++si, soff = 0;
    }
  }
  /// The requester's payload pieces (the WQE's own copy for inline data).
  static std::vector<Span> payload(const PendingSend& p)
  {
    if (p.wr.inline_data) return {{reinterpret_cast<uint64_t>(p.inline_bytes.data()), p.inline_bytes.size()}};
    return spans(p.wr.sg_list);
  }

  Outcome fail(PendingSend& p, WcStatus st, double& delay)
  {
    (void)delay;
    WcOpcode opc = WcOpcode::SEND;
    if (p.wr.opcode == WrOpcode::RDMA_WRITE || p.wr.opcode == WrOpcode::RDMA_WRITE_WITH_IMM) opc = WcOpcode::RDMA_WRITE;
    if (p.wr.opcode == WrOpcode::RDMA_READ) opc = WcOpcode::RDMA_READ;
    complete_send(p, st, opc, 0);
    sq.pop_front();
    return Outcome::FAILED;
  }

  /// The requester's side of one WR. The responder's side runs here (a peer of this fabric) or in the peer's
  /// process (its fabric answers over the process link); either way its verdict comes back to `conclude`.
  Outcome execute(PendingSend& p, double& delay)
  {
    if (p.in_flight) return Outcome::WAIT;
    const WrOpcode code = p.wr.opcode;
    const uint64_t len = p.wr.inline_data ? p.inline_bytes.size() : p.wr.total_length();
    // A message longer than RC carries (max_msg_sz) fails here, on whichever path its responder is, as on a NIC.
    if (len > MAX_MESSAGE_BYTES) return fail(p, WcStatus::LOC_LEN_ERR, delay);
    // Local protection checks (the requester's own SGEs).
    if (!p.wr.inline_data)
      for (const auto& s : p.wr.sg_list)
        if (dev.mrs().check_local(s, code == WrOpcode::RDMA_READ) != WcStatus::SUCCESS)
          return fail(p, WcStatus::LOC_PROT_ERR, delay);
    SoftFabric& f = dev.fabric();
    if (SoftDevice* pdev = f.device(attr.dest.lid)) {
      ResponderRequest rq{code, len, p.wr.rkey, p.wr.remote_addr, p.wr.imm_data};
      uint8_t rnr_timer = 0;
      const ResponderVerdict v =
          respond(pdev, pdev->qp(attr.dest_qp_num), rq, payload(p), spans(p.wr.sg_list), rnr_timer);
      return conclude(p, v, rnr_timer, delay);
    }
    if (f.reaches(attr.dest.lid)) {
      p.seq = f.next_seq();
      if (f.send_request(*this, p, len)) {
        p.in_flight = true;
        return Outcome::WAIT;
      }
    }
    return conclude(p, ResponderVerdict::NOT_READY, 0, delay);
  }

  /// What the responder said, turned into the requester's completion (or a retry).
  Outcome conclude(PendingSend& p, ResponderVerdict v, uint8_t rnr_timer, double& delay)
  {
    const uint64_t len = p.wr.inline_data ? p.inline_bytes.size() : p.wr.total_length();
    switch (v) {
    case ResponderVerdict::ACK:
      if (p.wr.opcode == WrOpcode::RDMA_READ) {
        dev.landed(p.wr.sg_list.empty() ? 0 : p.wr.sg_list[0].addr, len);
        complete_send(p, WcStatus::SUCCESS, WcOpcode::RDMA_READ, uint32_t(len));
      } else if (is_send(p.wr.opcode)) {
        complete_send(p, WcStatus::SUCCESS, WcOpcode::SEND, uint32_t(len));
      } else {
        complete_send(p, WcStatus::SUCCESS, WcOpcode::RDMA_WRITE, uint32_t(len));
      }
      return Outcome::DONE;
    case ResponderVerdict::NOT_READY: {
      // The responder is gone or not ready: no ACK; retried after the ACK timeout, then RETRY_EXC_ERR.
      if (++p.retries > attr.retry_cnt) return fail(p, WcStatus::RETRY_EXC_ERR, delay);
      const double to = ack_timeout_seconds(attr.timeout);
      delay = to > 0 ? to : ack_timeout_seconds(14);
      return Outcome::STALL;
    }
    case ResponderVerdict::RNR:
      ++p.rnr_retries;
      if (attr.rnr_retry != 7 && p.rnr_retries > attr.rnr_retry) return fail(p, WcStatus::RNR_RETRY_EXC_ERR, delay);
      delay = rnr_timer_seconds(rnr_timer);
      return Outcome::STALL;
    case ResponderVerdict::REM_ACCESS:
    case ResponderVerdict::REM_INV_REQ:
    case ResponderVerdict::REM_OP:
      return fail(p, requester_status(v), delay);
    }
    return fail(p, WcStatus::GENERAL_ERR, delay);
  }

  /// The response to the in-flight head of the send queue arrived (process link; state lock held).
  void response(uint64_t seq, ResponderVerdict v, uint8_t rnr_timer)
  {
    if (sq.empty() || !sq.front().in_flight || sq.front().seq != seq) return; // flushed or destroyed meanwhile
    PendingSend& p = sq.front();
    p.in_flight = false;
    double delay = 0;
    const Outcome o = conclude(p, v, rnr_timer, delay);
    if (o == Outcome::STALL) return schedule(delay);
    if (o == Outcome::FAILED) return enter_error();
    sq.pop_front();
    if (!sq.empty()) schedule();
  }

  /// The peer process is gone: the in-flight WR will never be answered; it times out as with a dead host.
  void peer_lost(uint16_t first_lid, uint16_t lids)
  {
    if (sq.empty() || !sq.front().in_flight) return;
    if (attr.dest.lid < first_lid || attr.dest.lid >= first_lid + lids) return;
    sq.front().in_flight = false;
    schedule(ack_timeout_seconds(attr.timeout > 0 ? attr.timeout : 14));
  }
};

/// The responder's side: checks and data movement on the responder's QP and memory (its fabric's state lock held).
/// `payload`: where the requester's bytes are (SEND / WRITE), `read_into`: where a READ's bytes go, both as
/// pointers valid in this process (the requester's memory, mapped here when it is another process's).
ResponderVerdict respond(SoftDevice* pdev, QpCore* peer, const ResponderRequest& r, const std::vector<Span>& payload,
                         const std::vector<Span>& read_into, uint8_t& rnr_timer)
{
  const WrOpcode code = r.opcode;
  const uint64_t len = r.len;
  if (!peer) return ResponderVerdict::NOT_READY;
  ResponderSide side;
  side.state = peer->attr.qp_state;
  side.qp_access_flags = peer->attr.qp_access_flags;
  side.next_recv = peer->rq.empty() ? nullptr : &peer->rq.front();
  side.mrs = &pdev->mrs();
  const ResponderDecision d = rc_responder_decide(IncomingRequest{code, len, r.rkey, r.remote_addr}, side);
  if (d.verdict == ResponderVerdict::RNR) rnr_timer = peer->attr.min_rnr_timer;
  if (d.recv_error != WcStatus::SUCCESS) {
    RecvWr rw = peer->rq.front();
    peer->rq.pop_front();
    peer->complete_recv(rw, d.recv_error, WcOpcode::RECV, 0, false, 0);
  }
  if (d.qp_to_error) peer->enter_error();
  if (d.verdict != ResponderVerdict::ACK) return d.verdict;
  if (is_send(code)) {
    RecvWr rw = peer->rq.front();
    peer->rq.pop_front();
    QpCore::copy_spans(QpCore::spans(rw.sg_list), payload, len);
    pdev->fabric().count_bytes(len);
    peer->complete_recv(rw, WcStatus::SUCCESS, WcOpcode::RECV, uint32_t(len), code == WrOpcode::SEND_WITH_IMM,
                        r.imm_data);
    return ResponderVerdict::ACK;
  }
  if (code == WrOpcode::RDMA_READ) {
    QpCore::copy_spans(read_into, {{r.remote_addr, len}}, len);
    pdev->fabric().count_bytes(len);
    return ResponderVerdict::ACK;
  }
  // RDMA WRITE (with immediate: consumes a receive)
  if (len > 0) {
    QpCore::copy_spans({{r.remote_addr, len}}, payload, len);
    pdev->fabric().count_bytes(len);
    pdev->landed(r.remote_addr, len);
  }
  if (d.takes_recv) {
    RecvWr rw = peer->rq.front();
    peer->rq.pop_front();
    peer->complete_recv(rw, WcStatus::SUCCESS, WcOpcode::RECV_RDMA_WITH_IMM, uint32_t(len), true, r.imm_data);
  }
  return ResponderVerdict::ACK;
}

namespace {

class SoftQp final : public QueuePair {
public:
  explicit SoftQp(std::shared_ptr<QpCore> core) : c_(std::move(core)) {}
  ~SoftQp() override
  {
    std::lock_guard<std::mutex> lock(c_->dev.fabric().state());
    c_->dev.unregister_qp(c_->qpn);
  }
  uint32_t qp_num() const override { return c_->qpn; }
  QpState state() const override
  {
    std::lock_guard<std::mutex> lock(c_->dev.fabric().state());
    return c_->attr.qp_state;
  }
  Status modify(const QpAttr& attr, QpAttrMask mask) override
  {
    std::lock_guard<std::mutex> lock(c_->dev.fabric().state());
    const QpState before = c_->attr.qp_state;
    auto st = apply_qp_transition(c_->attr, attr, mask);
    if (!st.ok()) return st;
    if (c_->attr.qp_state == QpState::ERR && before != QpState::ERR) c_->enter_error();
    if (c_->attr.qp_state == QpState::RESET) {
      c_->sq.clear();
      c_->rq.clear();
    }
    if (c_->attr.qp_state == QpState::RTS && !c_->sq.empty()) c_->schedule();
    return ok_status();
  }
  Status post_send(const SendWr& wr) override
  {
    std::lock_guard<std::mutex> lock(c_->dev.fabric().state());
    if (!send_queue_accepts(c_->attr.qp_state))
      return Error::at("", "post_send", "a QP in RTS", to_string(c_->attr.qp_state));
    if (c_->sq.size() >= c_->init.cap.max_send_wr)
      return Error::at("", "post_send", "room in the send queue (" + std::to_string(c_->init.cap.max_send_wr) + ")",
                       "full");
    if (wr.sg_list.size() > c_->init.cap.max_send_sge)
      return Error::at("", "post_send", "at most " + std::to_string(c_->init.cap.max_send_sge) + " SGEs",
                       std::to_string(wr.sg_list.size()));
    if (wr.inline_data && wr.opcode == WrOpcode::RDMA_READ)
      return Error::at("", "post_send", "inline data only on a SEND or an RDMA WRITE", "an RDMA READ");
    PendingSend p;
    p.wr = wr;
    if (wr.inline_data) {
      if (wr.total_length() > c_->init.cap.max_inline_data)
        return Error::at("", "post_send", "inline data up to " + std::to_string(c_->init.cap.max_inline_data),
                         std::to_string(wr.total_length()));
      // The payload goes into the WQE now: the buffer may be reused as soon as post_send returns.
      for (const auto& s : wr.sg_list) {
        const auto* b = reinterpret_cast<const uint8_t*>(s.addr);
        p.inline_bytes.insert(p.inline_bytes.end(), b, b + s.length);
      }
    }
    c_->sq.push_back(std::move(p));
    if (c_->attr.qp_state == QpState::ERR) {
      c_->enter_error();
      return ok_status();
    }
    c_->schedule();
    return ok_status();
  }
  Status post_recv(const RecvWr& wr) override
  {
    std::lock_guard<std::mutex> lock(c_->dev.fabric().state());
    if (!recv_queue_accepts(c_->attr.qp_state))
      return Error::at("", "post_recv", "a QP out of RESET", to_string(c_->attr.qp_state));
    if (c_->rq.size() >= c_->init.cap.max_recv_wr)
      return Error::at("", "post_recv", "room in the receive queue", "full");
    if (c_->attr.qp_state == QpState::ERR) {
      c_->complete_recv(wr, WcStatus::WR_FLUSH_ERR, WcOpcode::RECV, 0, false, 0);
      return ok_status();
    }
    c_->rq.push_back(wr);
    // A requester may be waiting (RNR) for this receive: it retries on its own timer.
    return ok_status();
  }
  QpAttr attributes() const override
  {
    std::lock_guard<std::mutex> lock(c_->dev.fabric().state());
    return c_->attr;
  }

private:
  std::shared_ptr<QpCore> c_;
};

} // namespace

// ---------------------------------------------------------------- device

SoftDevice::SoftDevice(SoftFabric& fabric, Runtime& rt, std::string name)
    : fabric_(fabric), rt_(rt), name_(std::move(name)), lid_(fabric_.attach(this)), mrs_(0x1000u + 0x10000u * lid_)
{
}

SoftDevice::~SoftDevice()
{
  fabric_.detach(lid_);
}

DeviceAttr SoftDevice::query() const
{
  DeviceAttr a;
  a.name = name_;
  a.link_layer = LinkLayer::INFINIBAND;
  a.active_mtu = Mtu::MTU_4096;
  a.port_rate_bps = 0; // a memcpy, not a port
  a.max_inline_data = 256;
  return a;
}

PortAddress SoftDevice::port_address() const
{
  PortAddress p;
  p.lid = lid_;
  return p;
}

Result<MemoryRegion> SoftDevice::reg_mr(uint64_t addr, uint64_t length, Access access)
{
  if (auto st = check_registration_access(access); !st.ok()) return st.error();
  if (!pages_mapped(addr, length))
    return Error::at("", "reg_mr", "mapped memory (ibv_reg_mr EFAULT)", std::to_string(addr));
  std::lock_guard<std::mutex> lock(fabric_.state());
  return mrs_.add(addr, length, access);
}

Status SoftDevice::dereg_mr(const MemoryRegion& mr)
{
  std::lock_guard<std::mutex> lock(fabric_.state());
  if (!mrs_.remove(mr.lkey)) return Error::at("", "dereg_mr", "a registered lkey", std::to_string(mr.lkey));
  return ok_status();
}

Result<std::unique_ptr<CompletionQueue>> SoftDevice::create_cq(int min_entries)
{
  if (min_entries < 1) return Error::at("", "create_cq", "at least one entry", std::to_string(min_entries));
  return std::unique_ptr<CompletionQueue>(new SoftCq(rt_));
}

Result<std::unique_ptr<QueuePair>> SoftDevice::create_qp(const QpInitAttr& attr)
{
  if (!attr.send_cq || !attr.recv_cq) return Error::at("", "create_qp", "send and receive CQs", "null");
  // As ibv_create_qp: more SGEs per WR than the device has is EINVAL (and keeps every request within the process
  // link's 64-SGE frame, process_wire.hpp).
  for (const uint32_t sges : {attr.cap.max_send_sge, attr.cap.max_recv_sge})
    if (sges > query().max_sge)
      return Error::at("", "create_qp", "max_send_sge and max_recv_sge <= " + std::to_string(query().max_sge),
                       std::to_string(sges));
  if (attr.cap.max_inline_data > query().max_inline_data)
    return Error::at("", "create_qp", "max_inline_data <= " + std::to_string(query().max_inline_data),
                     std::to_string(attr.cap.max_inline_data));
  auto core = std::make_shared<QpCore>(*this, attr);
  std::lock_guard<std::mutex> lock(fabric_.state());
  core->qpn = register_qp(core.get());
  return std::unique_ptr<QueuePair>(new SoftQp(core));
}

Status SoftDevice::watch_memory(uint64_t addr, uint64_t len, std::function<void()> on_write)
{
  std::lock_guard<std::mutex> lock(fabric_.state());
  watches_.push_back({addr, len, std::move(on_write)});
  return ok_status();
}

QpCore* SoftDevice::qp(uint32_t qpn) const
{
  auto it = qps_.find(qpn);
  return it == qps_.end() ? nullptr : it->second;
}

uint32_t SoftDevice::register_qp(QpCore* q)
{
  const uint32_t n = next_qpn_++;
  qps_[n] = q;
  return n;
}

void SoftDevice::unregister_qp(uint32_t qpn)
{
  qps_.erase(qpn);
}

void SoftDevice::landed(uint64_t addr, uint64_t len)
{
  for (auto it = watches_.begin(); it != watches_.end();) {
    if (addr < it->addr + it->len && it->addr < addr + len) {
      rt_.post(std::move(it->f));
      it = watches_.erase(it);
    } else {
      ++it;
    }
  }
}

// ---------------------------------------------------------------- between processes (the process link)

bool SoftFabric::reaches(uint16_t lid)
{
  return link_ && !link_->owns(lid) && link_->reaches(lid);
}

bool SoftFabric::send_request(const QpCore& q, const PendingSend& p, uint64_t len)
{
  if (!link_) return false;
  wire::RequestHeader h;
  h.seq = p.seq;
  h.remote_addr = p.wr.remote_addr;
  h.len = len;
  h.src_lid = q.dev.port_address().lid;
  h.dst_lid = q.attr.dest.lid;
  h.src_qpn = q.qpn;
  h.dst_qpn = q.attr.dest_qp_num;
  h.imm_data = p.wr.imm_data;
  h.rkey = p.wr.rkey;
  h.opcode = p.wr.opcode;
  std::vector<wire::Sge> sges;
  if (!p.wr.inline_data)
    for (const auto& s : p.wr.sg_list)
      sges.push_back({s.addr, s.length});
  return link_->send_request(h.dst_lid, wire::encode_request(h, sges, p.inline_bytes.data(),
                                                             p.wr.inline_data ? uint32_t(p.inline_bytes.size()) : 0));
}

std::vector<uint8_t> SoftFabric::answer_request(const std::vector<uint8_t>& body, const PeerArena& requester)
{
  wire::Response out;
  ResponderVerdict v = ResponderVerdict::REM_INV_REQ;
  uint8_t rnr = 0;
  // The whole request, or when it does not decode, its header at least: whom to answer.
  const auto req = wire::decode_request(body.data(), body.size());
  if (const auto h = req ? std::optional(req->h) : wire::decode_request_header(body.data(), body.size())) {
    out.seq = h->seq;
    out.qpn = h->src_qpn;
    out.lid = h->src_lid;
  }
  if (req) {
    std::vector<Span> payload;
    bool mapped = true;
    if (req->inline_len > 0) payload.push_back({reinterpret_cast<uint64_t>(req->inline_data), req->inline_len});
    for (const auto& sg : req->sges) {
      uint8_t* local = requester.translate(sg.addr, sg.length);
      if (!local && sg.length > 0) mapped = false; // the requester's memory is not in its shared arena
      payload.push_back({reinterpret_cast<uint64_t>(local), sg.length});
    }
    const wire::RequestHeader& r = req->h;
    std::lock_guard<std::mutex> lock(state_mu_);
    SoftDevice* pdev = device(r.dst_lid);
    QpCore* peer = pdev ? pdev->qp(r.dst_qpn) : nullptr;
    // An RC QP hears only from the QP it is connected to; anything else gets no answer a requester could act on.
    if (!peer || peer->attr.dest.lid != r.src_lid || peer->attr.dest_qp_num != r.src_qpn)
      v = ResponderVerdict::NOT_READY;
    else if (!mapped)
      v = ResponderVerdict::REM_OP;
    else
      v = respond(pdev, peer, ResponderRequest{r.opcode, r.len, r.rkey, r.remote_addr, r.imm_data}, payload, payload,
                  rnr);
  }
  out.verdict = uint8_t(v);
  out.rnr_timer = rnr;
  return wire::encode_response(out);
}

void SoftFabric::take_response(const std::vector<uint8_t>& body)
{
  auto r = wire::decode_response(body.data(), body.size());
  if (!r || r->verdict > uint8_t(ResponderVerdict::REM_OP)) return;
  std::lock_guard<std::mutex> lock(state_mu_);
  SoftDevice* d = device(r->lid);
  QpCore* q = d ? d->qp(r->qpn) : nullptr;
  if (q) q->response(r->seq, ResponderVerdict(r->verdict), r->rnr_timer);
}

Status SoftFabric::link_processes(const std::string& dir, SharedArena& arena)
{
  std::lock_guard<std::mutex> lock(state_mu_);
  if (link_) return Error::at("", "link_processes", "a fabric not linked yet", "linked");
  ProcessLink::Handlers h;
  h.on_request = [this](const std::vector<uint8_t>& body, const PeerArena& requester) {
    return answer_request(body, requester);
  };
  h.on_response = [this](const std::vector<uint8_t>& body) { take_response(body); };
  h.on_peer_lost = [this](uint16_t first_lid) {
    std::lock_guard<std::mutex> lock(state_mu_);
    for (auto& [lid, d] : devices_)
      d->for_each_qp([&](QpCore& q) { q.peer_lost(first_lid, ProcessLink::LIDS_PER_PROCESS); });
  };
  const uint16_t first = devices_.empty() ? next_lid_ : devices_.begin()->first;
  auto l = ProcessLink::open(dir, ProcessLink::owner_of(first), arena, std::move(h));
  if (!l.ok()) return l.error();
  link_ = std::move(l.value());
  return ok_status();
}

void SoftDevice::for_each_qp(const std::function<void(QpCore&)>& f)
{
  for (auto& [n, q] : qps_)
    f(*q);
}

} // namespace tp::emu
