// RC semantics of the simulated NIC: state machine and misuse, data movement (materialized bytes), immediate
// data, ordering, RNR, access errors and flushes, transport retries, memory watches.
#include "sim/simulation.hpp"
#include "test_cluster.hpp"

using namespace tp;
using namespace tp::verbs;
using tp::test::VerbsPair;
using tp::test::VerbsPairOptions;

TEST_CASE("post on a QP that is not in RTS is an error, after bring-up it is accepted", "[quick]")
{
  VerbsPair::Options o;
  o.connect = false;
  VerbsPair p(o);
  CHECK(p.qpa->state() == QpState::RESET);
  auto r = p.qpa->post_send(p.write(1, 0, 0, 8));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("RESET") != std::string::npos);
  CHECK_FALSE(p.qpb->post_recv(p.recv_b(1, 0, 8)).ok()); // RESET refuses receives
  QpAttr attr;
  attr.qp_state = QpState::INIT;
  attr.qp_access_flags = Access::REMOTE_WRITE;
  REQUIRE(p.qpa->modify(attr, RESET_TO_INIT_MASK).ok());
  CHECK_FALSE(p.qpa->post_send(p.write(2, 0, 0, 8)).ok()); // INIT refuses sends
  CHECK(p.qpb->modify(attr, RESET_TO_INIT_MASK).ok());
  CHECK(p.qpb->post_recv(p.recv_b(1, 0, 8)).ok()); // INIT accepts receives
  attr.qp_state = QpState::RTS;
  CHECK_FALSE(p.qpa->modify(attr, RTR_TO_RTS_MASK).ok()); // INIT -> RTS skips RTR
  CHECK(p.qpa->state() == QpState::INIT);
  p.sim->run();
  CHECK(p.wca.empty());
}

TEST_CASE("RDMA WRITE moves the right bytes and completes once, in order", "[quick]")
{
  VerbsPair p;
  p.fill_a(0, 5000, 3);
  p.fill_a(8192, 100, 99);
  REQUIRE(p.qpa->post_send(p.write(1, 0, 1000, 5000)).ok());
  REQUIRE(p.qpa->post_send(p.write(2, 8192, 20000, 100)).ok());
  p.sim->run();
  REQUIRE(p.wca.size() == 2);
  CHECK(p.wca[0].wr_id == 1);
  CHECK(p.wca[1].wr_id == 2);
  CHECK(p.wca[0].status == WcStatus::SUCCESS);
  CHECK(p.wca[0].opcode == WcOpcode::RDMA_WRITE);
  CHECK(p.b_matches(1000, 5000, 3));
  CHECK(p.b_matches(20000, 100, 99));
  CHECK(p.bufb.data[999] == 0);
  CHECK(p.bufb.data[6000] == 0);
  CHECK(p.wcb.empty()); // a plain WRITE consumes no receive and raises no completion at the target
}

TEST_CASE("RDMA READ fetches the remote bytes into the local buffer", "[quick]")
{
  VerbsPair p;
  for (int i = 0; i < 3000; ++i)
    p.bufb.data[500 + i] = uint8_t(i * 13 + 1);
  REQUIRE(p.qpa->post_send(p.read(7, 64, 500, 3000)).ok());
  p.sim->run();
  REQUIRE(p.wca.size() == 1);
  CHECK(p.wca[0].status == WcStatus::SUCCESS);
  CHECK(p.wca[0].opcode == WcOpcode::RDMA_READ);
  CHECK(p.wca[0].byte_len == 3000);
  bool same = true;
  for (int i = 0; i < 3000; ++i)
    same = same && p.bufa.data[64 + i] == uint8_t(i * 13 + 1);
  CHECK(same);
}

TEST_CASE("SEND with immediate lands in the posted receive with its length and immediate", "[quick]")
{
  VerbsPair p;
  p.fill_a(0, 777, 42);
  REQUIRE(p.qpb->post_recv(p.recv_b(55, 4096, 1000)).ok());
  REQUIRE(p.qpa->post_send(p.send(9, 0, 777, true, 0xC0FFEE)).ok());
  p.sim->run();
  REQUIRE(p.wcb.size() == 1);
  CHECK(p.wcb[0].wr_id == 55);
  CHECK(p.wcb[0].status == WcStatus::SUCCESS);
  CHECK(p.wcb[0].opcode == WcOpcode::RECV);
  CHECK(p.wcb[0].byte_len == 777);
  CHECK(p.wcb[0].with_imm);
  CHECK(p.wcb[0].imm_data == 0xC0FFEE);
  CHECK(p.b_matches(4096, 777, 42));
  REQUIRE(p.wca.size() == 1);
  CHECK(p.wca[0].opcode == WcOpcode::SEND);
}

TEST_CASE("Zero-length WRITE_WITH_IMM consumes a receive and carries only the immediate", "[quick]")
{
  VerbsPair p;
  REQUIRE(p.qpb->post_recv(p.recv_b(1, 0, 0)).ok()); // a receive with no buffer, as TF verbs posts
  REQUIRE(p.qpa->post_send(p.write(3, 0, 0, 0, true, 0xFFFFFFFE)).ok());
  p.sim->run();
  REQUIRE(p.wcb.size() == 1);
  CHECK(p.wcb[0].opcode == WcOpcode::RECV_RDMA_WITH_IMM);
  CHECK(p.wcb[0].byte_len == 0);
  CHECK(p.wcb[0].imm_data == 0xFFFFFFFE);
  REQUIRE(p.wca.size() == 1);
  CHECK(p.wca[0].status == WcStatus::SUCCESS);
}

TEST_CASE("Messages of one QP are delivered in order whatever their sizes", "[quick]")
{
  VerbsPair::Options o;
  o.buffer_bytes = 8 << 20;
  VerbsPair p(o);
  // Alternate large and tiny WRITE_WITH_IMM: the tiny ones must not overtake the large ones.
  const int n = 40;
  for (int i = 0; i < n; ++i)
    REQUIRE(p.qpb->post_recv(p.recv_b(1000 + i, 0, 0)).ok());
  for (int i = 0; i < n; ++i) {
    const uint32_t len = (i % 2 == 0) ? (1u << 20) : 8u;
    REQUIRE(p.qpa->post_send(p.write(i, 0, 0, len, true, uint32_t(i))).ok());
  }
  p.sim->run();
  REQUIRE(p.wcb.size() == size_t(n));
  REQUIRE(p.wca.size() == size_t(n));
  for (int i = 0; i < n; ++i) {
    CHECK(p.wcb[size_t(i)].imm_data == uint32_t(i));
    CHECK(p.wcb[size_t(i)].wr_id == uint64_t(1000 + i)); // receives are consumed in posting order
    CHECK(p.wca[size_t(i)].wr_id == uint64_t(i));
  }
  for (size_t i = 1; i < p.tb.size(); ++i)
    CHECK(p.tb[i] >= p.tb[i - 1]);
}

TEST_CASE("A WRITE followed by a SEND: the written bytes are in place when the SEND completes", "[quick]")
{
  VerbsPair p;
  p.fill_a(0, 65536, 5);
  REQUIRE(p.qpb->post_recv(p.recv_b(1, 200000, 16)).ok());
  bool seen_data = false;
  p.cqb->set_handler([&](const WorkCompletion& wc) {
    if (wc.opcode == WcOpcode::RECV) seen_data = p.b_matches(0, 65536, 5);
  });
  REQUIRE(p.qpa->post_send(p.write(1, 0, 0, 65536)).ok());
  REQUIRE(p.qpa->post_send(p.send(2, 70000, 16)).ok());
  p.sim->run();
  CHECK(seen_data);
}

TEST_CASE("No receive posted: RNR retries, then RNR_RETRY_EXC_ERR and the rest is flushed", "[quick]")
{
  VerbsPair::Options o;
  o.rc.rnr_retry = 2;
  o.rc.min_rnr_timer = 1; // 10 us
  VerbsPair p(o);
  REQUIRE(p.qpa->post_send(p.send(1, 0, 64)).ok());
  REQUIRE(p.qpa->post_send(p.write(2, 0, 0, 64)).ok());
  p.sim->run();
  REQUIRE(p.wca.size() == 2);
  CHECK(p.wca[0].wr_id == 1);
  CHECK(p.wca[0].status == WcStatus::RNR_RETRY_EXC_ERR);
  CHECK(p.wca[1].wr_id == 2);
  CHECK(p.wca[1].status == WcStatus::WR_FLUSH_ERR);
  CHECK(p.qpa->state() == QpState::ERR);
  // three attempts (first + 2 retries), each followed by the 10 us RNR wait except the last
  CHECK(p.ta[0] > 2 * 10e-6);
  CHECK(p.ta[0] < 3 * 10e-6 + 20e-6);
  // a post on an ERR QP completes flushed
  p.wca.clear();
  REQUIRE(p.qpa->post_send(p.write(3, 0, 0, 8)).ok());
  p.sim->run();
  REQUIRE(p.wca.size() == 1);
  CHECK(p.wca[0].status == WcStatus::WR_FLUSH_ERR);
}

TEST_CASE("With infinite RNR retry a late receive lets the SEND through", "[quick]")
{
  VerbsPair::Options o;
  o.rc.rnr_retry = 7;
  o.rc.min_rnr_timer = 1; // 10 us
  VerbsPair p(o);
  p.fill_a(0, 64, 1);
  REQUIRE(p.qpa->post_send(p.send(1, 0, 64)).ok());
  p.b->runtime().after(55e-6, [&] { REQUIRE(p.qpb->post_recv(p.recv_b(9, 0, 64)).ok()); });
  p.sim->run();
  REQUIRE(p.wca.size() == 1);
  CHECK(p.wca[0].status == WcStatus::SUCCESS);
  CHECK(p.ta[0] > 55e-6);
  REQUIRE(p.wcb.size() == 1);
  CHECK(p.b_matches(0, 64, 1));
}

TEST_CASE("Bad rkey gives REM_ACCESS_ERR then flushes the rest and errs the responder", "[quick]")
{
  VerbsPair p;
  auto w = p.write(1, 0, 0, 64);
  w.rkey ^= 0x00ABCD00;
  REQUIRE(p.qpa->post_send(w).ok());
  REQUIRE(p.qpa->post_send(p.write(2, 0, 0, 64)).ok());
  REQUIRE(p.qpa->post_send(p.write(3, 0, 0, 64)).ok());
  REQUIRE(p.qpb->post_recv(p.recv_b(77, 0, 64)).ok());
  p.sim->run();
  REQUIRE(p.wca.size() == 3);
  CHECK(p.wca[0].status == WcStatus::REM_ACCESS_ERR);
  CHECK(p.wca[1].status == WcStatus::WR_FLUSH_ERR);
  CHECK(p.wca[2].status == WcStatus::WR_FLUSH_ERR);
  CHECK(p.qpa->state() == QpState::ERR);
  CHECK(p.qpb->state() == QpState::ERR); // the responder errs too, flushing its receive
  REQUIRE(p.wcb.size() == 1);
  CHECK(p.wcb[0].status == WcStatus::WR_FLUSH_ERR);
  CHECK(p.bufb.data[0] == 0); // nothing written
}

TEST_CASE("An out-of-bounds WRITE gives REM_ACCESS_ERR and writes nothing", "[quick]")
{
  VerbsPair p;
  p.fill_a(0, 64, 9);
  REQUIRE(p.qpa->post_send(p.write(1, 0, p.bufb.size - 32, 64)).ok());
  p.sim->run();
  REQUIRE(p.wca.size() == 1);
  CHECK(p.wca[0].status == WcStatus::REM_ACCESS_ERR);
  CHECK(p.bufb.data[p.bufb.size - 1] == 0);
}

TEST_CASE("A READ of an MR without REMOTE_READ gives REM_ACCESS_ERR", "[quick]")
{
  VerbsPairOptions o;
  o.access_b = Access::LOCAL_WRITE | Access::REMOTE_WRITE;
  VerbsPair p(o);
  REQUIRE(p.qpa->post_send(p.read(1, 0, 0, 64)).ok());
  p.sim->run();
  REQUIRE(p.wca.size() == 1);
  CHECK(p.wca[0].status == WcStatus::REM_ACCESS_ERR);
}

TEST_CASE("Bad lkey is a local protection error", "[quick]")
{
  VerbsPair p;
  auto w = p.write(1, 0, 0, 64);
  w.sg_list[0].lkey += 1;
  REQUIRE(p.qpa->post_send(w).ok());
  p.sim->run();
  REQUIRE(p.wca.size() == 1);
  CHECK(p.wca[0].status == WcStatus::LOC_PROT_ERR);
  CHECK(p.qpa->state() == QpState::ERR);
}

TEST_CASE("A SEND larger than the receive buffer: REM_INV_REQ_ERR and LOC_LEN_ERR", "[quick]")
{
  VerbsPair p;
  REQUIRE(p.qpb->post_recv(p.recv_b(5, 0, 100)).ok());
  REQUIRE(p.qpa->post_send(p.send(1, 0, 200)).ok());
  p.sim->run();
  REQUIRE(p.wca.size() == 1);
  CHECK(p.wca[0].status == WcStatus::REM_INV_REQ_ERR);
  REQUIRE(p.wcb.size() >= 1);
  CHECK(p.wcb[0].wr_id == 5);
  CHECK(p.wcb[0].status == WcStatus::LOC_LEN_ERR);
}

TEST_CASE("A peer that never reaches RTR: transport retries, then RETRY_EXC_ERR", "[quick]")
{
  VerbsPair::Options o;
  o.connect = false;
  o.rc.timeout = 8;   // 4.096 us * 2^8 = 1.05 ms
  o.rc.retry_cnt = 2; // 3 attempts
  VerbsPair p(o);
  REQUIRE(bring_up_rc_qp(*p.qpa, 100, p.endpoint_b(), o.rc).ok()); // b stays in RESET
  REQUIRE(p.qpa->post_send(p.write(1, 0, 0, 64)).ok());
  p.sim->run();
  REQUIRE(p.wca.size() == 1);
  CHECK(p.wca[0].status == WcStatus::RETRY_EXC_ERR);
  const double t = ack_timeout_seconds(8);
  CHECK(p.ta[0] == Approx(3 * t).epsilon(0.01));
}

TEST_CASE("Moving a QP to ERR flushes posted receives and outstanding sends", "[quick]")
{
  VerbsPair p;
  REQUIRE(p.qpb->post_recv(p.recv_b(1, 0, 8)).ok());
  REQUIRE(p.qpb->post_recv(p.recv_b(2, 0, 8)).ok());
  QpAttr e;
  e.qp_state = QpState::ERR;
  REQUIRE(p.qpb->modify(e, QpAttrMask::STATE).ok());
  p.sim->run();
  REQUIRE(p.wcb.size() == 2);
  CHECK(p.wcb[0].wr_id == 1);
  CHECK(p.wcb[0].status == WcStatus::WR_FLUSH_ERR);
  CHECK(p.wcb[1].status == WcStatus::WR_FLUSH_ERR);
}

TEST_CASE("Unsignaled WRs complete silently, the signaled one after them reports", "[quick]")
{
  VerbsPair p;
  for (int i = 0; i < 5; ++i) {
    auto w = p.write(i, 0, 0, 64);
    w.signaled = (i == 4);
    REQUIRE(p.qpa->post_send(w).ok());
  }
  p.sim->run();
  REQUIRE(p.wca.size() == 1);
  CHECK(p.wca[0].wr_id == 4);
}

TEST_CASE("Memory watches fire when a WRITE lands, GPU buffers work like host buffers", "[quick]")
{
  VerbsPair::Options o;
  o.loc_b = Location::gpu(0);
  VerbsPair p(o);
  p.fill_a(0, 4096, 17);
  double fired = -1;
  REQUIRE(p.b->device().watch_memory(p.bufb.addr + 4095, 1, [&] { fired = p.b->runtime().now(); }).ok());
  REQUIRE(p.qpa->post_send(p.write(1, 0, 0, 4096)).ok());
  p.sim->run();
  CHECK(fired > 0);
  CHECK(fired < p.ta.at(0)); // data is visible before the requester sees the ACK's completion
  CHECK(p.b_matches(0, 4096, 17));
}

TEST_CASE("reg_mr refuses unallocated memory and REMOTE_WRITE without LOCAL_WRITE", "[quick]")
{
  VerbsPair p;
  CHECK_FALSE(p.a->device().reg_mr(0x1234, 10, Access::LOCAL_WRITE).ok());
  CHECK_FALSE(p.a->device().reg_mr(p.bufa.addr, 100, Access::REMOTE_WRITE).ok());
  CHECK_FALSE(p.a->device().reg_mr(p.bufa.addr, p.bufa.size + 4096 * 4, Access::LOCAL_WRITE).ok());
  auto mr = p.a->device().reg_mr(p.bufa.addr, 100, Access::LOCAL_WRITE);
  REQUIRE(mr.ok());
  CHECK(p.a->device().dereg_mr(mr.value()).ok());
  CHECK_FALSE(p.a->device().dereg_mr(mr.value()).ok());
}

TEST_CASE("A deregistered MR's rkey is refused by the responder", "[quick]")
{
  VerbsPair p;
  REQUIRE(p.b->device().dereg_mr(p.mrb).ok());
  REQUIRE(p.qpa->post_send(p.write(1, 0, 0, 8)).ok());
  p.sim->run();
  REQUIRE(p.wca.size() == 1);
  CHECK(p.wca[0].status == WcStatus::REM_ACCESS_ERR);
}
