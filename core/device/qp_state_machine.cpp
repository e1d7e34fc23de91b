// RC QP transition table and required masks (IBTA spec ch. 10.3 / ibv_modify_qp(3)).
#include "core/device/qp_state_machine.hpp"

#include <string>

namespace tp::verbs {

namespace {

bool transition_allowed(QpState from, QpState to)
{
  if (to == QpState::RESET || to == QpState::ERR) return true;
  switch (from) {
  case QpState::RESET:
    return to == QpState::INIT;
  case QpState::INIT:
    return to == QpState::INIT || to == QpState::RTR;
  case QpState::RTR:
    return to == QpState::RTS;
  case QpState::RTS:
    return to == QpState::RTS || to == QpState::SQD;
  case QpState::SQD:
    return to == QpState::RTS || to == QpState::SQD;
  case QpState::SQE:
    return to == QpState::RTS;
  case QpState::ERR:
    return false;
  }
  return false;
}

QpAttrMask required_mask(QpState from, QpState to)
{
  if (from == QpState::RESET && to == QpState::INIT) return RESET_TO_INIT_MASK;
  if (from == QpState::INIT && to == QpState::RTR) return INIT_TO_RTR_MASK;
  if (from == QpState::RTR && to == QpState::RTS) return RTR_TO_RTS_MASK;
  return QpAttrMask::STATE;
}

const char* mask_bit_name(QpAttrMask bit)
{
  switch (bit) {
  case QpAttrMask::STATE:
    return "STATE";
  case QpAttrMask::ACCESS_FLAGS:
    return "ACCESS_FLAGS";
  case QpAttrMask::PKEY_INDEX:
    return "PKEY_INDEX";
  case QpAttrMask::PORT:
    return "PORT";
  case QpAttrMask::AV:
    return "AV";
  case QpAttrMask::PATH_MTU:
    return "PATH_MTU";
  case QpAttrMask::TIMEOUT:
    return "TIMEOUT";
  case QpAttrMask::RETRY_CNT:
    return "RETRY_CNT";
  case QpAttrMask::RNR_RETRY:
    return "RNR_RETRY";
  case QpAttrMask::RQ_PSN:
    return "RQ_PSN";
  case QpAttrMask::MAX_QP_RD_ATOMIC:
    return "MAX_QP_RD_ATOMIC";
  case QpAttrMask::MIN_RNR_TIMER:
    return "MIN_RNR_TIMER";
  case QpAttrMask::SQ_PSN:
    return "SQ_PSN";
  case QpAttrMask::MAX_DEST_RD_ATOMIC:
    return "MAX_DEST_RD_ATOMIC";
  case QpAttrMask::DEST_QPN:
    return "DEST_QPN";
  }
  return "?";
}

} // namespace

Status apply_qp_transition(QpAttr& current, const QpAttr& attr, QpAttrMask mask)
{
  const QpState from = current.qp_state;
  const QpState to = has(mask, QpAttrMask::STATE) ? attr.qp_state : from;
  const std::string where = std::string("modify_qp ") + to_string(from) + "->" + to_string(to);
  if (!transition_allowed(from, to))
    return Error::at({}, where, "a valid RC state transition", "not allowed from " + std::string(to_string(from)));
  const QpAttrMask need = required_mask(from, to);
  for (uint32_t bit = 1; bit != 0 && bit <= uint32_t(QpAttrMask::DEST_QPN); bit <<= 1) {
    auto b = QpAttrMask(bit);
    if (has(need, b) && !has(mask, b))
      return Error::at({}, where, std::string("attribute mask bit ") + mask_bit_name(b), "missing");
  }
  if (has(mask, QpAttrMask::DEST_QPN) && (attr.dest_qp_num >> 24) != 0)
    return Error::at({}, where, "a 24-bit dest_qp_num", std::to_string(attr.dest_qp_num));
  if (has(mask, QpAttrMask::RETRY_CNT) && attr.retry_cnt > 7)
    return Error::at({}, where, "retry_cnt in 0..7", std::to_string(attr.retry_cnt));
  if (has(mask, QpAttrMask::RNR_RETRY) && attr.rnr_retry > 7)
    return Error::at({}, where, "rnr_retry in 0..7", std::to_string(attr.rnr_retry));
  if (has(mask, QpAttrMask::MIN_RNR_TIMER) && attr.min_rnr_timer > 31)
    return Error::at({}, where, "min_rnr_timer in 0..31", std::to_string(attr.min_rnr_timer));
  if (has(mask, QpAttrMask::TIMEOUT) && attr.timeout > 31)
    return Error::at({}, where, "timeout in 0..31", std::to_string(attr.timeout));

  QpAttr next = current;
  next.qp_state = to;
  if (has(mask, QpAttrMask::ACCESS_FLAGS)) next.qp_access_flags = attr.qp_access_flags;
  if (has(mask, QpAttrMask::PKEY_INDEX)) next.pkey_index = attr.pkey_index;
  if (has(mask, QpAttrMask::PORT)) next.port_num = attr.port_num;
  if (has(mask, QpAttrMask::AV)) next.dest = attr.dest;
  if (has(mask, QpAttrMask::PATH_MTU)) next.path_mtu = attr.path_mtu;
  if (has(mask, QpAttrMask::TIMEOUT)) next.timeout = attr.timeout;
  if (has(mask, QpAttrMask::RETRY_CNT)) next.retry_cnt = attr.retry_cnt;
  if (has(mask, QpAttrMask::RNR_RETRY)) next.rnr_retry = attr.rnr_retry;
  if (has(mask, QpAttrMask::RQ_PSN)) next.rq_psn = attr.rq_psn;
  if (has(mask, QpAttrMask::SQ_PSN)) next.sq_psn = attr.sq_psn;
  if (has(mask, QpAttrMask::MAX_QP_RD_ATOMIC)) next.max_rd_atomic = attr.max_rd_atomic;
  if (has(mask, QpAttrMask::MAX_DEST_RD_ATOMIC)) next.max_dest_rd_atomic = attr.max_dest_rd_atomic;
  if (has(mask, QpAttrMask::MIN_RNR_TIMER)) next.min_rnr_timer = attr.min_rnr_timer;
  if (has(mask, QpAttrMask::DEST_QPN)) next.dest_qp_num = attr.dest_qp_num;
  if (to == QpState::RESET) next = QpAttr{}; // RESET forgets everything
  current = next;
  return ok_status();
}

} // namespace tp::verbs
