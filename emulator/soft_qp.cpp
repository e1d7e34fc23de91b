// The software device's RC queue pair (soft_qp.hpp): the requester (send queue, retries, RNR and ACK timeouts,
// completions) and the responder's data movement; the responder's checks are core/device/rc_responder_rules.hpp.
#include "emulator/soft_qp.hpp"

#include "core/device/qp_state_machine.hpp"

#include <algorithm>
#include <cstring>

namespace tp::emu {

using namespace verbs;

namespace {

std::vector<Span> spans(const std::vector<Sge>& sges)
{
  std::vector<Span> v;
  for (const auto& s : sges)
    v.push_back({s.addr, s.length});
  return v;
}

/// Copy `len` bytes from `src` pieces to `dst` pieces straight (no staging buffer: one memcpy per overlap).
void copy_spans(const std::vector<Span>& dst, const std::vector<Span>& src, uint64_t len)
{
  size_t di = 0, si = 0;
  uint64_t doff = 0, soff = 0, done = 0;
  while (done < len && di < dst.size() && si < src.size()) {
    const uint64_t n = std::min({dst[di].len - doff, src[si].len - soff, len - done});
    if (n > 0)
      std::memcpy(reinterpret_cast<void*>(dst[di].addr + doff), reinterpret_cast<const void*>(src[si].addr + soff), n);
    done += n, doff += n, soff += n;
    if (doff == dst[di].len) ++di, doff = 0;
    if (si < src.size() && soff == src[si].len) ++si, soff = 0;
  }
}

/// The requester's payload pieces (the WQE's own copy for inline data).
std::vector<Span> payload(const PendingSend& p)
{
  if (p.wr.inline_data) return {{reinterpret_cast<uint64_t>(p.inline_bytes.data()), p.inline_bytes.size()}};
  return spans(p.wr.sg_list);
}

} // namespace

void QpCore::complete_send(const PendingSend& p, WcStatus st, WcOpcode opc, uint32_t len)
{
  if (st == WcStatus::SUCCESS && !p.wr.signaled && !init.sq_sig_all) return;
  send_cq()->push(WorkCompletion::of_send(p.wr.wr_id, st, opc, len, qpn));
}

void QpCore::complete_recv(const RecvWr& r, WcStatus st, WcOpcode opc, uint32_t len, bool imm, uint32_t imm_data)
{
  recv_cq()->push(WorkCompletion::of_recv(r.wr_id, st, opc, len, imm, imm_data, qpn));
}

/// To ERR: every outstanding WR completes with WR_FLUSH_ERR.
void QpCore::enter_error()
{
  attr.qp_state = QpState::ERR;
  while (!sq.empty()) {
    PendingSend p = std::move(sq.front());
    sq.pop_front();
    send_cq()->push(WorkCompletion::of_send(p.wr.wr_id, WcStatus::WR_FLUSH_ERR, WcOpcode::SEND, 0, qpn));
  }
  while (!rq.empty()) {
    complete_recv(rq.front(), WcStatus::WR_FLUSH_ERR, WcOpcode::RECV, 0, false, 0);
    rq.pop_front();
  }
}

void QpCore::schedule(double delay)
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

/// Execute send-queue heads in order until one stalls or the queue is empty (state lock held).
void QpCore::process()
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

QpCore::Outcome QpCore::fail(PendingSend& p, WcStatus st)
{
  WcOpcode opc = WcOpcode::SEND;
  if (p.wr.opcode == WrOpcode::RDMA_WRITE || p.wr.opcode == WrOpcode::RDMA_WRITE_WITH_IMM) opc = WcOpcode::RDMA_WRITE;
  if (p.wr.opcode == WrOpcode::RDMA_READ) opc = WcOpcode::RDMA_READ;
  complete_send(p, st, opc, 0);
  sq.pop_front();
  return Outcome::FAILED;
}

/// The requester's side of one WR. The responder's side runs here (a peer of this fabric) or in the peer's
/// process (its fabric answers over the process link); either way its verdict comes back to `conclude`.
QpCore::Outcome QpCore::execute(PendingSend& p, double& delay)
{
  if (p.in_flight) return Outcome::WAIT;
  const WrOpcode code = p.wr.opcode;
  const uint64_t len = p.wr.inline_data ? p.inline_bytes.size() : p.wr.total_length();
  // A message longer than RC carries (max_msg_sz) fails here, on whichever path its responder is, as on a NIC.
  if (len > MAX_MESSAGE_BYTES) return fail(p, WcStatus::LOC_LEN_ERR);
  // Local protection checks (the requester's own SGEs).
  if (!p.wr.inline_data)
    for (const auto& s : p.wr.sg_list)
      if (dev.mrs().check_local(s, code == WrOpcode::RDMA_READ) != WcStatus::SUCCESS)
        return fail(p, WcStatus::LOC_PROT_ERR);
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
QpCore::Outcome QpCore::conclude(PendingSend& p, ResponderVerdict v, uint8_t rnr_timer, double& delay)
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
    if (++p.retries > attr.retry_cnt) return fail(p, WcStatus::RETRY_EXC_ERR);
    const double to = ack_timeout_seconds(attr.timeout);
    delay = to > 0 ? to : ack_timeout_seconds(14);
    return Outcome::STALL;
  }
  case ResponderVerdict::RNR:
    ++p.rnr_retries;
    if (attr.rnr_retry != 7 && p.rnr_retries > attr.rnr_retry) return fail(p, WcStatus::RNR_RETRY_EXC_ERR);
    delay = rnr_timer_seconds(rnr_timer);
    return Outcome::STALL;
  case ResponderVerdict::REM_ACCESS:
  case ResponderVerdict::REM_INV_REQ:
  case ResponderVerdict::REM_OP:
    return fail(p, requester_status(v));
  }
  return fail(p, WcStatus::GENERAL_ERR);
}

/// The response to the in-flight head of the send queue arrived (process link; state lock held).
void QpCore::response(uint64_t seq, ResponderVerdict v, uint8_t rnr_timer)
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
void QpCore::peer_lost(uint16_t first_lid, uint16_t lids)
{
  if (sq.empty() || !sq.front().in_flight) return;
  if (attr.dest.lid < first_lid || attr.dest.lid >= first_lid + lids) return;
  sq.front().in_flight = false;
  schedule(ack_timeout_seconds(attr.timeout > 0 ? attr.timeout : 14));
}

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
    copy_spans(spans(rw.sg_list), payload, len);
    pdev->fabric().count_bytes(len);
    peer->complete_recv(rw, WcStatus::SUCCESS, WcOpcode::RECV, uint32_t(len), code == WrOpcode::SEND_WITH_IMM,
                        r.imm_data);
    return ResponderVerdict::ACK;
  }
  if (code == WrOpcode::RDMA_READ) {
    copy_spans(read_into, {{r.remote_addr, len}}, len);
    pdev->fabric().count_bytes(len);
    return ResponderVerdict::ACK;
  }
  // RDMA WRITE (with immediate: consumes a receive)
  if (len > 0) {
    copy_spans({{r.remote_addr, len}}, payload, len);
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
    if (auto st = refuse_stand_in(wr); !st.ok()) return st;
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

std::unique_ptr<QueuePair> make_soft_qp(std::shared_ptr<QpCore> core)
{
  return std::unique_ptr<QueuePair>(new SoftQp(std::move(core)));
}

} // namespace tp::emu
