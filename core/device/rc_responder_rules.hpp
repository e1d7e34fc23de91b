// The RC responder's rules, written once for every device that implements RC itself (the simulated NIC in
// sim/rc_responder.cpp, the software device in emulator/soft_qp.cpp): what a responder QP answers to the
// first packet of a request, from its state, its access flags, the rkey/bounds/access of the target MR and the
// receive WR at the head of its receive queue. The device carries out the decision (consumes the receive WR,
// completes it with an error, moves the QP to ERR, sends the ACK/NAK) in its own time and memory model.
// Tests: tests/core/rc_responder_rules_test.cpp.
#pragma once

#include "core/device/mr_table.hpp"
#include "core/device/verbs_types.hpp"

#include <cstdint>

namespace tp::verbs {

/// A responder's answer to one request: an ACK, or the NAK / silence a real responder would give.
/// (The numeric values travel between OS processes in emulator/process_wire.hpp: append, never reorder.)
enum class ResponderVerdict : uint8_t {
  ACK,         ///< accepted: the data is placed, the requester completes with SUCCESS
  NOT_READY,   ///< no answer (QP not RTR/RTS, out of sequence): the requester times out and retries
  RNR,         ///< receiver not ready (no receive WR): RNR NAK, retried after min_rnr_timer
  REM_ACCESS,  ///< rkey, bounds or access refused: NAK, REM_ACCESS_ERR at the requester
  REM_INV_REQ, ///< a SEND longer than the receive WR: NAK, REM_INV_REQ_ERR at the requester
  REM_OP,      ///< the receive WR's own buffers are not writable: NAK, REM_OP_ERR at the requester
};

/// The operation types that carry payload the responder places (SEND) or take a receive WR (SEND, WRITE_WITH_IMM).
inline bool is_send(WrOpcode op)
{
  return op == WrOpcode::SEND || op == WrOpcode::SEND_WITH_IMM;
}
inline bool has_imm(WrOpcode op)
{
  return op == WrOpcode::SEND_WITH_IMM || op == WrOpcode::RDMA_WRITE_WITH_IMM;
}
inline bool consumes_recv(WrOpcode op)
{
  return is_send(op) || op == WrOpcode::RDMA_WRITE_WITH_IMM;
}

/// What the responder sees of an incoming request (its first packet).
struct IncomingRequest {
  WrOpcode opcode = WrOpcode::SEND;
  uint64_t length = 0;
  uint32_t rkey = 0;
  uint64_t remote_addr = 0;
};

/// The responder QP as the rules need it.
struct ResponderSide {
  QpState state = QpState::RESET;
  Access qp_access_flags = Access::NONE;
  bool in_sequence = true;           ///< the request is the one the QP expects next (a device that orders itself)
  const RecvWr* next_recv = nullptr; ///< head of the receive queue; null when empty (or withheld by a fault)
  const MrTable* mrs = nullptr;      ///< the responder device's memory regions
};

/// The rules' decision, which the device carries out.
struct ResponderDecision {
  ResponderVerdict verdict = ResponderVerdict::NOT_READY;
  /// The head receive WR is taken: by an accepted SEND / WRITE_WITH_IMM, or by a SEND that fails on it.
  bool takes_recv = false;
  /// When a SEND fails on the receive WR: its completion status (LOC_LEN_ERR, LOC_PROT_ERR); SUCCESS otherwise.
  WcStatus recv_error = WcStatus::SUCCESS;
  /// The responder QP moves to ERR (REM_ACCESS, REM_INV_REQ, REM_OP).
  bool qp_to_error = false;
};

/// Apply the RC responder rules (IB spec 9.7.5, 9.7.4.1.x as the devices implement them) in their order: QP state and
/// sequence, then remote access (rkey, bounds, MR access, QP access flags; a zero-length RDMA is not checked), then
/// the receive WR (RNR when none, length, its SGEs' local write access).
ResponderDecision rc_responder_decide(const IncomingRequest& request, const ResponderSide& responder);

/// The requester's completion status for a NAK verdict (REM_ACCESS_ERR, REM_INV_REQ_ERR, REM_OP_ERR); SUCCESS for
/// ACK, GENERAL_ERR for verdicts that are not a fatal NAK (NOT_READY, RNR: the requester retries those).
WcStatus requester_status(ResponderVerdict v);

const char* to_string(ResponderVerdict v);

} // namespace tp::verbs
