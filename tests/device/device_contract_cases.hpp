// The device contract suite: RC semantics every verbs device of this project must show (core/device/device.hpp),
// written once against the fixture interface of tests/device/device_pair.hpp. State machine and misuse, data
// movement, immediate data, ordering, RNR, access errors and flushes, transport retries, memory watches.
// An instantiation defines DEVICE_UNDER_TEST (the case name prefix), DEVICE_TAGS (extra Catch2 tags) and
// make_device_pair(), then includes this file once: every case becomes its own test case, so its own ctest entry
// and its own process (CONTRIBUTING.md). A backend without a device (error code "Unavailable") makes each case say
// "skipped: <why>"; a case a backend cannot show says "not applicable on <backend>: <why>".
// Instantiations: tests/device/sim_contract_test.cpp, tests/device/soft_threads_contract_test.cpp,
// tests/device/soft_processes_contract_test.cpp, tests/device/ibv_contract_test.cpp.
#pragma once

#include "tests/device/device_pair.hpp"

#include <catch2/catch.hpp>

#include <memory>

namespace tp::test {
namespace { // one instantiation per translation unit: each has its own make_device_pair()

/// Defined by each instantiation, before it includes this file: the pair, or an "Unavailable" error naming why this
/// machine has no such device.
Result<std::unique_ptr<DevicePair>> make_device_pair(const PairOptions& options);

std::unique_ptr<DevicePair> contract_pair(const PairOptions& options = PairOptions())
{
  auto p = make_device_pair(options);
  if (!p.ok() && p.error().code == "Unavailable") {
    WARN("skipped: " << p.error().message());
    return nullptr;
  }
  REQUIRE(p.ok());
  return std::move(p.value());
}

/// True (and the case says why) when the backend cannot show `need`.
bool not_applicable(const DevicePair& p, Need need)
{
  const char* why = p.lacks(need);
  if (why) WARN("not applicable on " << p.backend << ": " << why);
  return why != nullptr;
}

} // namespace
} // namespace tp::test

#define DEVICE_CONTRACT_CASE(name) TEST_CASE(DEVICE_UNDER_TEST ": " name, "[device-contract]" DEVICE_TAGS)

namespace tp::test::contract {
namespace {
using namespace tp::verbs;
using tp::test::End;

DEVICE_CONTRACT_CASE("post on a QP that is not in RTS is an error, after bring-up it is accepted")
{
  PairOptions o;
  o.connect = false;
  auto p = contract_pair(o);
  if (!p) return;
  CHECK(p->state(End::A) == QpState::RESET);
  auto r = p->post_send(End::A, p->write(1, 0, 0, 8));
  REQUIRE_FALSE(r.ok());
  if (!p->lacks(Need::STATE_NAMED_ERRORS)) CHECK(r.error().message().find("RESET") != std::string::npos);
  CHECK_FALSE(p->post_recv(End::B, p->recv_b(1, 0, 8)).ok()); // RESET refuses receives
  QpAttr attr;
  attr.qp_state = QpState::INIT;
  attr.qp_access_flags = Access::REMOTE_WRITE;
  REQUIRE(p->modify(End::A, attr, RESET_TO_INIT_MASK).ok());
  CHECK_FALSE(p->post_send(End::A, p->write(2, 0, 0, 8)).ok()); // INIT refuses sends
  CHECK(p->modify(End::B, attr, RESET_TO_INIT_MASK).ok());
  CHECK(p->post_recv(End::B, p->recv_b(1, 0, 8)).ok()); // INIT accepts receives
  attr.qp_state = QpState::RTS;
  CHECK_FALSE(p->modify(End::A, attr, RTR_TO_RTS_MASK).ok()); // INIT -> RTS skips RTR
  CHECK(p->state(End::A) == QpState::INIT);
  p->run();
  CHECK(p->wca.empty());
}

DEVICE_CONTRACT_CASE("RDMA WRITE moves the right bytes and completes once, in order")
{
  auto p = contract_pair();
  if (!p) return;
  p->fill_a(0, 5000, 3);
  p->fill_a(8192, 100, 99);
  REQUIRE(p->post_send(End::A, p->write(1, 0, 1000, 5000)).ok());
  REQUIRE(p->post_send(End::A, p->write(2, 8192, 20000, 100)).ok());
  p->run(2);
  REQUIRE(p->wca.size() == 2);
  CHECK(p->wca[0].wr_id == 1);
  CHECK(p->wca[1].wr_id == 2);
  CHECK(p->wca[0].status == WcStatus::SUCCESS);
  CHECK(p->wca[0].opcode == WcOpcode::RDMA_WRITE);
  CHECK(p->b_matches(1000, 5000, 3));
  CHECK(p->b_matches(20000, 100, 99));
  CHECK(p->data[1][999] == 0);
  CHECK(p->data[1][6000] == 0);
  CHECK(p->wcb.empty()); // a plain WRITE consumes no receive and raises no completion at the target
}

DEVICE_CONTRACT_CASE("RDMA READ fetches the remote bytes into the local buffer")
{
  auto p = contract_pair();
  if (!p) return;
  for (int i = 0; i < 3000; ++i)
    p->data[1][500 + i] = uint8_t(i * 13 + 1);
  REQUIRE(p->post_send(End::A, p->read(7, 64, 500, 3000)).ok());
  p->run(1);
  REQUIRE(p->wca.size() == 1);
  CHECK(p->wca[0].status == WcStatus::SUCCESS);
  CHECK(p->wca[0].opcode == WcOpcode::RDMA_READ);
  CHECK(p->wca[0].byte_len == 3000);
  bool same = true;
  for (int i = 0; i < 3000; ++i)
    same = same && p->data[0][64 + i] == uint8_t(i * 13 + 1);
  CHECK(same);
}

DEVICE_CONTRACT_CASE("SEND with immediate lands in the posted receive with its length and immediate")
{
  auto p = contract_pair();
  if (!p) return;
  p->fill_a(0, 777, 42);
  REQUIRE(p->post_recv(End::B, p->recv_b(55, 4096, 1000)).ok());
  REQUIRE(p->post_send(End::A, p->send(9, 0, 777, true, 0xC0FFEE)).ok());
  p->run(1, 1);
  REQUIRE(p->wcb.size() == 1);
  CHECK(p->wcb[0].wr_id == 55);
  CHECK(p->wcb[0].status == WcStatus::SUCCESS);
  CHECK(p->wcb[0].opcode == WcOpcode::RECV);
  CHECK(p->wcb[0].byte_len == 777);
  CHECK(p->wcb[0].with_imm);
  CHECK(p->wcb[0].imm_data == 0xC0FFEE);
  CHECK(p->b_matches(4096, 777, 42));
  REQUIRE(p->wca.size() == 1);
  CHECK(p->wca[0].opcode == WcOpcode::SEND);
}

DEVICE_CONTRACT_CASE("Zero-length WRITE_WITH_IMM consumes a receive and carries only the immediate")
{
  auto p = contract_pair();
  if (!p) return;
  REQUIRE(p->post_recv(End::B, p->recv_b(1, 0, 0)).ok()); // a receive with no buffer, as TF verbs posts
  REQUIRE(p->post_send(End::A, p->write(3, 0, 0, 0, true, 0xFFFFFFFE)).ok());
  p->run(1, 1);
  REQUIRE(p->wcb.size() == 1);
  CHECK(p->wcb[0].opcode == WcOpcode::RECV_RDMA_WITH_IMM);
  CHECK(p->wcb[0].byte_len == 0);
  CHECK(p->wcb[0].imm_data == 0xFFFFFFFE);
  REQUIRE(p->wca.size() == 1);
  CHECK(p->wca[0].status == WcStatus::SUCCESS);
}

DEVICE_CONTRACT_CASE("Messages of one QP are delivered in order whatever their sizes")
{
  PairOptions o;
  o.buffer_bytes = 8 << 20;
  auto p = contract_pair(o);
  if (!p) return;
  // Alternate large and tiny WRITE_WITH_IMM: the tiny ones must not overtake the large ones.
  const int n = 40;
  for (int i = 0; i < n; ++i)
    REQUIRE(p->post_recv(End::B, p->recv_b(1000 + i, 0, 0)).ok());
  for (int i = 0; i < n; ++i) {
    const uint32_t len = (i % 2 == 0) ? (1u << 20) : 8u;
    REQUIRE(p->post_send(End::A, p->write(i, 0, 0, len, true, uint32_t(i))).ok());
  }
  p->run(n, n);
  REQUIRE(p->wcb.size() == size_t(n));
  REQUIRE(p->wca.size() == size_t(n));
  for (int i = 0; i < n; ++i) {
    CHECK(p->wcb[size_t(i)].imm_data == uint32_t(i));
    CHECK(p->wcb[size_t(i)].wr_id == uint64_t(1000 + i)); // receives are consumed in posting order
    CHECK(p->wca[size_t(i)].wr_id == uint64_t(i));
  }
  for (size_t i = 1; i < p->tb.size(); ++i)
    CHECK(p->tb[i] >= p->tb[i - 1]);
}

DEVICE_CONTRACT_CASE("A WRITE followed by a SEND: the written bytes are in place when the SEND completes")
{
  auto p = contract_pair();
  if (!p) return;
  p->fill_a(0, 65536, 5);
  std::vector<uint8_t> expected(65536);
  for (uint64_t i = 0; i < expected.size(); ++i)
    expected[i] = DevicePair::pattern(i, 5);
  p->hash_at_completion(End::B, 0, 65536);
  REQUIRE(p->post_recv(End::B, p->recv_b(1, 200000, 16)).ok());
  REQUIRE(p->post_send(End::A, p->write(1, 0, 0, 65536)).ok());
  REQUIRE(p->post_send(End::A, p->send(2, 70000, 16)).ok());
  p->run(2, 1);
  REQUIRE(p->wcb.size() == 1);
  CHECK(p->wcb[0].opcode == WcOpcode::RECV);
  CHECK(p->hb.at(0) == DevicePair::hash(expected.data(), expected.size())); // as the RECV was delivered
}

DEVICE_CONTRACT_CASE("No receive posted: RNR retries, then RNR_RETRY_EXC_ERR and the rest is flushed")
{
  PairOptions o;
  o.rc.rnr_retry = 2;
  o.rc.min_rnr_timer = 1; // 10 us
  auto p = contract_pair(o);
  if (!p) return;
  REQUIRE(p->post_send(End::A, p->send(1, 0, 64)).ok());
  REQUIRE(p->post_send(End::A, p->write(2, 0, 0, 64)).ok());
  p->run(2);
  REQUIRE(p->wca.size() == 2);
  CHECK(p->wca[0].wr_id == 1);
  CHECK(p->wca[0].status == WcStatus::RNR_RETRY_EXC_ERR);
  CHECK(p->wca[1].wr_id == 2);
  CHECK(p->wca[1].status == WcStatus::WR_FLUSH_ERR);
  CHECK(p->state(End::A) == QpState::ERR);
  // three attempts (first + 2 retries), each followed by the 10 us RNR wait except the last
  CHECK(p->ta[0] > 2 * 10e-6);
  if (!p->lacks(Need::SIMULATED_CLOCK)) CHECK(p->ta[0] < 3 * 10e-6 + 20e-6);
  // a post on an ERR QP completes flushed
  REQUIRE(p->post_send(End::A, p->write(3, 0, 0, 8)).ok());
  p->run(3);
  REQUIRE(p->wca.size() == 3);
  CHECK(p->wca[2].status == WcStatus::WR_FLUSH_ERR);
}

DEVICE_CONTRACT_CASE("With infinite RNR retry a late receive lets the SEND through")
{
  PairOptions o;
  o.rc.rnr_retry = 7;
  o.rc.min_rnr_timer = 1; // 10 us
  auto p = contract_pair(o);
  if (!p) return;
  p->fill_a(0, 64, 1);
  REQUIRE(p->post_send(End::A, p->send(1, 0, 64)).ok());
  REQUIRE(p->post_recv_after(End::B, 55e-6, p->recv_b(9, 0, 64)).ok());
  p->run(1, 1);
  REQUIRE(p->wca.size() == 1);
  CHECK(p->wca[0].status == WcStatus::SUCCESS);
  CHECK(p->ta[0] > 55e-6);
  REQUIRE(p->wcb.size() == 1);
  CHECK(p->b_matches(0, 64, 1));
}

DEVICE_CONTRACT_CASE("Bad rkey gives REM_ACCESS_ERR then flushes the rest and errs the responder")
{
  auto p = contract_pair();
  if (!p) return;
  auto w = p->write(1, 0, 0, 64);
  w.rkey ^= 0x00ABCD00;
  p->fill_a(0, 64, 1);
  REQUIRE(p->post_send(End::A, w).ok());
  REQUIRE(p->post_send(End::A, p->write(2, 0, 0, 64)).ok());
  REQUIRE(p->post_send(End::A, p->write(3, 0, 0, 64)).ok());
  REQUIRE(p->post_recv(End::B, p->recv_b(77, 0, 64)).ok());
  p->run(3, 1);
  REQUIRE(p->wca.size() == 3);
  CHECK(p->wca[0].status == WcStatus::REM_ACCESS_ERR);
  CHECK(p->wca[1].status == WcStatus::WR_FLUSH_ERR);
  CHECK(p->wca[2].status == WcStatus::WR_FLUSH_ERR);
  CHECK(p->state(End::A) == QpState::ERR);
  CHECK(p->state(End::B) == QpState::ERR); // the responder errs too, flushing its receive
  REQUIRE(p->wcb.size() == 1);
  CHECK(p->wcb[0].status == WcStatus::WR_FLUSH_ERR);
  CHECK(p->data[1][0] == 0); // nothing written
}

DEVICE_CONTRACT_CASE("An out-of-bounds WRITE gives REM_ACCESS_ERR and writes nothing")
{
  auto p = contract_pair();
  if (!p) return;
  p->fill_a(0, 64, 9);
  REQUIRE(p->post_send(End::A, p->write(1, 0, p->size - 32, 64)).ok());
  p->run(1);
  REQUIRE(p->wca.size() == 1);
  CHECK(p->wca[0].status == WcStatus::REM_ACCESS_ERR);
  CHECK(p->data[1][p->size - 1] == 0);
}

DEVICE_CONTRACT_CASE("A READ of an MR without REMOTE_READ gives REM_ACCESS_ERR")
{
  PairOptions o;
  o.access_b = Access::LOCAL_WRITE | Access::REMOTE_WRITE;
  auto p = contract_pair(o);
  if (!p) return;
  REQUIRE(p->post_send(End::A, p->read(1, 0, 0, 64)).ok());
  p->run(1);
  REQUIRE(p->wca.size() == 1);
  CHECK(p->wca[0].status == WcStatus::REM_ACCESS_ERR);
}

DEVICE_CONTRACT_CASE("Bad lkey is a local protection error")
{
  auto p = contract_pair();
  if (!p) return;
  auto w = p->write(1, 0, 0, 64);
  w.sg_list[0].lkey += 1;
  REQUIRE(p->post_send(End::A, w).ok());
  p->run(1);
  REQUIRE(p->wca.size() == 1);
  CHECK(p->wca[0].status == WcStatus::LOC_PROT_ERR);
  CHECK(p->state(End::A) == QpState::ERR);
}

DEVICE_CONTRACT_CASE("A SEND larger than the receive buffer: REM_INV_REQ_ERR and LOC_LEN_ERR")
{
  auto p = contract_pair();
  if (!p) return;
  REQUIRE(p->post_recv(End::B, p->recv_b(5, 0, 100)).ok());
  REQUIRE(p->post_send(End::A, p->send(1, 0, 200)).ok());
  p->run(1, 1);
  REQUIRE(p->wca.size() == 1);
  CHECK(p->wca[0].status == WcStatus::REM_INV_REQ_ERR);
  REQUIRE(p->wcb.size() >= 1);
  CHECK(p->wcb[0].wr_id == 5);
  CHECK(p->wcb[0].status == WcStatus::LOC_LEN_ERR);
}

DEVICE_CONTRACT_CASE("A peer that never reaches RTR: transport retries, then RETRY_EXC_ERR")
{
  PairOptions o;
  o.connect = false;
  o.rc.timeout = 8;   // 4.096 us * 2^8 = 1.05 ms
  o.rc.retry_cnt = 2; // 3 attempts
  auto p = contract_pair(o);
  if (!p) return;
  REQUIRE(p->bring_up(End::A, o.rc).ok()); // B stays in RESET
  REQUIRE(p->post_send(End::A, p->write(1, 0, 0, 64)).ok());
  p->run(1);
  REQUIRE(p->wca.size() == 1);
  CHECK(p->wca[0].status == WcStatus::RETRY_EXC_ERR);
  const double t = ack_timeout_seconds(8);
  if (!p->lacks(Need::SIMULATED_CLOCK))
    CHECK(p->ta[0] == Approx(3 * t).epsilon(0.01));
  else
    CHECK(p->ta[0] > 2 * t); // the ACK timeouts were waited out
}

DEVICE_CONTRACT_CASE("Moving a QP to ERR flushes posted receives and outstanding sends")
{
  auto p = contract_pair();
  if (!p) return;
  REQUIRE(p->post_recv(End::B, p->recv_b(1, 0, 8)).ok());
  REQUIRE(p->post_recv(End::B, p->recv_b(2, 0, 8)).ok());
  QpAttr e;
  e.qp_state = QpState::ERR;
  REQUIRE(p->modify(End::B, e, QpAttrMask::STATE).ok());
  p->run(0, 2);
  REQUIRE(p->wcb.size() == 2);
  CHECK(p->wcb[0].wr_id == 1);
  CHECK(p->wcb[0].status == WcStatus::WR_FLUSH_ERR);
  CHECK(p->wcb[1].status == WcStatus::WR_FLUSH_ERR);
}

DEVICE_CONTRACT_CASE("Unsignaled WRs complete silently, the signaled one after them reports")
{
  auto p = contract_pair();
  if (!p) return;
  for (int i = 0; i < 5; ++i) {
    auto w = p->write(i, 0, 0, 64);
    w.signaled = (i == 4);
    REQUIRE(p->post_send(End::A, w).ok());
  }
  p->run(1);
  REQUIRE(p->wca.size() == 1);
  CHECK(p->wca[0].wr_id == 4);
}

DEVICE_CONTRACT_CASE("Memory watches fire when a WRITE lands, GPU buffers work like host buffers")
{
  PairOptions o;
  o.loc_b = Location::gpu(0);
  auto p = contract_pair(o);
  if (!p || not_applicable(*p, Need::MEMORY_WATCH)) return;
  p->fill_a(0, 4096, 17);
  REQUIRE(p->watch_memory(End::B, p->addr[1] + 4095, 1).ok());
  REQUIRE(p->post_send(End::A, p->write(1, 0, 0, 4096)).ok());
  p->run(1);
  REQUIRE(p->wca.size() == 1);
  const double fired = p->watch_fired_at();
  CHECK(fired > 0);
  // On a simulated clock the watch fires as the data lands, before the ACK reaches the requester. On a wall clock
  // the two are callbacks on two different threads (B's loop and A's loop), and which of them the scheduler runs
  // first is no property of the device (as for a CPU spinning on memory and another polling a CQ).
  if (!p->lacks(Need::SIMULATED_CLOCK)) CHECK(fired <= p->ta.at(0));
  CHECK(p->b_matches(0, 4096, 17));
}

DEVICE_CONTRACT_CASE("reg_mr refuses unallocated memory and REMOTE_WRITE without LOCAL_WRITE")
{
  auto p = contract_pair();
  if (!p) return;
  CHECK_FALSE(p->reg_mr(End::A, 0x1234, 10, Access::LOCAL_WRITE).ok());
  CHECK_FALSE(p->reg_mr(End::A, p->addr[0], 100, Access::REMOTE_WRITE).ok());
  if (!not_applicable(*p, Need::ALLOCATION_BOUNDS))
    CHECK_FALSE(p->reg_mr(End::A, p->addr[0], p->size + 4096 * 4, Access::LOCAL_WRITE).ok());
  auto mr = p->reg_mr(End::A, p->addr[0], 100, Access::LOCAL_WRITE);
  REQUIRE(mr.ok());
  CHECK(p->dereg_mr(End::A, mr.value()).ok());
  CHECK_FALSE(p->dereg_mr(End::A, mr.value()).ok());
}

DEVICE_CONTRACT_CASE("A deregistered MR's rkey is refused by the responder")
{
  auto p = contract_pair();
  if (!p) return;
  REQUIRE(p->dereg_mr(End::B, p->mr[1]).ok());
  REQUIRE(p->post_send(End::A, p->write(1, 0, 0, 8)).ok());
  p->run(1);
  REQUIRE(p->wca.size() == 1);
  CHECK(p->wca[0].status == WcStatus::REM_ACCESS_ERR);
}

} // namespace
} // namespace tp::test::contract
