// The simulated NIC's RC loss model (see sim/rc_qp.hpp): injected packet loss decided at injection (a port down,
// random loss), ACK time-outs, PSN sequence NAKs and RNR NAKs, and the QP's transport retry counter that turns
// them into a resend (go-back-N) or RETRY_EXC_ERR / RNR_RETRY_EXC_ERR. Faults: docs/faults.md.
#include "models/rc_costs.hpp"
#include "sim/rc_qp.hpp"
#include "sim/sim_context.hpp"

#include <algorithm>

namespace tp::sim {

QpCore::Loss QpCore::decide_loss(size_t ma, int na, size_t mb, int nb, uint64_t len)
{
  Loss l;
  FaultInjector* f = faults();
  if (!f) return l;
  const auto& nic = pf().nic(ma, na).nic;
  const uint64_t packets = nic.packets(len);
  const double now = reactor().now();
  const double nominal = models::goodput_time(nic, double(len)) + pf().wire_latency(ma, na, mb, nb);
  uint64_t k = packets;
  bool down = false;
  if (const double d = f->down_within(ma, na, mb, nb, now, now + nominal); d >= 0) {
    k = std::min<uint64_t>(packets - 1, nominal > 0 ? uint64_t((d - now) / nominal * double(packets)) : 0);
    down = true;
  }
  if (const uint64_t r = f->first_lost(f->loss_probability(ma, na, mb, nb, now), packets); r < k) {
    k = r;
    down = false;
  }
  if (k >= packets) return l;
  l.lost = true;
  l.nak = !down && k + 1 < packets;
  l.bytes_sent = std::min<uint64_t>(len, (k + (l.nak ? 2 : down ? 0 : 1)) * nic.mtu);
  l.progress = k * uint64_t(nic.mtu);
  ++f->stats().packets_lost;
  return l;
}

void QpCore::lost_message(const OpPtr& op, size_t mb, int nb)
{
  const double now = reactor().now();
  if (!op->lost_nak) {
    op->t_inject = now; // the time-out runs from the last packet sent
    schedule_timeout(op);
    return;
  }
  const auto& pnic = pf().nic(mb, nb).nic;
  const double back = models::ack_time(pnic, pf().wire_latency(mb, nb, dev_.machine(), dev_.nic()));
  const uint32_t gen = op->generation;
  std::weak_ptr<QpCore> weak = weak_from_this();
  reactor().at(now + back, [weak, op, gen] {
    if (auto self = weak.lock(); self && op->generation == gen) self->sequence_nak(op);
  });
}

void QpCore::take_progress(SendOp& op)
{
  if (op.progress == 0) return;
  op.acked += op.progress;
  op.progress = 0;
  retry_count_ = 0;
}

bool QpCore::count_retry(const SendOp& op)
{
  const double now = reactor().now();
  if (op.t_attempt >= last_retry_at_ || retry_count_ == 0) {
    ++retry_count_;
    last_retry_at_ = now;
  }
  return retry_count_ > attr_.retry_cnt;
}

void QpCore::sequence_nak(const OpPtr& op)
{
  if (op->finished) return;
  const double now = reactor().now();
  if (FaultInjector* f = faults()) f->note_retry(op->t_attempt, now, dev_.owner(), peer_owner());
  take_progress(*op);
  if (count_retry(*op)) {
    fail(op, WcStatus::RETRY_EXC_ERR);
    return;
  }
  if (FaultInjector* f = faults()) ++f->stats().rc_retransmissions;
  rewind(op, now);
}

void QpCore::schedule_timeout(const OpPtr& op)
{
  const double to = ack_timeout_seconds(attr_.timeout);
  if (to < 0) return; // timeout 0: wait forever, as the IB spec says
  const uint32_t gen = op->generation;
  std::weak_ptr<QpCore> weak = weak_from_this();
  reactor().at(op->t_inject + to, [weak, op, gen] {
    if (auto self = weak.lock(); self && op->generation == gen) self->timeout(op);
  });
}

void QpCore::timeout(const OpPtr& op)
{
  if (op->finished) return;
  FaultInjector* f = faults();
  if (f) {
    ++f->stats().rc_timeouts;
    f->note_retry(op->t_attempt, reactor().now(), dev_.owner(), peer_owner());
  }
  take_progress(*op);
  if (count_retry(*op)) {
    fail(op, WcStatus::RETRY_EXC_ERR);
    return;
  }
  if (f) ++f->stats().rc_retransmissions;
  rewind(op, reactor().now());
}

void QpCore::rnr_nak(const OpPtr& op, double delay)
{
  if (op->finished) return;
  retry_count_ = 0; // the responder answered: the transport retry counter restarts (assumption: as for an ACK)
  if (FaultInjector* f = faults()) {
    ++f->stats().rnr_naks;
    f->note_retry(op->t_attempt, reactor().now() + delay, dev_.owner(), peer_owner());
  }
  ++op->rnr_retries;
  if (attr_.rnr_retry != 7 && op->rnr_retries > attr_.rnr_retry) {
    fail(op, WcStatus::RNR_RETRY_EXC_ERR);
    return;
  }
  rewind(op, reactor().now() + delay);
}

} // namespace tp::sim
