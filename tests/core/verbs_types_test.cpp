// Verbs value types: status strings, IB timer encodings, QP endpoint wire form.
#include "core/device/device.hpp"

#include <catch2/catch.hpp>

using namespace tp::verbs;

TEST_CASE("Completion statuses have ibverbs-like names", "[quick]")
{
  CHECK(std::string(to_string(WcStatus::SUCCESS)) == "success");
  CHECK(std::string(to_string(WcStatus::REM_ACCESS_ERR)) == "remote access error");
  CHECK(std::string(to_string(WcStatus::RNR_RETRY_EXC_ERR)) == "RNR retry counter exceeded");
  CHECK(std::string(to_string(WcStatus::WR_FLUSH_ERR)) == "Work Request Flushed Error");
  CHECK(std::string(to_string(QpState::RTS)) == "RTS");
  CHECK(to_string(Access::LOCAL_WRITE | Access::REMOTE_READ) == "LOCAL_WRITE|REMOTE_READ");
}

TEST_CASE("IB timer encodings follow the spec tables", "[quick]")
{
  CHECK(rnr_timer_seconds(12) == Approx(0.64e-3));
  CHECK(rnr_timer_seconds(0) == Approx(655.36e-3));
  CHECK(rnr_timer_seconds(1) == Approx(0.01e-3));
  CHECK(ack_timeout_seconds(14) == Approx(4.096e-6 * 16384));
  CHECK(ack_timeout_seconds(0) < 0); // infinite
}

TEST_CASE("QP endpoints round-trip through their wire form and reject malformed input", "[quick]")
{
  QpEndpoint e;
  e.port.lid = 0x1234;
  e.port.gid[15] = 9;
  e.qp_num = 0xABCDE;
  e.psn = 0x123456;
  auto bytes = e.encode();
  REQUIRE(bytes.size() == 26);
  QpEndpoint d;
  REQUIRE(QpEndpoint::decode(bytes.data(), bytes.size(), d));
  CHECK(d.port == e.port);
  CHECK(d.qp_num == e.qp_num);
  CHECK(d.psn == e.psn);
  CHECK_FALSE(QpEndpoint::decode(bytes.data(), 25, d));
  CHECK_FALSE(QpEndpoint::decode(nullptr, 26, d));
  bytes[21] = 0xFF; // qp_num beyond 24 bits
  CHECK_FALSE(QpEndpoint::decode(bytes.data(), bytes.size(), d));
}

TEST_CASE("SGE lengths are 32 bits: a 64-bit size that does not fit is refused and never wrapped", "[quick]")
{
  CHECK(sge_length(0) == 0u);
  CHECK(sge_length(MAX_MESSAGE_BYTES) == uint32_t(MAX_MESSAGE_BYTES));
  CHECK(sge_length(0xFFFFFFFFull) == 0xFFFFFFFFu);
  CHECK_FALSE(sge_length(1ull << 32).has_value()); // uint32_t(2^32) would be 0: the 4 GiB "transfer" in 4.28 us
  CHECK_FALSE(sge_length((1ull << 32) + 720).has_value());
  CHECK_FALSE(sge_length(~0ull).has_value());
  const std::string over = oversized_message("a WRITE", 2202009600ull);
  CHECK(over.find("2202009600") != std::string::npos);
  CHECK(over.find("2147483648") != std::string::npos);
  CHECK(sge_wraps("a READ", (1ull << 32) + 720).find("wrap to 720 bytes") != std::string::npos);
}
