// Internal to the software verbs device (soft_device.cpp, soft_qp.cpp, soft_fabric.cpp): one RC queue pair's
// state (QpCore: the requester's send queue, the receive queue, retries) and the responder's side of a request.
// Everything here runs under the fabric's state lock.
#pragma once

#include "emulator/completion_delivery.hpp"
#include "emulator/soft_device.hpp"

#include "core/device/rc_responder_rules.hpp"

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

namespace tp::emu {

using verbs::QpAttr;
using verbs::QpInitAttr;
using verbs::RecvWr;
using verbs::ResponderVerdict;
using verbs::SendWr;
using verbs::Sge;
using verbs::WcOpcode;
using verbs::WcStatus;
using verbs::WrOpcode;

/// A completion queue: completions pushed from the wire thread are delivered on the owner's runtime.
class SoftCq final : public verbs::CompletionQueue {
public:
  explicit SoftCq(Runtime& rt) : delivery_(rt) {}
  void set_handler(verbs::CompletionHandler handler) override { delivery_.set_handler(std::move(handler)); }
  /// From the wire thread: deliver on the owner's runtime.
  void push(const verbs::WorkCompletion& wc) { delivery_.deliver(wc); }

private:
  CompletionDelivery delivery_;
};

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

/// One RC queue pair of the software device.
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
  void complete_send(const PendingSend& p, WcStatus st, WcOpcode opc, uint32_t len);
  void complete_recv(const RecvWr& r, WcStatus st, WcOpcode opc, uint32_t len, bool imm, uint32_t imm_data);
  /// To ERR: every outstanding WR completes with WR_FLUSH_ERR.
  void enter_error();
  void schedule(double delay = 0);
  enum class Outcome { DONE, STALL, FAILED, WAIT };
  /// Execute send-queue heads in order until one stalls or the queue is empty (state lock held).
  void process();
  /// Completes the head WR `p` with error `st` and drops it from the send queue.
  Outcome fail(PendingSend& p, WcStatus st);
  /// The requester's side of one WR. The responder's side runs here (a peer of this fabric) or in the peer's
  /// process (its fabric answers over the process link); either way its verdict comes back to `conclude`.
  Outcome execute(PendingSend& p, double& delay);
  /// What the responder said, turned into the requester's completion (or a retry).
  Outcome conclude(PendingSend& p, ResponderVerdict v, uint8_t rnr_timer, double& delay);
  /// The response to the in-flight head of the send queue arrived (process link; state lock held).
  void response(uint64_t seq, ResponderVerdict v, uint8_t rnr_timer);
  /// The peer process is gone: the in-flight WR will never be answered; it times out as with a dead host.
  void peer_lost(uint16_t first_lid, uint16_t lids);
};

/// The responder's side: checks and data movement on the responder's QP and memory (its fabric's state lock held).
/// `payload`: where the requester's bytes are (SEND / WRITE), `read_into`: where a READ's bytes go, both as
/// pointers valid in this process (the requester's memory, mapped here when it is another process's).
ResponderVerdict respond(SoftDevice* pdev, QpCore* peer, const ResponderRequest& r, const std::vector<Span>& payload,
                         const std::vector<Span>& read_into, uint8_t& rnr_timer);

/// The verbs::QueuePair a SoftDevice hands out over a QpCore.
std::unique_ptr<verbs::QueuePair> make_soft_qp(std::shared_ptr<QpCore> core);

} // namespace tp::emu
