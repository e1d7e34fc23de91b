// The RC queue-pair state machine (RESET -> INIT -> RTR -> RTS, any -> ERR/RESET) with the attribute masks
// that ibv_modify_qp requires for each transition. Shared by every device backend that implements RC
// semantics itself (simulated NIC, software device) so that they refuse exactly the same misuse.
#pragma once

#include "core/common/result.hpp"
#include "core/device/verbs_types.hpp"

namespace tp::verbs {

/// Validate `attr`/`mask` against the current state and apply it to `current` on success.
/// On error `current` is unchanged and the Error names the transition and the missing attribute.
Status apply_qp_transition(QpAttr& current, const QpAttr& attr, QpAttrMask mask);

/// Whether post_send is accepted in this state (RTS, SQD, SQE; ERR accepts and flushes).
inline bool send_queue_accepts(QpState s)
{
  return s == QpState::RTS || s == QpState::SQD || s == QpState::SQE || s == QpState::ERR;
}
/// Whether post_recv is accepted in this state (everything except RESET).
inline bool recv_queue_accepts(QpState s)
{
  return s != QpState::RESET;
}
/// Whether the QP answers incoming requests as a responder (RTR and later, not ERR/RESET/INIT).
inline bool responder_active(QpState s)
{
  return s == QpState::RTR || s == QpState::RTS || s == QpState::SQD;
}

} // namespace tp::verbs
