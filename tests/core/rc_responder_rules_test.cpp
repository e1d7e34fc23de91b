// The RC responder's rules (core/device/rc_responder_rules.hpp), without a device: each verdict, the order in which
// the checks apply, and what the device is told to do with the receive WR and the QP.
#include "core/device/rc_responder_rules.hpp"

#include <catch2/catch.hpp>

using namespace tp::verbs;

namespace {

struct Responder {
  MrTable mrs;
  MemoryRegion target = mrs.add(0x10000, 4096, Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ);
  MemoryRegion read_only = mrs.add(0x20000, 4096, Access::REMOTE_READ);
  RecvWr recv{7, {Sge{0x10000, 256, target.lkey}}};
  ResponderSide side()
  {
    ResponderSide s;
    s.state = QpState::RTS;
    s.qp_access_flags = Access::REMOTE_WRITE | Access::REMOTE_READ;
    s.next_recv = &recv;
    s.mrs = &mrs;
    return s;
  }
};

IncomingRequest request(WrOpcode op, uint64_t len, uint32_t rkey = 0, uint64_t addr = 0)
{
  return IncomingRequest{op, len, rkey, addr};
}

} // namespace

TEST_CASE("RC responder rules: a QP that is not RTR/RTS or a request out of sequence gets no answer", "[quick]")
{
  Responder r;
  for (QpState s : {QpState::RESET, QpState::INIT, QpState::ERR, QpState::SQE}) {
    ResponderSide side = r.side();
    side.state = s;
    const auto d = rc_responder_decide(request(WrOpcode::SEND, 8), side);
    CHECK(d.verdict == ResponderVerdict::NOT_READY);
    CHECK_FALSE(d.takes_recv);
    CHECK_FALSE(d.qp_to_error);
  }
  ResponderSide side = r.side();
  side.state = QpState::RTR;
  CHECK(rc_responder_decide(request(WrOpcode::SEND, 8), side).verdict == ResponderVerdict::ACK);
  side.in_sequence = false;
  CHECK(rc_responder_decide(request(WrOpcode::SEND, 8), side).verdict == ResponderVerdict::NOT_READY);
}

TEST_CASE("RC responder rules: rkey, bounds, MR access and QP access flags refuse with REM_ACCESS and ERR", "[quick]")
{
  Responder r;
  const auto ok = rc_responder_decide(request(WrOpcode::RDMA_WRITE, 4096, r.target.rkey, 0x10000), r.side());
  CHECK(ok.verdict == ResponderVerdict::ACK);
  CHECK_FALSE(ok.takes_recv); // a plain WRITE leaves the receive queue alone
  const auto bad_key = rc_responder_decide(request(WrOpcode::RDMA_WRITE, 8, r.target.rkey ^ 0x5A00, 0x10000), r.side());
  CHECK(bad_key.verdict == ResponderVerdict::REM_ACCESS);
  CHECK(bad_key.qp_to_error);
  CHECK_FALSE(bad_key.takes_recv);
  CHECK(rc_responder_decide(request(WrOpcode::RDMA_READ, 4097, r.target.rkey, 0x10000), r.side()).verdict ==
        ResponderVerdict::REM_ACCESS); // one byte past the MR
  CHECK(rc_responder_decide(request(WrOpcode::RDMA_WRITE, 8, r.read_only.rkey, 0x20000), r.side()).verdict ==
        ResponderVerdict::REM_ACCESS); // the MR grants READ only
  CHECK(rc_responder_decide(request(WrOpcode::RDMA_READ, 8, r.read_only.rkey, 0x20000), r.side()).verdict ==
        ResponderVerdict::ACK);
  ResponderSide write_only = r.side();
  write_only.qp_access_flags = Access::REMOTE_WRITE;
  CHECK(rc_responder_decide(request(WrOpcode::RDMA_READ, 8, r.target.rkey, 0x10000), write_only).verdict ==
        ResponderVerdict::REM_ACCESS); // the QP does not accept READs
  // A zero-length RDMA is not checked at all (IB spec 9.7.5.1.4), even on a QP without access flags.
  ResponderSide none = r.side();
  none.qp_access_flags = Access::NONE;
  CHECK(rc_responder_decide(request(WrOpcode::RDMA_WRITE, 0, 0xDEAD, 0), none).verdict == ResponderVerdict::ACK);
  // Access is checked before the receive queue: a bad WRITE_WITH_IMM with no receive WR is REM_ACCESS, not RNR.
  ResponderSide empty = r.side();
  empty.next_recv = nullptr;
  CHECK(rc_responder_decide(request(WrOpcode::RDMA_WRITE_WITH_IMM, 8, 0xDEAD, 0x10000), empty).verdict ==
        ResponderVerdict::REM_ACCESS);
}

TEST_CASE("RC responder rules: SEND and WRITE_WITH_IMM take the receive WR, RNR without one", "[quick]")
{
  Responder r;
  ResponderSide empty = r.side();
  empty.next_recv = nullptr;
  for (WrOpcode op : {WrOpcode::SEND, WrOpcode::SEND_WITH_IMM}) {
    const auto rnr = rc_responder_decide(request(op, 8), empty);
    CHECK(rnr.verdict == ResponderVerdict::RNR);
    CHECK_FALSE(rnr.qp_to_error);
    CHECK_FALSE(rnr.takes_recv);
    const auto ack = rc_responder_decide(request(op, 256), r.side());
    CHECK(ack.verdict == ResponderVerdict::ACK);
    CHECK(ack.takes_recv);
    CHECK(ack.recv_error == WcStatus::SUCCESS);
  }
  CHECK(rc_responder_decide(request(WrOpcode::RDMA_WRITE_WITH_IMM, 8, r.target.rkey, 0x10000), empty).verdict ==
        ResponderVerdict::RNR);
  CHECK(rc_responder_decide(request(WrOpcode::RDMA_WRITE_WITH_IMM, 8, r.target.rkey, 0x10000), r.side()).takes_recv);
  // A READ never needs a receive WR.
  CHECK(rc_responder_decide(request(WrOpcode::RDMA_READ, 8, r.target.rkey, 0x10000), empty).verdict ==
        ResponderVerdict::ACK);
}

TEST_CASE("RC responder rules: a SEND that does not fit its receive WR fails it and the QP", "[quick]")
{
  Responder r;
  const auto too_long = rc_responder_decide(request(WrOpcode::SEND, 257), r.side());
  CHECK(too_long.verdict == ResponderVerdict::REM_INV_REQ);
  CHECK(too_long.takes_recv);
  CHECK(too_long.recv_error == WcStatus::LOC_LEN_ERR);
  CHECK(too_long.qp_to_error);
  RecvWr unwritable{8, {Sge{0x20000, 256, r.read_only.lkey}}}; // no LOCAL_WRITE
  ResponderSide side = r.side();
  side.next_recv = &unwritable;
  const auto bad_buffer = rc_responder_decide(request(WrOpcode::SEND, 8), side);
  CHECK(bad_buffer.verdict == ResponderVerdict::REM_OP);
  CHECK(bad_buffer.recv_error == WcStatus::LOC_PROT_ERR);
  CHECK(bad_buffer.qp_to_error);
  // The length is checked first; a WRITE_WITH_IMM's data goes to the MR, not to the receive WR's buffers.
  CHECK(rc_responder_decide(request(WrOpcode::SEND, 4096), side).verdict == ResponderVerdict::REM_INV_REQ);
  CHECK(rc_responder_decide(request(WrOpcode::RDMA_WRITE_WITH_IMM, 4096, r.target.rkey, 0x10000), side).verdict ==
        ResponderVerdict::ACK);
}

TEST_CASE("RC responder rules: the requester's completion status for each verdict", "[quick]")
{
  CHECK(requester_status(ResponderVerdict::ACK) == WcStatus::SUCCESS);
  CHECK(requester_status(ResponderVerdict::REM_ACCESS) == WcStatus::REM_ACCESS_ERR);
  CHECK(requester_status(ResponderVerdict::REM_INV_REQ) == WcStatus::REM_INV_REQ_ERR);
  CHECK(requester_status(ResponderVerdict::REM_OP) == WcStatus::REM_OP_ERR);
  CHECK(requester_status(ResponderVerdict::RNR) == WcStatus::GENERAL_ERR);
  CHECK(std::string(to_string(ResponderVerdict::REM_INV_REQ)) == "REM_INV_REQ");
}
