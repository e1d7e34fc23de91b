// The simulated NIC's RC responder (see sim/rc_qp.hpp): the responder's rules (core/device/rc_responder_rules.hpp)
// on the first packet, data placement and receive completions at arrival, and the READ responses streamed
// back in request order. Formulas: docs/model.md.
#include "core/device/qp_state_machine.hpp"
#include "models/rc_costs.hpp"
#include "sim/rc_qp.hpp"
#include "sim/sim_context.hpp"
#include "sim/sim_memory.hpp"

#include <algorithm>
#include <cstring>

namespace tp::sim {

Status QpCore::post_recv(const RecvWr& wr)
{
  if (dev_.dead()) return ok_status();
  const QpState s = attr_.qp_state;
  auto where = [this] { return "post_recv on QP " + std::to_string(qpn_); }; // named only in an error
  if (!recv_queue_accepts(s))
    return Error::at("", where(), "QP in INIT, RTR or RTS", std::string("state ") + to_string(s));
  if (wr.sg_list.size() > init_.cap.max_recv_sge)
    return Error::at("", where(), "at most " + std::to_string(init_.cap.max_recv_sge) + " SGEs",
                     std::to_string(wr.sg_list.size()));
  if (rq_.size() >= init_.cap.max_recv_wr)
    return Error::at("", where(),
                     "room in the receive queue (max_recv_wr " + std::to_string(init_.cap.max_recv_wr) + ")",
                     "a full queue");
  if (s == QpState::ERR) {
    push_recv_wc(wr.wr_id, WcStatus::WR_FLUSH_ERR, WcOpcode::RECV, 0, false, 0, reactor().now());
    return ok_status();
  }
  rq_.push_back(wr);
  return ok_status();
}

QpCore::Acceptance QpCore::accept(const SendOp& op)
{
  Acceptance a;
  FaultInjector* f = faults();
  ResponderSide side;
  side.state = attr_.qp_state;
  side.qp_access_flags = attr_.qp_access_flags;
  side.in_sequence = op.msn == expected_msn_;
  const bool withheld = f && f->withholds_receives(dev_.owner(), reactor().now());
  side.next_recv = rq_.empty() || withheld ? nullptr : &rq_.front();
  side.mrs = &dev_.mrs();
  const ResponderDecision d =
      rc_responder_decide(IncomingRequest{op.wr.opcode, op.length, op.wr.rkey, op.wr.remote_addr}, side);
  a.verdict = d.verdict;
  if (d.recv_error != WcStatus::SUCCESS) {
    push_recv_wc(rq_.front().wr_id, d.recv_error, WcOpcode::RECV, 0, false, 0, reactor().now());
    rq_.pop_front();
  }
  if (d.verdict != ResponderVerdict::ACK) return a;
  if (d.takes_recv) {
    a.reservation = std::make_shared<Reservation>(Reservation{rq_.front(), false});
    reserved_.push_back(a.reservation);
    rq_.pop_front();
  }
  ++expected_msn_;
  return a;
}

void QpCore::responder_error()
{
  if (attr_.qp_state != QpState::ERR) {
    attr_.qp_state = QpState::ERR;
    enter_error(0);
  }
}

void QpCore::push_recv_wc(uint64_t wr_id, WcStatus st, WcOpcode opc, uint32_t len, bool imm, uint32_t imm_data,
                          double at)
{
  if (dev_.dead()) return;
  const WorkCompletion wc = WorkCompletion::of_recv(wr_id, st, opc, len, imm, imm_data, qpn_);
  SimCq* cq = rcq_;
  std::weak_ptr<QpCore> weak = weak_from_this();
  reactor().at(at, [weak, cq, wc] {
    if (weak.lock()) cq->push(wc);
  });
}

void QpCore::forget_reservation(const std::shared_ptr<Reservation>& r)
{
  for (auto it = reserved_.begin(); it != reserved_.end(); ++it)
    if (*it == r) {
      reserved_.erase(it);
      return;
    }
}

QpCore::Pieces QpCore::pieces(const std::vector<Sge>& sges)
{
  Pieces p;
  for (const auto& s : sges)
    if (s.length) p.emplace_back(s.addr, s.length);
  return p;
}

void QpCore::move_bytes(MemorySpace& from, const Pieces& src, MemorySpace& to, const Pieces& dst, uint64_t len)
{
  size_t i = 0, j = 0;
  uint64_t oi = 0, oj = 0;
  while (len > 0 && i < src.size() && j < dst.size()) {
    const uint64_t n = std::min({len, src[i].second - oi, dst[j].second - oj});
    const uint64_t a = src[i].first + oi, b = dst[j].first + oj;
    const uint64_t m = std::min(from.backed_length(a, n), to.backed_length(b, n));
    if (m > 0) std::memcpy(to.resolve(b, m), from.resolve(a, m), m);
    len -= n;
    oi += n;
    oj += n;
    if (oi == src[i].second) ++i, oi = 0;
    if (oj == dst[j].second) ++j, oj = 0;
  }
}

void QpCore::deliver_at_responder(SimDevice& requester, SimDevice& responder, const std::weak_ptr<QpCore>& rweak,
                                  const SendWr& wr, uint64_t len, const std::shared_ptr<Reservation>& res)
{
  if (responder.dead()) return;
  auto rqp = rweak.lock();
  if (res) {
    if (res->cancelled || !rqp) return;
    rqp->forget_reservation(res);
  }
  if (wr.opcode == WrOpcode::RDMA_WRITE || wr.opcode == WrOpcode::RDMA_WRITE_WITH_IMM) {
    move_bytes(requester.memory(), pieces(wr.sg_list), responder.memory(), Pieces{{wr.remote_addr, len}}, len);
    if (len > 0) responder.notify_write(wr.remote_addr, len);
  } else if (res) {
    move_bytes(requester.memory(), pieces(wr.sg_list), responder.memory(), pieces(res->wr.sg_list), len);
  }
  if (res && rqp) {
    const auto& cpu =
        responder.ctx().platform->machine(responder.machine()).sockets[size_t(responder.cpu_socket())].cpu;
    const WcOpcode opc = wr.opcode == WrOpcode::RDMA_WRITE_WITH_IMM ? WcOpcode::RECV_RDMA_WITH_IMM : WcOpcode::RECV;
    rqp->push_recv_wc(res->wr.wr_id, WcStatus::SUCCESS, opc, uint32_t(len), has_imm(wr.opcode), wr.imm_data,
                      responder.ctx().reactor.now() + cpu.completion_overhead);
  }
}

void QpCore::read_request_arrives(const OpPtr& op)
{
  Peer p = peer();
  Acceptance a;
  if (p.qp) a = p.qp->accept(*op);
  op->verdict = a.verdict;
  if (a.verdict != ResponderVerdict::ACK) {
    handle_verdict(op, a, p);
    return;
  }
  // Responder NIC: DMA read of its memory, then the response stream back to us.
  const size_t mb = p.dev->machine();
  const int nb = p.dev->nic();
  const int sb = pf().nic(mb, nb).socket;
  const Location src = location_of(p.dev->memory(), op->wr.remote_addr, sb);
  const Location dst = local_location(*op);
  double t = reactor().now() + (op->length > 0 ? pf().dma_read_latency(mb, nb, src) : 0.0);
  t = p.dev->reserve_message_slot(t, op->wr.charged_as());
  read_responses_.push_back(ReadResponse{op, op->generation, t, p.dev, src, dst});
  stream_read_response();
}

void QpCore::stream_read_response()
{
  while (!responding_ && !read_responses_.empty()) {
    ReadResponse r = read_responses_.front();
    if (r.op->generation != r.gen || r.op->finished) {
      read_responses_.pop_front();
      continue;
    }
    const double now = reactor().now();
    if (r.ready > now + 1e-12) { // (the calendar's clock may land a hair before the requested time)
      if (response_wakeup_ != r.ready) {
        response_wakeup_ = r.ready;
        std::weak_ptr<QpCore> weak = weak_from_this();
        reactor().at(r.ready, [weak] {
          if (auto self = weak.lock()) {
            self->response_wakeup_ = -1;
            self->stream_read_response();
          }
        });
      }
      return;
    }
    read_responses_.pop_front();
    OpPtr op = r.op;
    const uint32_t gen = r.gen;
    SimDevice* rdev = r.rdev;
    const Location dst = r.dst;
    std::weak_ptr<QpCore> weak = weak_from_this();
    auto* from = pf().nic_endpoint(rdev->machine(), rdev->nic(), r.src, false);
    auto* to = pf().nic_endpoint(dev_.machine(), dev_.nic(), dst, true);
    responding_ = op.get();
    op->comm_id = dev_.ctx().start_comm(from, to, double(op->remaining()), [weak, op, gen, rdev, dst] {
      if (auto s2 = weak.lock(); s2 && op->generation == gen) s2->read_response_received(op, rdev, dst);
    });
  }
}

void QpCore::read_response_received(const OpPtr& op, SimDevice* rdev, Location dst)
{
  op->comm_id = 0;
  if (responding_ == op.get()) responding_ = nullptr;
  stream_read_response();
  const auto& rnic = pf().nic(rdev->machine(), rdev->nic()).nic;
  const double now = reactor().now();
  double arrival = now + pf().wire_latency(rdev->machine(), rdev->nic(), dev_.machine(), dev_.nic()) +
                   models::extra_header_time(rnic, op->length, false, false) +
                   pf().dma_write_latency(dev_.machine(), dev_.nic(), dst);
  arrival = std::max(arrival, last_read_arrival_);
  last_read_arrival_ = arrival;
  const uint32_t gen = op->generation;
  std::weak_ptr<QpCore> weak = weak_from_this();
  reactor().at(arrival, [weak, op, gen, rdev] {
    auto self = weak.lock();
    if (!self || op->generation != gen) return;
    // Place the bytes: remote memory -> our SGEs.
    if (op->length > 0) {
      move_bytes(rdev->memory(), Pieces{{op->wr.remote_addr, op->length}}, self->dev_.memory(), pieces(op->wr.sg_list),
                 op->length);
      for (const auto& s : op->wr.sg_list)
        if (s.length > 0) self->dev_.notify_write(s.addr, s.length);
    }
    if (op->read_slots > 0) {
      self->outstanding_reads_ -= op->read_slots;
      op->read_slots = 0;
    }
    const auto& cpu = self->pf().machine(self->dev_.machine()).sockets[size_t(self->dev_.cpu_socket())].cpu;
    self->finish_at(op, WcStatus::SUCCESS, self->reactor().now() + cpu.completion_overhead);
    self->pump();
  });
}

} // namespace tp::sim
