// RC QP transitions and the attribute masks they require.
#include "core/device/qp_state_machine.hpp"

#include <catch2/catch.hpp>

using namespace tp::verbs;

TEST_CASE("RESET -> INIT -> RTR -> RTS with the required masks", "[quick]")
{
  QpAttr cur;
  QpAttr a;
  a.qp_state = QpState::INIT;
  a.qp_access_flags = Access::REMOTE_WRITE;
  REQUIRE(apply_qp_transition(cur, a, RESET_TO_INIT_MASK).ok());
  CHECK(cur.qp_state == QpState::INIT);
  CHECK(has(cur.qp_access_flags, Access::REMOTE_WRITE));
  a.qp_state = QpState::RTR;
  a.dest_qp_num = 0x42;
  REQUIRE(apply_qp_transition(cur, a, INIT_TO_RTR_MASK).ok());
  CHECK(cur.dest_qp_num == 0x42);
  a.qp_state = QpState::RTS;
  a.retry_cnt = 3;
  REQUIRE(apply_qp_transition(cur, a, RTR_TO_RTS_MASK).ok());
  CHECK(cur.qp_state == QpState::RTS);
  CHECK(cur.retry_cnt == 3);
}

TEST_CASE("Skipping a state or missing a mask bit is refused and leaves the QP unchanged", "[quick]")
{
  QpAttr cur;
  QpAttr a;
  a.qp_state = QpState::RTS;
  auto skip = apply_qp_transition(cur, a, RTR_TO_RTS_MASK);
  REQUIRE_FALSE(skip.ok());
  CHECK(skip.error().message().find("RESET->RTS") != std::string::npos);
  CHECK(cur.qp_state == QpState::RESET);

  a.qp_state = QpState::INIT;
  auto missing = apply_qp_transition(cur, a, QpAttrMask::STATE | QpAttrMask::PORT);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message().find("ACCESS_FLAGS") != std::string::npos); // the first missing bit
  CHECK(cur.qp_state == QpState::RESET);
}

TEST_CASE("Any state may go to ERR and RESET, ERR only to RESET", "[quick]")
{
  QpAttr cur;
  cur.qp_state = QpState::RTR;
  QpAttr a;
  a.qp_state = QpState::ERR;
  REQUIRE(apply_qp_transition(cur, a, QpAttrMask::STATE).ok());
  a.qp_state = QpState::RTS;
  CHECK_FALSE(apply_qp_transition(cur, a, RTR_TO_RTS_MASK).ok());
  a.qp_state = QpState::RESET;
  REQUIRE(apply_qp_transition(cur, a, QpAttrMask::STATE).ok());
  CHECK(cur.qp_state == QpState::RESET);
}

TEST_CASE("Out-of-range attributes are refused", "[quick]")
{
  QpAttr cur;
  cur.qp_state = QpState::RTR;
  QpAttr a;
  a.qp_state = QpState::RTS;
  a.retry_cnt = 8;
  CHECK_FALSE(apply_qp_transition(cur, a, RTR_TO_RTS_MASK).ok());
  a.retry_cnt = 7;
  a.rnr_retry = 9;
  CHECK_FALSE(apply_qp_transition(cur, a, RTR_TO_RTS_MASK).ok());
}

TEST_CASE("Post is accepted only in the states where ibv_post_* accepts it", "[quick]")
{
  CHECK_FALSE(send_queue_accepts(QpState::RESET));
  CHECK_FALSE(send_queue_accepts(QpState::INIT));
  CHECK_FALSE(send_queue_accepts(QpState::RTR));
  CHECK(send_queue_accepts(QpState::RTS));
  CHECK(send_queue_accepts(QpState::ERR));
  CHECK_FALSE(recv_queue_accepts(QpState::RESET));
  CHECK(recv_queue_accepts(QpState::INIT));
}
