// Simulated RC NIC. Requester side: a per-QP send engine that starts WQEs in order (doorbell, WQE fetch,
// payload DMA read, injection as a SimGrid comm), go-back-N on RNR NAKs and transport timeouts, completions
// delivered in WR order. Responder side: first-packet checks (state, sequence, rkey/bounds/access, receive
// WR), data placement at arrival, receive completions. Formulas: docs/model.md.
#include "sim/sim_device.hpp"
#include "core/device/qp_state_machine.hpp"
#include "sim/sim_context.hpp"
#include "sim/sim_memory.hpp"

#include <cassert>
#include <cstring>
#include <deque>
#include <limits>

namespace tp::sim {

using namespace tp::verbs;

// ---------------------------------------------------------------------------------------------------------
// Completion queue

class SimCq final : public CompletionQueue {
public:
  struct State {
    CompletionHandler handler;
    std::deque<WorkCompletion> backlog;
  };
  explicit SimCq(Reactor& r) : reactor_(r), st_(std::make_shared<State>()) {}
  void set_handler(CompletionHandler handler) override
  {
    st_->handler = std::move(handler);
    while (!st_->backlog.empty()) {
      push(st_->backlog.front());
      st_->backlog.pop_front();
    }
  }
  void push(const WorkCompletion& wc)
  {
    if (!st_->handler) {
      st_->backlog.push_back(wc);
      return;
    }
    std::weak_ptr<State> weak = st_;
    reactor_.post([weak, wc] {
      if (auto s = weak.lock(); s && s->handler) s->handler(wc);
    });
  }

private:
  Reactor& reactor_;
  std::shared_ptr<State> st_;
};

// ---------------------------------------------------------------------------------------------------------
// Queue pair core

namespace {

enum class Verdict { OK, DROP, RNR, ACCESS_ERR, INV_REQ, REM_OP_ERR };

/// A receive WR taken by an accepted incoming message; cancelled if the responder QP errs before arrival.
struct Reservation {
  RecvWr wr;
  bool cancelled = false;
};

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

bool is_send(WrOpcode op)
{
  return op == WrOpcode::SEND || op == WrOpcode::SEND_WITH_IMM;
}
bool has_imm(WrOpcode op)
{
  return op == WrOpcode::SEND_WITH_IMM || op == WrOpcode::RDMA_WRITE_WITH_IMM;
}
bool consumes_recv(WrOpcode op)
{
  return is_send(op) || op == WrOpcode::RDMA_WRITE_WITH_IMM;
}

} // namespace

class QpCore : public std::enable_shared_from_this<QpCore> {
public:
  struct SendOp {
    SendWr wr;
    uint64_t msn = 0;
    uint64_t length = 0;
    bool signaled = true;
    double ready_time = 0;
    bool started = false;
    bool finished = false;
    WcStatus status = WcStatus::SUCCESS;
    Verdict verdict = Verdict::OK;
    bool read_counted = false;
    bool fetched = false;  ///< payload DMA read done, ready to inject
    bool injected = false; ///< injection started (or not needed: READ request)
    uint64_t comm_id = 0;
    uint32_t generation = 0;
    int rnr_retries = 0;
    double t_inject = 0;
    double t_attempt = 0;  ///< when this attempt was injected (retry accounting)
    bool lost = false;     ///< fault injection: a packet of this attempt is lost
    bool lost_nak = false; ///< ... and a later one reveals it (sequence NAK) rather than the ACK time-out
    uint64_t acked = 0;    ///< bytes the responder has in order (go-back-N resends from there)
    uint64_t progress = 0; ///< bytes this lost attempt got through before its lost packet
    uint64_t remaining() const { return length - acked; }
  };
  using OpPtr = std::shared_ptr<SendOp>;

  QpCore(SimDevice& dev, uint32_t qpn, const QpInitAttr& init)
      : dev_(dev), qpn_(qpn), init_(init), scq_(static_cast<SimCq*>(init.send_cq)),
        rcq_(static_cast<SimCq*>(init.recv_cq))
  {
  }
  ~QpCore()
  {
    for (auto& op : sq_)
      if (op->comm_id) dev_.ctx().cancel(op->comm_id);
  }

  uint32_t qpn() const { return qpn_; }

  /// The owning process died: forget everything, send and answer nothing, complete nothing.
  void kill() { reset(); }
  const QpAttr& attr() const { return attr_; }
  Reactor& reactor() { return dev_.ctx().reactor; }
  const Platform& pf() { return *dev_.ctx().platform; }

  // ---- verbs entry points ----
  Status modify(const QpAttr& a, QpAttrMask mask)
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

  Status post_send(const SendWr& wr)
  {
    if (dev_.dead()) return ok_status(); // nothing runs in a dead process; a stale call changes nothing
    const QpState s = attr_.qp_state;
    const std::string where = "post_send on QP " + std::to_string(qpn_);
    if (!send_queue_accepts(s)) return Error::at("", where, "QP in RTS", std::string("state ") + to_string(s));
    if (wr.sg_list.size() > init_.cap.max_send_sge)
      return Error::at("", where, "at most " + std::to_string(init_.cap.max_send_sge) + " SGEs",
                       std::to_string(wr.sg_list.size()));
    if (sq_.size() >= init_.cap.max_send_wr)
      return Error::at("", where, "room in the send queue (max_send_wr " + std::to_string(init_.cap.max_send_wr) + ")",
                       "a full queue");
    const uint64_t len = wr.total_length();
    if (wr.inline_data && (wr.opcode == WrOpcode::RDMA_READ || len > init_.cap.max_inline_data))
      return Error::at("", where,
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

  Status post_recv(const RecvWr& wr)
  {
    if (dev_.dead()) return ok_status();
    const QpState s = attr_.qp_state;
    const std::string where = "post_recv on QP " + std::to_string(qpn_);
    if (!recv_queue_accepts(s))
      return Error::at("", where, "QP in INIT, RTR or RTS", std::string("state ") + to_string(s));
    if (wr.sg_list.size() > init_.cap.max_recv_sge)
      return Error::at("", where, "at most " + std::to_string(init_.cap.max_recv_sge) + " SGEs",
                       std::to_string(wr.sg_list.size()));
    if (rq_.size() >= init_.cap.max_recv_wr)
      return Error::at("", where,
                       "room in the receive queue (max_recv_wr " + std::to_string(init_.cap.max_recv_wr) + ")",
                       "a full queue");
    if (s == QpState::ERR) {
      push_recv_wc(wr.wr_id, WcStatus::WR_FLUSH_ERR, WcOpcode::RECV, 0, false, 0, reactor().now());
      return ok_status();
    }
    rq_.push_back(wr);
    return ok_status();
  }

  // ---- responder side (called on the peer's core) ----
  struct Acceptance {
    Verdict verdict = Verdict::DROP;
    std::shared_ptr<Reservation> reservation;
  };

  Acceptance accept(const SendOp& op)
  {
    Acceptance a;
    if (!responder_active(attr_.qp_state) || op.msn != expected_msn_) {
      a.verdict = Verdict::DROP;
      return a;
    }
    const WrOpcode code = op.wr.opcode;
    if (code == WrOpcode::RDMA_WRITE || code == WrOpcode::RDMA_WRITE_WITH_IMM || code == WrOpcode::RDMA_READ) {
      const Access need = code == WrOpcode::RDMA_READ ? Access::REMOTE_READ : Access::REMOTE_WRITE;
      const bool qp_allows = op.length == 0 || has(attr_.qp_access_flags, need);
      if (!qp_allows || dev_.mrs().check_remote(op.wr.rkey, op.wr.remote_addr, op.length, need) != WcStatus::SUCCESS) {
        a.verdict = Verdict::ACCESS_ERR;
        return a;
      }
    }
    if (consumes_recv(code)) {
      FaultInjector* f = faults();
      if (rq_.empty() || (f && f->withholds_receives(dev_.owner(), reactor().now()))) {
        a.verdict = Verdict::RNR;
        return a;
      }
      const RecvWr& r = rq_.front();
      if (is_send(code)) {
        if (op.length > r.total_length()) {
          a.verdict = Verdict::INV_REQ;
          push_recv_wc(r.wr_id, WcStatus::LOC_LEN_ERR, WcOpcode::RECV, 0, false, 0, reactor().now());
          rq_.pop_front();
          return a;
        }
        for (const auto& sge : r.sg_list)
          if (dev_.mrs().check_local(sge, true) != WcStatus::SUCCESS) {
            a.verdict = Verdict::REM_OP_ERR;
            push_recv_wc(r.wr_id, WcStatus::LOC_PROT_ERR, WcOpcode::RECV, 0, false, 0, reactor().now());
            rq_.pop_front();
            return a;
          }
      }
      a.reservation = std::make_shared<Reservation>(Reservation{r, false});
      reserved_.push_back(a.reservation);
      rq_.pop_front();
    }
    ++expected_msn_;
    a.verdict = Verdict::OK;
    return a;
  }

  /// Responder detected a fatal error (remote access, invalid request): move to ERR.
  void responder_error()
  {
    if (attr_.qp_state != QpState::ERR) {
      attr_.qp_state = QpState::ERR;
      enter_error(0);
    }
  }

  void push_recv_wc(uint64_t wr_id, WcStatus st, WcOpcode opc, uint32_t len, bool imm, uint32_t imm_data, double at)
  {
    if (dev_.dead()) return;
    WorkCompletion wc;
    wc.wr_id = wr_id;
    wc.status = st;
    wc.opcode = opc;
    wc.byte_len = len;
    wc.with_imm = imm;
    wc.imm_data = imm_data;
    wc.qp_num = qpn_;
    SimCq* cq = rcq_;
    std::weak_ptr<QpCore> weak = weak_from_this();
    reactor().at(at, [weak, cq, wc] {
      if (weak.lock()) cq->push(wc);
    });
  }

  void forget_reservation(const std::shared_ptr<Reservation>& r)
  {
    for (auto it = reserved_.begin(); it != reserved_.end(); ++it)
      if (*it == r) {
        reserved_.erase(it);
        return;
      }
  }

  double last_arrival_ = 0; // per-QP ordering of arrivals at the responder

private:
  // ---- requester engine ----
  struct Peer {
    SimDevice* dev = nullptr;
    std::shared_ptr<QpCore> qp;
  };
  Peer peer()
  {
    Peer p;
    auto it = dev_.ctx().devices_by_lid.find(attr_.dest.lid);
    if (it == dev_.ctx().devices_by_lid.end()) return p;
    if (it->second->dead()) return p; // nothing answers for a dead process
    p.dev = it->second;
    if (QpCore* q = p.dev->find_qp(attr_.dest_qp_num)) p.qp = q->shared_from_this();
    return p;
  }

  FaultInjector* faults() { return dev_.ctx().faults.get(); }

  /// Name of the process at the other end of this QP (retry accounting), alive or not.
  std::string peer_owner() const
  {
    auto it = dev_.ctx().devices_by_lid.find(attr_.dest.lid);
    return it == dev_.ctx().devices_by_lid.end() ? std::string("?") : it->second->owner();
  }

  struct Loss {
    bool lost = false;
    bool nak = false; ///< a later packet arrives out of sequence and the responder NAKs
    uint64_t bytes_sent = 0;
    uint64_t progress = 0; ///< bytes before the lost packet (received in order)
  };
  /// Fault injection: does a message of `len` bytes from port (ma, na) to (mb, nb), injected now, lose a packet?
  /// A port that is down during the message's nominal wire time drops the packets from then on (the requester
  /// times out); random loss drops packet k (geometric draw), which a later packet of the message reveals
  /// (sequence NAK) unless it is the last one (time-out). Decided at injection so that a lost message is never
  /// accepted by the responder.
  Loss decide_loss(size_t ma, int na, size_t mb, int nb, uint64_t len)
  {
    Loss l;
    FaultInjector* f = faults();
    if (!f) return l;
    const auto& nic = pf().nic(ma, na).nic;
    const uint64_t packets = nic.packets(len);
    const double now = reactor().now();
    const double nominal = double(len) / (nic.line_rate * nic.payload_efficiency()) + pf().wire_latency(ma, na, mb, nb);
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

  size_t index_of(const SendOp* op) const
  {
    for (size_t i = 0; i < sq_.size(); ++i)
      if (sq_[i].get() == op) return i;
    return sq_.size();
  }

  Location location_of(SimMemory& mem, uint64_t addr, int default_socket)
  {
    if (auto b = mem.find(addr)) return b->location;
    return Location::host(default_socket);
  }

  Location local_location(const SendOp& op)
  {
    for (const auto& s : op.wr.sg_list)
      if (s.length > 0) return location_of(dev_.memory(), s.addr, dev_.cpu_socket());
    return Location::host(dev_.cpu_socket());
  }

  double extra_wire_time(const models::NicProfile& nic, uint64_t n, bool rdma_header, bool imm) const
  {
    // Exact header bytes of every packet minus what the fluid goodput already charges.
    const double exact = nic.wire_bytes(n, rdma_header, imm);
    const double fluid = double(n) / nic.payload_efficiency();
    return std::max(0.0, exact - fluid) / nic.line_rate;
  }

  /// Start every queued WQE: WQE processing is pipelined (one every wqe_processing_time), payload DMA
  /// reads overlap, injection onto the wire is serialized in WR order (try_inject).
  void pump()
  {
    if (attr_.qp_state != QpState::RTS && attr_.qp_state != QpState::SQD) return;
    const auto& nic = pf().nic(dev_.machine(), dev_.nic()).nic;
    while (next_start_ < sq_.size()) {
      OpPtr op = sq_[next_start_];
      if (op->finished || op->started) {
        ++next_start_;
        continue;
      }
      if (op->wr.opcode == WrOpcode::RDMA_READ && outstanding_reads_ >= std::max<int>(1, attr_.max_rd_atomic))
        return; // resumed when a read completes
      double t = std::max({reactor().now(), op->ready_time, hold_until_, last_start_ + nic.wqe_processing_time});
      t = dev_.reserve_message_slot(t);
      last_start_ = t;
      ++next_start_;
      op->started = true;
      if (op->wr.opcode == WrOpcode::RDMA_READ) {
        ++outstanding_reads_; // counted from the start so that the limit holds for queued starts too
        op->read_counted = true;
      }
      const uint32_t gen = op->generation;
      std::weak_ptr<QpCore> weak = weak_from_this();
      reactor().at(t, [weak, op, gen] {
        if (auto self = weak.lock(); self && op->generation == gen) self->start(op);
      });
    }
  }

  /// Inject the oldest started, not yet injected op once its payload is fetched and the wire is free.
  void try_inject()
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

  void send_read_request(const OpPtr& op)
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
        request.lost ? Loss{}
                     : decide_loss(p.dev->machine(), p.dev->nic(), dev_.machine(), dev_.nic(), op->remaining());
    if (request.lost || response.lost) {
      op->lost = true;
      op->progress = response.progress;
      if (request.lost || !response.nak) {
        schedule_timeout(op);
        return;
      }
      const auto& rnic = pf().nic(p.dev->machine(), p.dev->nic()).nic;
      const double seen = now + 2 * wire + double(response.bytes_sent) / (rnic.line_rate * rnic.payload_efficiency());
      const uint32_t gen = op->generation;
      std::weak_ptr<QpCore> weak = weak_from_this();
      reactor().at(seen, [weak, op, gen] {
        if (auto self = weak.lock(); self && op->generation == gen) self->sequence_nak(op);
      });
      return;
    }
    const double req = (nic.ack_packet_bytes + nic.rdma_header_bytes) / nic.line_rate;
    const uint32_t gen = op->generation;
    std::weak_ptr<QpCore> weak = weak_from_this();
    reactor().at(now + wire + req, [weak, op, gen] {
      if (auto self = weak.lock(); self && op->generation == gen) self->read_request_arrives(op);
    });
  }

  void start(const OpPtr& op)
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

  void inject(const OpPtr& op)
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

  void first_packet_arrives(const OpPtr& op)
  {
    Peer p = peer();
    Acceptance a;
    if (p.qp) a = p.qp->accept(*op);
    op->verdict = a.verdict;
    handle_verdict(op, a, p);
  }

  void handle_verdict(const OpPtr& op, const Acceptance& a, const Peer& p)
  {
    const uint32_t gen = op->generation;
    std::weak_ptr<QpCore> weak = weak_from_this();
    const double now = reactor().now();
    if (a.verdict == Verdict::OK) {
      if (a.reservation) op_reservation_[op.get()] = a.reservation;
      return;
    }
    if (a.verdict == Verdict::DROP) {
      schedule_timeout(op);
      return;
    }
    // A NAK travels back.
    const auto& pnic = pf().nic(p.dev->machine(), p.dev->nic()).nic;
    const double back = pf().wire_latency(p.dev->machine(), p.dev->nic(), dev_.machine(), dev_.nic()) +
                        pnic.ack_packet_bytes / pnic.line_rate;
    if (a.verdict == Verdict::RNR) {
      const double delay = rnr_timer_seconds(p.qp->attr().min_rnr_timer);
      reactor().at(now + back, [weak, op, gen, delay] {
        if (auto self = weak.lock(); self && op->generation == gen) self->rnr_nak(op, delay);
      });
      return;
    }
    const WcStatus st = a.verdict == Verdict::ACCESS_ERR ? WcStatus::REM_ACCESS_ERR
                        : a.verdict == Verdict::INV_REQ  ? WcStatus::REM_INV_REQ_ERR
                                                         : WcStatus::REM_OP_ERR;
    p.qp->responder_error();
    reactor().at(now + back, [weak, op, gen, st] {
      if (auto self = weak.lock(); self && op->generation == gen) self->fail(op, st);
    });
  }

  void injected(const OpPtr& op, Location dst, size_t mb, int nb)
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
                              extra_wire_time(nic, op->length, rdma, has_imm(op->wr.opcode));
    const uint32_t gen = op->generation;
    std::weak_ptr<QpCore> weak = weak_from_this();
    reactor().at(t_received, [weak, op, gen, dst] {
      if (auto self = weak.lock(); self && op->generation == gen) self->message_received(op, dst);
    });
    try_inject();
  }

  /// A packet of `op` was lost on the way to (mb, nb): a sequence NAK comes back, or the ACK time-out fires.
  void lost_message(const OpPtr& op, size_t mb, int nb)
  {
    const double now = reactor().now();
    if (!op->lost_nak) {
      op->t_inject = now; // the time-out runs from the last packet sent
      schedule_timeout(op);
      return;
    }
    const auto& pnic = pf().nic(mb, nb).nic;
    const double back = pf().wire_latency(mb, nb, dev_.machine(), dev_.nic()) + pnic.ack_packet_bytes / pnic.line_rate;
    const uint32_t gen = op->generation;
    std::weak_ptr<QpCore> weak = weak_from_this();
    reactor().at(now + back, [weak, op, gen] {
      if (auto self = weak.lock(); self && op->generation == gen) self->sequence_nak(op);
    });
  }

  /// The packets of a lost attempt before the lost one arrived in order: the resend starts after them, and, as the
  /// ACKs advanced, the QP's retry counter starts again.
  void take_progress(SendOp& op)
  {
    if (op.progress == 0) return;
    op.acked += op.progress;
    op.progress = 0;
    retry_count_ = 0;
  }

  /// One more retry for the QP; true when that exceeds retry_cnt. Expirations for attempts that began before the
  /// last counted one belong to the same round (the NIC keeps one transport timer per QP, not one per WR).
  bool count_retry(const SendOp& op)
  {
    const double now = reactor().now();
    if (op.t_attempt >= last_retry_at_ || retry_count_ == 0) {
      ++retry_count_;
      last_retry_at_ = now;
    }
    return retry_count_ > attr_.retry_cnt;
  }

  /// PSN sequence error NAK: go back to the lost packet at once; counts against retry_cnt like a time-out.
  void sequence_nak(const OpPtr& op)
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

  void message_received(const OpPtr& op, Location dst)
  {
    if (op->verdict != Verdict::OK) return; // NAK or drop already handled at the first packet
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
    const double ack =
        now + pf().wire_latency(mb, nb, dev_.machine(), dev_.nic()) + pnic.ack_packet_bytes / pnic.line_rate;
    const double cqe = ack + pf().dma_write_latency(dev_.machine(), dev_.nic(), Location::host(dev_.cpu_socket())) +
                       pf().machine(dev_.machine()).sockets[size_t(dev_.cpu_socket())].cpu.completion_overhead;
    finish_at(op, WcStatus::SUCCESS, cqe);
  }

  using Pieces = std::vector<std::pair<uint64_t, uint64_t>>; // (addr, length)

  static Pieces pieces(const std::vector<Sge>& sges)
  {
    Pieces p;
    for (const auto& s : sges)
      if (s.length) p.emplace_back(s.addr, s.length);
    return p;
  }

  /// Copy `len` bytes from the `src` pieces (in `from`) to the `dst` pieces (in `to`), moving whatever is
  /// materialized on both sides: everything in materialized runs, only the leading header bytes of buffers that
  /// back just a prefix, nothing for virtual buffers.
  static void move_bytes(MemorySpace& from, const Pieces& src, MemorySpace& to, const Pieces& dst, uint64_t len)
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

  static void deliver_at_responder(SimDevice& requester, SimDevice& responder, const std::weak_ptr<QpCore>& rweak,
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

  void read_request_arrives(const OpPtr& op)
  {
    Peer p = peer();
    Acceptance a;
    if (p.qp) a = p.qp->accept(*op);
    op->verdict = a.verdict;
    if (a.verdict != Verdict::OK) {
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
    t = p.dev->reserve_message_slot(t);
    read_responses_.push_back(ReadResponse{op, op->generation, t, p.dev, src, dst});
    stream_read_response();
  }

  /// The responder streams the READ responses of one QP one after the other, in request order (RC: responses
  /// carry consecutive PSNs); the DMA reads behind them overlap. A response waits for its DMA read (`ready`).
  void stream_read_response()
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

  void read_response_received(const OpPtr& op, SimDevice* rdev, Location dst)
  {
    op->comm_id = 0;
    if (responding_ == op.get()) responding_ = nullptr;
    stream_read_response();
    const auto& rnic = pf().nic(rdev->machine(), rdev->nic()).nic;
    const double now = reactor().now();
    double arrival = now + pf().wire_latency(rdev->machine(), rdev->nic(), dev_.machine(), dev_.nic()) +
                     extra_wire_time(rnic, op->length, false, false) +
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
        move_bytes(rdev->memory(), Pieces{{op->wr.remote_addr, op->length}}, self->dev_.memory(),
                   pieces(op->wr.sg_list), op->length);
        for (const auto& s : op->wr.sg_list)
          if (s.length > 0) self->dev_.notify_write(s.addr, s.length);
      }
      if (op->read_counted) {
        op->read_counted = false;
        --self->outstanding_reads_;
      }
      const auto& cpu = self->pf().machine(self->dev_.machine()).sockets[size_t(self->dev_.cpu_socket())].cpu;
      self->finish_at(op, WcStatus::SUCCESS, self->reactor().now() + cpu.completion_overhead);
      self->pump();
    });
  }

  void schedule_timeout(const OpPtr& op)
  {
    const double to = ack_timeout_seconds(attr_.timeout);
    if (to < 0) return; // timeout 0: wait forever, as the IB spec says
    const uint32_t gen = op->generation;
    std::weak_ptr<QpCore> weak = weak_from_this();
    reactor().at(op->t_inject + to, [weak, op, gen] {
      if (auto self = weak.lock(); self && op->generation == gen) self->timeout(op);
    });
  }

  void timeout(const OpPtr& op)
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

  void rnr_nak(const OpPtr& op, double delay)
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

  /// Stop whatever `o` has in flight: its pending events become stale, its comm is cancelled, it no longer
  /// holds the wire or a READ slot.
  void abort_in_flight(SendOp& o)
  {
    ++o.generation;
    if (o.comm_id) {
      dev_.ctx().cancel(o.comm_id);
      o.comm_id = 0;
    }
    if (o.read_counted) {
      o.read_counted = false;
      --outstanding_reads_;
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

  /// Go-back-N: restart the send queue at `op` no earlier than `when`.
  void rewind(const OpPtr& op, double when)
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
      o.verdict = Verdict::OK;
      op_reservation_.erase(&o);
    }
    next_start_ = std::min(next_start_, i);
    hold_until_ = std::max(hold_until_, when);
    std::weak_ptr<QpCore> weak = weak_from_this();
    reactor().at(when, [weak] {
      if (auto self = weak.lock()) self->pump();
    });
  }

  void finish_at(const OpPtr& op, WcStatus st, double when)
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

  void fail(const OpPtr& op, WcStatus st)
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

  /// Flush every unfinished WR at index >= `from` of the send queue and all receive WRs.
  void enter_error(size_t from)
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

  void reset()
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

  void deliver_in_order()
  {
    if (dev_.dead()) return;
    while (!sq_.empty() && sq_.front()->finished) {
      OpPtr op = sq_.front();
      sq_.pop_front();
      if (next_start_ > 0) --next_start_;
      if (op->signaled || op->status != WcStatus::SUCCESS) {
        WorkCompletion wc;
        wc.wr_id = op->wr.wr_id;
        wc.status = op->status;
        wc.opcode = requester_opcode(op->wr.opcode);
        wc.byte_len = uint32_t(op->length);
        wc.qp_num = qpn_;
        scq_->push(wc);
      }
    }
  }

  SimDevice& dev_;
  uint32_t qpn_;
  QpInitAttr init_;
  SimCq* scq_;
  SimCq* rcq_;
  QpAttr attr_;
  std::deque<OpPtr> sq_;
  size_t next_start_ = 0;
  const SendOp* injecting_ = nullptr; ///< op whose payload is on the wire (one at a time per QP)
  double hold_until_ = 0;
  double last_start_ = -1.0;
  double cpu_free_ = 0;
  int outstanding_reads_ = 0;
  /// Transport retry counter of the QP (IB: per requester, restarted by every ACK that shows forward progress),
  /// against attr_.retry_cnt; time-outs and sequence NAKs count.
  int retry_count_ = 0;
  double last_retry_at_ = -1; ///< when retry_count_ last went up
  uint64_t next_msn_ = 0;
  double last_read_arrival_ = 0;
  /// READ responses of this QP waiting for the responder's wire (streamed one at a time, in request order).
  struct ReadResponse {
    OpPtr op;
    uint32_t gen = 0;
    double ready = 0; ///< the responder's DMA read of the first bytes is done
    SimDevice* rdev = nullptr;
    Location src, dst;
  };
  std::deque<ReadResponse> read_responses_;
  const SendOp* responding_ = nullptr; ///< READ whose response is on the responder's wire
  double response_wakeup_ = -1;
  std::unordered_map<const SendOp*, std::shared_ptr<Reservation>> op_reservation_;
  // responder
  std::deque<RecvWr> rq_;
  std::deque<std::shared_ptr<Reservation>> reserved_;
  uint64_t expected_msn_ = 0;
};

// ---------------------------------------------------------------------------------------------------------
// Queue pair facade

class SimQueuePair final : public QueuePair {
public:
  SimQueuePair(SimDevice& dev, std::shared_ptr<QpCore> core) : dev_(dev), core_(std::move(core)) {}
  ~SimQueuePair() override { dev_.unregister_qp(core_->qpn()); }
  uint32_t qp_num() const override { return core_->qpn(); }
  QpState state() const override { return core_->attr().qp_state; }
  Status modify(const QpAttr& attr, QpAttrMask mask) override { return core_->modify(attr, mask); }
  Status post_send(const SendWr& wr) override { return core_->post_send(wr); }
  Status post_recv(const RecvWr& wr) override { return core_->post_recv(wr); }
  QpAttr attributes() const override { return core_->attr(); }

private:
  SimDevice& dev_;
  std::shared_ptr<QpCore> core_;
};

// ---------------------------------------------------------------------------------------------------------
// Device

SimDevice::SimDevice(SimContext& ctx, size_t machine, int nic, SimMemory& memory, int cpu_socket, std::string owner)
    : ctx_(ctx), machine_(machine), nic_(nic), memory_(memory), cpu_socket_(cpu_socket), owner_(std::move(owner)),
      lid_(ctx.next_lid++), mrs_(0x100u + 0x40u * lid_)
{
  ctx_.devices_by_lid[lid_] = this;
}

SimDevice::~SimDevice()
{
  ctx_.devices_by_lid.erase(lid_);
}

DeviceAttr SimDevice::query() const
{
  const auto& spec = ctx_.platform->nic(machine_, nic_);
  DeviceAttr a;
  a.name = "sim_" + spec.nic.name;
  a.link_layer = spec.nic.link_layer == models::LinkLayerKind::INFINIBAND ? LinkLayer::INFINIBAND : LinkLayer::ETHERNET;
  a.active_mtu = Mtu(spec.nic.mtu);
  a.port_rate_bps = spec.nic.line_rate * 8;
  a.max_qp_rd_atom = 16;
  a.max_inline_data = spec.nic.max_inline_data;
  return a;
}

PortAddress SimDevice::port_address() const
{
  PortAddress p;
  p.lid = lid_;
  // GID: fe80::<lid> style, enough to be unique within the simulation.
  p.gid[0] = 0xfe;
  p.gid[1] = 0x80;
  p.gid[14] = uint8_t(lid_ >> 8);
  p.gid[15] = uint8_t(lid_);
  return p;
}

Result<MemoryRegion> SimDevice::reg_mr(uint64_t addr, uint64_t length, Access access)
{
  if (!ctx_.platform->nic(machine_, nic_).nic.rdma_capable())
    return Error::at("", "reg_mr", "an RDMA-capable NIC",
                     ctx_.platform->nic(machine_, nic_).nic.name + " (Ethernet only)");
  if (auto st = check_registration(memory_, addr, length, access); !st.ok()) return st.error();
  return mrs_.add(addr, length, access);
}

Status SimDevice::dereg_mr(const MemoryRegion& mr)
{
  if (!mrs_.remove(mr.lkey))
    return Error::at("", "dereg_mr", "a registered memory region", "unknown lkey " + std::to_string(mr.lkey));
  return ok_status();
}

Result<std::unique_ptr<CompletionQueue>> SimDevice::create_cq(int min_entries)
{
  if (min_entries <= 0) return Error::at("", "create_cq", "a positive number of entries", std::to_string(min_entries));
  return std::unique_ptr<CompletionQueue>(new SimCq(ctx_.reactor));
}

Result<std::unique_ptr<QueuePair>> SimDevice::create_qp(const QpInitAttr& attr)
{
  if (!ctx_.platform->nic(machine_, nic_).nic.rdma_capable())
    return Error::at("", "create_qp", "an RDMA-capable NIC",
                     ctx_.platform->nic(machine_, nic_).nic.name + " (Ethernet only)");
  if (!attr.send_cq || !attr.recv_cq || !dynamic_cast<SimCq*>(attr.send_cq) || !dynamic_cast<SimCq*>(attr.recv_cq))
    return Error::at("", "create_qp", "send and receive CQs created by this device", "a missing or foreign CQ");
  const auto& nic = ctx_.platform->nic(machine_, nic_).nic;
  if (attr.cap.max_inline_data > nic.max_inline_data)
    return Error::at("", "create_qp.cap.max_inline_data", "at most " + std::to_string(nic.max_inline_data),
                     std::to_string(attr.cap.max_inline_data));
  const uint32_t qpn = next_qpn_++;
  auto core = std::make_shared<QpCore>(*this, qpn, attr);
  qps_[qpn] = core.get();
  return std::unique_ptr<QueuePair>(new SimQueuePair(*this, core));
}

QpCore* SimDevice::find_qp(uint32_t qpn) const
{
  auto it = qps_.find(qpn);
  return it == qps_.end() ? nullptr : it->second;
}

void SimDevice::unregister_qp(uint32_t qpn)
{
  qps_.erase(qpn);
}

size_t SimDevice::force_error_all_qps()
{
  size_t n = 0;
  for (auto& [qpn, core] : qps_) {
    if (core->attr().qp_state == QpState::ERR) continue;
    QpAttr a;
    a.qp_state = QpState::ERR;
    if (core->modify(a, QpAttrMask::STATE).ok()) ++n;
  }
  return n;
}

void SimDevice::kill()
{
  dead_ = true;
  for (auto& [qpn, core] : qps_)
    core->kill();
}

double SimDevice::reserve_message_slot(double t)
{
  const double rate = ctx_.platform->nic(machine_, nic_).nic.max_message_rate;
  if (rate <= 0) return t;
  const double start = std::max(t, message_slot_free_);
  message_slot_free_ = start + 1.0 / rate;
  return start;
}

Status SimDevice::watch_memory(uint64_t addr, uint64_t len, std::function<void()> on_write)
{
  if (!memory_.find(addr))
    return Error::at("", "watch_memory", "an address allocated by this process", std::to_string(addr));
  watches_.push_back(Watch{addr, len, std::move(on_write)});
  return ok_status();
}

void SimDevice::notify_write(uint64_t addr, uint64_t len)
{
  if (dead_) return;
  for (size_t i = 0; i < watches_.size();) {
    const Watch& w = watches_[i];
    if (addr < w.addr + std::max<uint64_t>(w.len, 1) && w.addr < addr + len) {
      auto fn = std::move(watches_[i].fn);
      watches_.erase(watches_.begin() + long(i));
      ctx_.reactor.post(std::move(fn));
    } else {
      ++i;
    }
  }
}

} // namespace tp::sim
