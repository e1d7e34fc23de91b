// The RC responder's rules (see rc_responder_rules.hpp).
#include "core/device/rc_responder_rules.hpp"

#include "core/device/qp_state_machine.hpp"

namespace tp::verbs {

namespace {

ResponderDecision verdict_only(ResponderVerdict v)
{
  ResponderDecision d;
  d.verdict = v;
  d.qp_to_error =
      v == ResponderVerdict::REM_ACCESS || v == ResponderVerdict::REM_INV_REQ || v == ResponderVerdict::REM_OP;
  return d;
}

/// A SEND that fails on the receive WR it takes: the WR completes with `recv_error`, the QP goes to ERR.
ResponderDecision fails_on_recv(ResponderVerdict v, WcStatus recv_error)
{
  ResponderDecision d = verdict_only(v);
  d.takes_recv = true;
  d.recv_error = recv_error;
  return d;
}

} // namespace

ResponderDecision rc_responder_decide(const IncomingRequest& request, const ResponderSide& responder)
{
  if (!responder_active(responder.state) || !responder.in_sequence) return verdict_only(ResponderVerdict::NOT_READY);
  const WrOpcode code = request.opcode;
  if (!is_send(code)) { // RDMA WRITE (with or without immediate) and READ address the responder's memory
    const Access need = code == WrOpcode::RDMA_READ ? Access::REMOTE_READ : Access::REMOTE_WRITE;
    const bool qp_allows = request.length == 0 || has(responder.qp_access_flags, need);
    if (!qp_allows || !responder.mrs ||
        responder.mrs->check_remote(request.rkey, request.remote_addr, request.length, need) != WcStatus::SUCCESS)
      return verdict_only(ResponderVerdict::REM_ACCESS);
  }
  if (!consumes_recv(code)) return verdict_only(ResponderVerdict::ACK);
  const RecvWr* r = responder.next_recv;
  if (!r) return verdict_only(ResponderVerdict::RNR);
  if (is_send(code)) {
    if (request.length > r->total_length()) return fails_on_recv(ResponderVerdict::REM_INV_REQ, WcStatus::LOC_LEN_ERR);
    for (const auto& sge : r->sg_list)
      if (!responder.mrs || responder.mrs->check_local(sge, true) != WcStatus::SUCCESS)
        return fails_on_recv(ResponderVerdict::REM_OP, WcStatus::LOC_PROT_ERR);
  }
  ResponderDecision d = verdict_only(ResponderVerdict::ACK);
  d.takes_recv = true;
  return d;
}

WcStatus requester_status(ResponderVerdict v)
{
  switch (v) {
  case ResponderVerdict::ACK:
    return WcStatus::SUCCESS;
  case ResponderVerdict::REM_ACCESS:
    return WcStatus::REM_ACCESS_ERR;
  case ResponderVerdict::REM_INV_REQ:
    return WcStatus::REM_INV_REQ_ERR;
  case ResponderVerdict::REM_OP:
    return WcStatus::REM_OP_ERR;
  case ResponderVerdict::NOT_READY:
  case ResponderVerdict::RNR:
    break;
  }
  return WcStatus::GENERAL_ERR;
}

const char* to_string(ResponderVerdict v)
{
  switch (v) {
  case ResponderVerdict::ACK:
    return "ACK";
  case ResponderVerdict::NOT_READY:
    return "NOT_READY";
  case ResponderVerdict::RNR:
    return "RNR";
  case ResponderVerdict::REM_ACCESS:
    return "REM_ACCESS";
  case ResponderVerdict::REM_INV_REQ:
    return "REM_INV_REQ";
  case ResponderVerdict::REM_OP:
    return "REM_OP";
  }
  return "?";
}

} // namespace tp::verbs
