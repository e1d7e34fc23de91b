// The simulated NIC's RC requester (see sim/rc_qp.hpp): a per-QP send engine that starts WQEs in order (doorbell,
// WQE fetch, payload DMA read, injection as a SimGrid comm), handles the responder's ACK or NAK, rewinds
// (go-back-N) and delivers completions in WR order. Formulas: docs/model.md.
#include "core/device/qp_state_machine.hpp"
#include "models/rc_costs.hpp"
#include "sim/rc_qp.hpp"
#include "sim/sim_context.hpp"
#include "sim/sim_memory.hpp"

#include <algorithm>

namespace tp::sim {

namespace {

WcOpcode requester_opcode(WrOpcode op)
{
  switch (op) {
  case WrOpcode::SEND:
  case WrOpcode::SEND_WITH_IMM:
    return WcOpcode::SEND;
  case WrOpcode::RDMA_WRITE:
  case WrOpcode::RDMA_WRITE_WITH_IMM:
    return WcOpcode::RDMA_WRITE;
  case WrOpcode::RDMA_READ:
    return WcOpcode::RDMA_READ;
  }
  return WcOpcode::SEND;
}

} // namespace

Reactor& QpCore::reactor()
{
  return dev_.ctx().reactor;
}

const Platform& QpCore::pf()
{
  return *dev_.ctx().platform;
}

FaultInjector* QpCore::faults()
{
  return dev_.ctx().faults.get();
}

QpCore::QpCore(SimDevice& dev, uint32_t qpn, const QpInitAttr& init)
    : dev_(dev), qpn_(qpn), init_(init), scq_(static_cast<SimCq*>(init.send_cq)),
      rcq_(static_cast<SimCq*>(init.recv_cq))
{
}

QpCore::~QpCore()
{
  for (auto& op : sq_)
    if (op->comm_id) dev_.ctx().cancel(op->comm_id);
}

Status QpCore::modify(const QpAttr& a, QpAttrMask mask)
{
  const QpState before = attr_.qp_state;
  TP_TRY(apply_qp_transition(attr_, a, mask));
  if (attr_.qp_state == QpState::ERR && before != QpState::ERR)
    enter_error(0);
  else if (attr_.qp_state == QpState::RESET)
    reset();
  else if (attr_.qp_state == QpState::RTS && before != QpState::RTS)
    pump();
  return ok_status();
}

Status QpCore::post_send(const SendWr& wr)
{
  if (dev_.dead()) return ok_status(); // nothing runs in a dead process; a stale call changes nothing
  const QpState s = attr_.qp_state;
  auto where = [this] { return "post_send on QP " + std::to_string(qpn_); }; // named only in an error
  if (!send_queue_accepts(s)) return Error::at("", where(), "QP in RTS", std::string("state ") + to_string(s));
  if (wr.sg_list.size() > init_.cap.max_send_sge)
    return Error::at("", where(), "at most " + std::to_string(init_.cap.max_send_sge) + " SGEs",
                     std::to_string(wr.sg_list.size()));
  if (sq_.size() >= init_.cap.max_send_wr)
    return Error::at("", where(), "room in the send queue (max_send_wr " + std::to_string(init_.cap.max_send_wr) + ")",
                     "a full queue");
  const uint64_t len = wr.total_length();
  if (wr.inline_data && (wr.opcode == WrOpcode::RDMA_READ || len > init_.cap.max_inline_data))
    return Error::at("", where(),
                     "inline data only for SEND/WRITE up to max_inline_data " +
                         std::to_string(init_.cap.max_inline_data) + " bytes",
                     std::to_string(len) + " bytes" + (wr.opcode == WrOpcode::RDMA_READ ? " (READ)" : ""));
  auto op = std::make_shared<SendOp>();
  op->wr = wr;
  op->length = len;
  op->signaled = wr.signaled || init_.sq_sig_all;
  op->msn = next_msn_++;
  // CPU builds the WQE and rings the doorbell; the NIC fetches the WQE unless it was pushed inline.
  const double now = reactor().now();
  const auto& cpu = pf().machine(dev_.machine()).sockets[size_t(dev_.cpu_socket())].cpu;
  cpu_free_ = std::max(cpu_free_, now) + cpu.post_overhead;
  double ready = cpu_free_ + pf().doorbell_latency(dev_.machine(), dev_.nic(), dev_.cpu_socket());
  if (!wr.inline_data) ready += pf().dma_read_latency(dev_.machine(), dev_.nic(), Location::host(dev_.cpu_socket()));
  op->ready_time = ready;
  sq_.push_back(op);
  if (s == QpState::ERR) {
    op->finished = true;
    op->status = WcStatus::WR_FLUSH_ERR;
    deliver_in_order();
    return ok_status();
  }
  pump();
  return ok_status();
}

QpCore::Peer QpCore::peer()
{
  Peer p;
  auto it = dev_.ctx().devices_by_lid.find(attr_.dest.lid);
  if (it == dev_.ctx().devices_by_lid.end()) return p;
  if (it->second->dead()) return p; // nothing answers for a dead process
  p.dev = it->second;
  if (QpCore* q = p.dev->find_qp(attr_.dest_qp_num)) p.qp = q->shared_from_this();
  return p;
}

std::string QpCore::peer_owner() const
{
  auto it = dev_.ctx().devices_by_lid.find(attr_.dest.lid);
  return it == dev_.ctx().devices_by_lid.end() ? std::string("?") : it->second->owner();
}

size_t QpCore::index_of(const SendOp* op) const
{
  for (size_t i = 0; i < sq_.size(); ++i)
    if (sq_[i].get() == op) return i;
  return sq_.size();
}

Location QpCore::location_of(SimMemory& mem, uint64_t addr, int default_socket)
{
  if (auto b = mem.find(addr)) return b->location;
  return Location::host(default_socket);
}

Location QpCore::local_location(const SendOp& op)
{
  for (const auto& s : op.wr.sg_list)
    if (s.length > 0) return location_of(dev_.memory(), s.addr, dev_.cpu_socket());
  return Location::host(dev_.cpu_socket());
}

void QpCore::pump()
{
  if (attr_.qp_state != QpState::RTS && attr_.qp_state != QpState::SQD) return;
  const auto& nic = pf().nic(dev_.machine(), dev_.nic()).nic;
  while (next_start_ < sq_.size()) {
    OpPtr op = sq_[next_start_];
    if (op->finished || op->started) {
      ++next_start_;
      continue;
    }
    // A WR standing for several (SendWr::stands_for: a chunk train) is charged as that many: READ slots (one READ
    // that needs more than the QP has starts when none is outstanding), WQE processing and message rate.
    const uint32_t stands_for = op->wr.charged_as();
    const int read_slots = int(std::min<uint32_t>(stands_for, 1u << 16));
    if (op->wr.opcode == WrOpcode::RDMA_READ && outstanding_reads_ > 0 &&
        outstanding_reads_ + read_slots > std::max<int>(1, attr_.max_rd_atomic))
      return; // resumed when a read completes
    double t = std::max({reactor().now(), op->ready_time, hold_until_, last_start_ + nic.wqe_processing_time});
    t = dev_.reserve_message_slot(t, stands_for);
    last_start_ = t + (stands_for - 1) * nic.wqe_processing_time;
    ++next_start_;
    op->started = true;
    if (op->wr.opcode == WrOpcode::RDMA_READ) {
      outstanding_reads_ += read_slots; // counted from the start so that the limit holds for queued starts too
      op->read_slots = read_slots;
    }
    const uint32_t gen = op->generation;
    std::weak_ptr<QpCore> weak = weak_from_this();
    reactor().at(t, [weak, op, gen] {
      if (auto self = weak.lock(); self && op->generation == gen) self->start(op);
    });
  }
}

void QpCore::try_inject()
{
  if (injecting_) return;
  for (size_t i = 0; i < sq_.size(); ++i) {
    const OpPtr& op = sq_[i];
    if (op->finished || op->injected) continue;
    if (!op->started || !op->fetched) return; // keep WR order on the wire
    op->injected = true;
    if (op->wr.opcode == WrOpcode::RDMA_READ) {
      send_read_request(op); // a request packet: it does not hold the wire, the next op may follow
      continue;
    }
    injecting_ = op.get();
    inject(op);
    return;
  }
}

void QpCore::send_read_request(const OpPtr& op)
{
  Peer p = peer();
  const double now = reactor().now();
  op->t_inject = now;
  op->t_attempt = now;
  if (!p.dev) {
    schedule_timeout(op);
    return;
  }
  const auto& nic = pf().nic(dev_.machine(), dev_.nic()).nic;
  const double wire = pf().wire_latency(dev_.machine(), dev_.nic(), p.dev->machine(), p.dev->nic());
  // A lost request: the requester times out. A lost response packet: a later one reveals the gap and the
  // requester reissues the READ from there at once; the last one lost: time-out. (The partial response's link
  // time is not modelled.)
  const Loss request = decide_loss(dev_.machine(), dev_.nic(), p.dev->machine(), p.dev->nic(), 0);
  const Loss response =
      request.lost ? Loss{} : decide_loss(p.dev->machine(), p.dev->nic(), dev_.machine(), dev_.nic(), op->remaining());
  if (request.lost || response.lost) {
    op->lost = true;
    op->progress = response.progress;
    if (request.lost || !response.nak) {
      schedule_timeout(op);
      return;
    }
    const auto& rnic = pf().nic(p.dev->machine(), p.dev->nic()).nic;
    const double seen = now + 2 * wire + models::goodput_time(rnic, double(response.bytes_sent));
    const uint32_t gen = op->generation;
    std::weak_ptr<QpCore> weak = weak_from_this();
    reactor().at(seen, [weak, op, gen] {
      if (auto self = weak.lock(); self && op->generation == gen) self->sequence_nak(op);
    });
    return;
  }
  const double req = models::read_request_time(nic);
  const uint32_t gen = op->generation;
  std::weak_ptr<QpCore> weak = weak_from_this();
  reactor().at(now + wire + req, [weak, op, gen] {
    if (auto self = weak.lock(); self && op->generation == gen) self->read_request_arrives(op);
  });
}

void QpCore::start(const OpPtr& op)
{
  if (!op->wr.inline_data)
    for (const auto& sge : op->wr.sg_list)
      if (dev_.mrs().check_local(sge, op->wr.opcode == WrOpcode::RDMA_READ) != WcStatus::SUCCESS) {
        fail(op, WcStatus::LOC_PROT_ERR);
        return;
      }
  if (op->length > MAX_MESSAGE_BYTES) {
    fail(op, WcStatus::LOC_LEN_ERR);
    return;
  }
  Peer p = peer();
  const double now = reactor().now();
  const uint32_t gen = op->generation;
  std::weak_ptr<QpCore> weak = weak_from_this();
  if (!p.dev) {
    // Nobody has that address: the packets go nowhere and the requester times out.
    op->t_inject = now;
    op->t_attempt = now;
    op->fetched = true;
    op->injected = true;
    schedule_timeout(op);
    try_inject();
    return;
  }
  if (op->wr.opcode == WrOpcode::RDMA_READ) {
    op->fetched = true; // no payload to fetch: the request goes out in WR order (try_inject)
    try_inject();
    return;
  }
  double fetch = 0;
  if (!op->wr.inline_data && op->length > 0)
    fetch = pf().dma_read_latency(dev_.machine(), dev_.nic(), local_location(*op));
  reactor().at(now + fetch, [weak, op, gen] {
    if (auto self = weak.lock(); self && op->generation == gen) {
      op->fetched = true;
      self->try_inject();
    }
  });
}

void QpCore::inject(const OpPtr& op)
{
  Peer p = peer();
  const double now = reactor().now();
  op->t_inject = now;
  op->t_attempt = now;
  if (!p.dev) {
    injecting_ = nullptr;
    schedule_timeout(op);
    try_inject();
    return;
  }
  const size_t mb = p.dev->machine();
  const int nb = p.dev->nic();
  const auto& pnic = pf().nic(mb, nb).nic;
  (void)pnic;
  const double wire = pf().wire_latency(dev_.machine(), dev_.nic(), mb, nb);
  Location dst = Location::host(pf().nic(mb, nb).socket);
  if (op->wr.opcode == WrOpcode::RDMA_WRITE || op->wr.opcode == WrOpcode::RDMA_WRITE_WITH_IMM)
    dst = location_of(p.dev->memory(), op->wr.remote_addr, pf().nic(mb, nb).socket);
  else if (p.qp && !p.qp->rq_.empty() && !p.qp->rq_.front().sg_list.empty())
    dst = location_of(p.dev->memory(), p.qp->rq_.front().sg_list.front().addr, pf().nic(mb, nb).socket);
  const uint32_t gen = op->generation;
  std::weak_ptr<QpCore> weak = weak_from_this();
  const Loss loss = decide_loss(dev_.machine(), dev_.nic(), mb, nb, op->remaining());
  op->lost = loss.lost;
  op->lost_nak = loss.nak;
  op->progress = loss.progress;
  // Responder examines the first packet (a lost message is not accepted: its resend will be).
  if (!loss.lost)
    reactor().at(now + wire, [weak, op, gen] {
      if (auto self = weak.lock(); self && op->generation == gen) self->first_packet_arrives(op);
    });
  auto* from = pf().nic_endpoint(dev_.machine(), dev_.nic(),
                                 op->wr.inline_data ? Location::host(dev_.cpu_socket()) : local_location(*op), false);
  auto* to = pf().nic_endpoint(mb, nb, dst, true);
  const double bytes = double(loss.lost ? loss.bytes_sent : op->remaining());
  op->comm_id = dev_.ctx().start_comm(from, to, bytes, [weak, op, gen, dst, mb, nb] {
    if (auto self = weak.lock(); self && op->generation == gen) self->injected(op, dst, mb, nb);
  });
}

void QpCore::first_packet_arrives(const OpPtr& op)
{
  Peer p = peer();
  Acceptance a;
  if (p.qp) a = p.qp->accept(*op);
  op->verdict = a.verdict;
  handle_verdict(op, a, p);
}

void QpCore::handle_verdict(const OpPtr& op, const Acceptance& a, const Peer& p)
{
  const uint32_t gen = op->generation;
  std::weak_ptr<QpCore> weak = weak_from_this();
  const double now = reactor().now();
  if (a.verdict == ResponderVerdict::ACK) {
    if (a.reservation) op_reservation_[op.get()] = a.reservation;
    return;
  }
  if (a.verdict == ResponderVerdict::NOT_READY) {
    schedule_timeout(op);
    return;
  }
  // A NAK travels back.
  const auto& pnic = pf().nic(p.dev->machine(), p.dev->nic()).nic;
  const double back =
      models::ack_time(pnic, pf().wire_latency(p.dev->machine(), p.dev->nic(), dev_.machine(), dev_.nic()));
  if (a.verdict == ResponderVerdict::RNR) {
    const double delay = rnr_timer_seconds(p.qp->attr().min_rnr_timer);
    reactor().at(now + back, [weak, op, gen, delay] {
      if (auto self = weak.lock(); self && op->generation == gen) self->rnr_nak(op, delay);
    });
    return;
  }
  const WcStatus st = requester_status(a.verdict);
  p.qp->responder_error();
  reactor().at(now + back, [weak, op, gen, st] {
    if (auto self = weak.lock(); self && op->generation == gen) self->fail(op, st);
  });
}

void QpCore::injected(const OpPtr& op, Location dst, size_t mb, int nb)
{
  op->comm_id = 0;
  injecting_ = nullptr;
  if (op->lost) {
    lost_message(op, mb, nb);
    try_inject();
    return;
  }
  const auto& nic = pf().nic(dev_.machine(), dev_.nic()).nic;
  const bool rdma = op->wr.opcode != WrOpcode::SEND && op->wr.opcode != WrOpcode::SEND_WITH_IMM;
  const double now = reactor().now();
  const double t_received = now + pf().wire_latency(dev_.machine(), dev_.nic(), mb, nb) +
                            models::extra_header_time(nic, op->length, rdma, has_imm(op->wr.opcode));
  const uint32_t gen = op->generation;
  std::weak_ptr<QpCore> weak = weak_from_this();
  reactor().at(t_received, [weak, op, gen, dst] {
    if (auto self = weak.lock(); self && op->generation == gen) self->message_received(op, dst);
  });
  try_inject();
}

void QpCore::message_received(const OpPtr& op, Location dst)
{
  if (op->verdict != ResponderVerdict::ACK) return; // NAK or no answer already handled at the first packet
  Peer p = peer();
  if (!p.dev) {
    // The responder died while the message was on the wire: no ACK will come.
    op->t_inject = reactor().now();
    schedule_timeout(op);
    return;
  }
  const size_t mb = p.dev->machine();
  const int nb = p.dev->nic();
  const double now = reactor().now();
  std::shared_ptr<Reservation> res;
  if (auto it = op_reservation_.find(op.get()); it != op_reservation_.end()) {
    res = it->second;
    op_reservation_.erase(it);
  }
  // Data placement and the responder's completion: independent of what happens to our QP afterwards.
  double arrival = now + pf().dma_write_latency(mb, nb, dst);
  if (p.qp) {
    arrival = std::max(arrival, p.qp->last_arrival_);
    p.qp->last_arrival_ = arrival;
  }
  SendWr wr = op->wr;
  const uint64_t len = op->length;
  SimDevice* requester = &dev_;
  SimDevice* responder = p.dev;
  std::weak_ptr<QpCore> rweak = p.qp;
  reactor().at(arrival, [requester, responder, rweak, wr, len, res] {
    deliver_at_responder(*requester, *responder, rweak, wr, len, res);
  });
  // ACK back to us, then our CQE.
  const auto& pnic = pf().nic(mb, nb).nic;
  const double ack = now + pf().wire_latency(mb, nb, dev_.machine(), dev_.nic()) + models::ack_packet_time(pnic);
  const double cqe = ack + pf().dma_write_latency(dev_.machine(), dev_.nic(), Location::host(dev_.cpu_socket())) +
                     pf().machine(dev_.machine()).sockets[size_t(dev_.cpu_socket())].cpu.completion_overhead;
  finish_at(op, WcStatus::SUCCESS, cqe);
}

void QpCore::abort_in_flight(SendOp& o)
{
  ++o.generation;
  if (o.comm_id) {
    dev_.ctx().cancel(o.comm_id);
    o.comm_id = 0;
  }
  if (o.read_slots > 0) {
    outstanding_reads_ -= o.read_slots;
    o.read_slots = 0;
  }
  if (injecting_ == &o) injecting_ = nullptr;
  if (responding_ == &o) {
    responding_ = nullptr;
    std::weak_ptr<QpCore> weak = weak_from_this();
    reactor().at(reactor().now(), [weak] {
      if (auto self = weak.lock()) self->stream_read_response();
    });
  }
}

void QpCore::rewind(const OpPtr& op, double when)
{
  const size_t i = index_of(op.get());
  for (size_t j = i; j < sq_.size(); ++j) {
    SendOp& o = *sq_[j];
    if (o.finished) continue;
    abort_in_flight(o);
    o.started = false;
    o.fetched = false;
    o.injected = false;
    o.lost = false;
    o.lost_nak = false;
    o.progress = 0;
    o.verdict = ResponderVerdict::ACK;
    op_reservation_.erase(&o);
  }
  next_start_ = std::min(next_start_, i);
  hold_until_ = std::max(hold_until_, when);
  std::weak_ptr<QpCore> weak = weak_from_this();
  reactor().at(when, [weak] {
    if (auto self = weak.lock()) self->pump();
  });
}

void QpCore::finish_at(const OpPtr& op, WcStatus st, double when)
{
  const uint32_t gen = op->generation;
  std::weak_ptr<QpCore> weak = weak_from_this();
  reactor().at(when, [weak, op, gen, st] {
    if (auto self = weak.lock(); self && op->generation == gen && !op->finished) {
      op->finished = true;
      op->status = st;
      if (st == WcStatus::SUCCESS) self->retry_count_ = 0; // an ACK that advances: the retry counter restarts
      self->deliver_in_order();
    }
  });
}

void QpCore::fail(const OpPtr& op, WcStatus st)
{
  if (op->finished) return;
  if (FaultInjector* f = faults(); f && f->stats().first_error.empty()) {
    // The root cause for the report: what failed first, before the flushes that follow it.
    const char* what = op->wr.opcode == WrOpcode::RDMA_READ ? "RDMA READ"
                       : is_send(op->wr.opcode)             ? "SEND"
                                                            : "RDMA WRITE";
    f->log(std::string("first error completion: ") + to_string(st) + " for a " + what + " of " +
           std::to_string(op->length) + " bytes from " + dev_.owner() + " to " + peer_owner() + " after " +
           std::to_string(retry_count_ - 1) + " resends without progress");
    f->stats().first_error = f->stats().events.back();
  }
  abort_in_flight(*op);
  op->finished = true;
  op->status = st;
  attr_.qp_state = QpState::ERR;
  enter_error(index_of(op.get()) + 1);
}

void QpCore::enter_error(size_t from)
{
  for (size_t j = from; j < sq_.size(); ++j) {
    SendOp& o = *sq_[j];
    if (o.finished) continue;
    abort_in_flight(o);
    o.finished = true;
    o.status = WcStatus::WR_FLUSH_ERR;
  }
  const double now = reactor().now();
  for (const auto& r : rq_)
    push_recv_wc(r.wr_id, WcStatus::WR_FLUSH_ERR, WcOpcode::RECV, 0, false, 0, now);
  rq_.clear();
  for (auto& r : reserved_) {
    r->cancelled = true;
    push_recv_wc(r->wr.wr_id, WcStatus::WR_FLUSH_ERR, WcOpcode::RECV, 0, false, 0, now);
  }
  reserved_.clear();
  deliver_in_order();
}

void QpCore::reset()
{
  for (auto& op : sq_) {
    ++op->generation;
    if (op->comm_id) dev_.ctx().cancel(op->comm_id);
  }
  sq_.clear();
  rq_.clear();
  for (auto& r : reserved_)
    r->cancelled = true;
  reserved_.clear();
  op_reservation_.clear();
  next_start_ = 0;
  injecting_ = nullptr;
  responding_ = nullptr;
  read_responses_.clear();
  outstanding_reads_ = 0;
  retry_count_ = 0;
  next_msn_ = 0;
  expected_msn_ = 0;
}

void QpCore::deliver_in_order()
{
  if (dev_.dead()) return;
  while (!sq_.empty() && sq_.front()->finished) {
    OpPtr op = sq_.front();
    sq_.pop_front();
    if (next_start_ > 0) --next_start_;
    if (op->signaled || op->status != WcStatus::SUCCESS) {
      scq_->push(WorkCompletion::of_send(op->wr.wr_id, op->status, requester_opcode(op->wr.opcode),
                                         uint32_t(op->length), qpn_));
    }
  }
}

} // namespace tp::sim
