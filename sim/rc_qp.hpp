// The simulated NIC's RC queue pair, for the files that implement it: the requester (sim/rc_requester.cpp: the
// send engine, injection, ACKs, go-back-N, completions in WR order), the responder (sim/rc_responder.cpp: the
// responder's rules of core/device/rc_responder_rules.hpp on this QP, data placement, READ responses, receive
// completions) and the loss model (sim/rc_loss.cpp: injected packet loss, time-outs, sequence and RNR NAKs,
// retry counting); the device and the QP facade are sim/sim_device.cpp. Formulas: docs/model.md (costs in
// models/rc_costs.hpp, latencies in models/latency_model.hpp). Include only from sim/*.cpp.
#pragma once

#include "core/device/rc_responder_rules.hpp"
#include "core/memory/location.hpp"
#include "sim/sim_device.hpp"

#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tp {
class MemorySpace;
}

namespace tp::sim {

class Reactor;
class Platform;
class FaultInjector;

using namespace tp::verbs;

/// A completion queue of the simulated NIC: completions go to the handler on the process's reactor (held back
/// until a handler is set).
class SimCq final : public CompletionQueue {
public:
  struct State {
    CompletionHandler handler;
    std::deque<WorkCompletion> backlog;
  };
  explicit SimCq(Reactor& r) : reactor_(r), st_(std::make_shared<State>()) {}
  void set_handler(CompletionHandler handler) override;
  void push(const WorkCompletion& wc);

private:
  Reactor& reactor_;
  std::shared_ptr<State> st_;
};

/// A receive WR taken by an accepted incoming message; cancelled if the responder QP errs before arrival.
struct Reservation {
  RecvWr wr;
  bool cancelled = false;
};

/// One RC queue pair of the simulated NIC: its send queue (requester), its receive queue and the checks on incoming
/// requests (responder), and its reaction to lost packets (loss model).
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
    ResponderVerdict verdict = ResponderVerdict::ACK;
    int read_slots = 0;    ///< outstanding-READ slots it holds (SendWr::stands_for once started; 0: none)
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
  QpCore(SimDevice& dev, uint32_t qpn, const QpInitAttr& init);
  ~QpCore();

  uint32_t qpn() const { return qpn_; }

  /// The owning process died: forget everything, send and answer nothing, complete nothing.
  void kill() { reset(); }
  const QpAttr& attr() const { return attr_; }
  Reactor& reactor();
  const Platform& pf();

  // ---- verbs entry points ----
  Status modify(const QpAttr& a, QpAttrMask mask);
  Status post_send(const SendWr& wr);

  Status post_recv(const RecvWr& wr);

  // ---- responder side (called on the peer's core) ----
  struct Acceptance {
    ResponderVerdict verdict = ResponderVerdict::NOT_READY;
    std::shared_ptr<Reservation> reservation;
  };

  /// The responder's rules (core/device/rc_responder_rules.hpp) on this QP; an accepted SEND / WRITE_WITH_IMM
  /// reserves the receive WR it takes.
  Acceptance accept(const SendOp& op);

  /// Responder detected a fatal error (remote access, invalid request): move to ERR.
  void responder_error();
  void push_recv_wc(uint64_t wr_id, WcStatus st, WcOpcode opc, uint32_t len, bool imm, uint32_t imm_data, double at);

  void forget_reservation(const std::shared_ptr<Reservation>& r);

  double last_arrival_ = 0; // per-QP ordering of arrivals at the responder

private:
  // ---- requester engine ----
  struct Peer {
    SimDevice* dev = nullptr;
    std::shared_ptr<QpCore> qp;
  };
  Peer peer();
  FaultInjector* faults();

  /// Name of the process at the other end of this QP (retry accounting), alive or not.
  std::string peer_owner() const;

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
  Loss decide_loss(size_t ma, int na, size_t mb, int nb, uint64_t len);

  size_t index_of(const SendOp* op) const;
  Location location_of(SimMemory& mem, uint64_t addr, int default_socket);

  Location local_location(const SendOp& op);

  /// Start every queued WQE: WQE processing is pipelined (one every wqe_processing_time), payload DMA
  /// reads overlap, injection onto the wire is serialized in WR order (try_inject).
  void pump();

  /// Inject the oldest started, not yet injected op once its payload is fetched and the wire is free.
  void try_inject();
  void send_read_request(const OpPtr& op);

  void start(const OpPtr& op);
  void inject(const OpPtr& op);

  void first_packet_arrives(const OpPtr& op);
  void handle_verdict(const OpPtr& op, const Acceptance& a, const Peer& p);

  void injected(const OpPtr& op, Location dst, size_t mb, int nb);

  /// A packet of `op` was lost on the way to (mb, nb): a sequence NAK comes back, or the ACK time-out fires.
  void lost_message(const OpPtr& op, size_t mb, int nb);

  /// The packets of a lost attempt before the lost one arrived in order: the resend starts after them, and, as the
  /// ACKs advanced, the QP's retry counter starts again.
  void take_progress(SendOp& op);

  /// One more retry for the QP; true when that exceeds retry_cnt. Expirations for attempts that began before the
  /// last counted one belong to the same round (the NIC keeps one transport timer per QP, not one per WR).
  bool count_retry(const SendOp& op);

  /// PSN sequence error NAK: go back to the lost packet at once; counts against retry_cnt like a time-out.
  void sequence_nak(const OpPtr& op);
  void message_received(const OpPtr& op, Location dst);

  using Pieces = std::vector<std::pair<uint64_t, uint64_t>>; // (addr, length)

  static Pieces pieces(const std::vector<Sge>& sges);

  /// Copy `len` bytes from the `src` pieces (in `from`) to the `dst` pieces (in `to`), moving whatever is
  /// materialized on both sides: everything in materialized runs, only the leading header bytes of buffers that
  /// back just a prefix, nothing for virtual buffers.
  static void move_bytes(MemorySpace& from, const Pieces& src, MemorySpace& to, const Pieces& dst, uint64_t len);

  static void deliver_at_responder(SimDevice& requester, SimDevice& responder, const std::weak_ptr<QpCore>& rweak,
                                   const SendWr& wr, uint64_t len, const std::shared_ptr<Reservation>& res);
  void read_request_arrives(const OpPtr& op);

  /// The responder streams the READ responses of one QP one after the other, in request order (RC: responses
  /// carry consecutive PSNs); the DMA reads behind them overlap. A response waits for its DMA read (`ready`).
  void stream_read_response();
  void read_response_received(const OpPtr& op, SimDevice* rdev, Location dst);

  void schedule_timeout(const OpPtr& op);
  void timeout(const OpPtr& op);

  void rnr_nak(const OpPtr& op, double delay);

  /// Stop whatever `o` has in flight: its pending events become stale, its comm is cancelled, it no longer
  /// holds the wire or a READ slot.
  void abort_in_flight(SendOp& o);

  /// Go-back-N: restart the send queue at `op` no earlier than `when`.
  void rewind(const OpPtr& op, double when);
  void finish_at(const OpPtr& op, WcStatus st, double when);

  void fail(const OpPtr& op, WcStatus st);

  /// Flush every unfinished WR at index >= `from` of the send queue and all receive WRs.
  void enter_error(size_t from);
  void reset();

  void deliver_in_order();

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

} // namespace tp::sim
