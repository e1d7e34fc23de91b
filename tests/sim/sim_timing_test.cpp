// Simulated times against the closed form of the model (docs/model.md), recomputed here from the profile
// numbers: uncontended operations must match within 1 %; flows sharing a link share its bandwidth;
// cross-socket transfers are slower by the model's bandwidth ratio.
#include "core/microbench/copy_bench.hpp"
#include "sim/simulation.hpp"
#include "test_cluster.hpp"

#include <algorithm>

using namespace tp;
using namespace tp::verbs;
using tp::test::VerbsPair;

namespace {

/// The closed form, written out from the profile (not from the simulator's code).
struct ClosedForm {
  models::HostProfile h = test::test_host();
  double switch_latency = 100e-9;

  const models::CpuProfile& cpu() const { return h.sockets[0].cpu; }
  const models::NicProfile& nic() const { return h.nics[0].nic; }
  double pcie_read_bw() const { return h.nics[0].pcie.read_completion_bandwidth(cpu().read_completion_size); }
  double pcie_write_bw() const { return h.nics[0].pcie.posted_write_bandwidth(); }
  double wire() const
  {
    return nic().tx_pipeline_latency + nic().port_latency + switch_latency + nic().port_latency +
           nic().rx_pipeline_latency;
  }
  double extra(uint64_t n, bool rdma, bool imm) const
  {
    return (nic().wire_bytes(n, rdma, imm) - double(n) / nic().payload_efficiency()) / nic().line_rate;
  }
  /// Time at which the requester's WRITE/SEND completion is delivered (post at t = 0).
  double write_completion(uint64_t n, double bottleneck, double fetch_extra = 0, bool rdma = true) const
  {
    const double ready = cpu().post_overhead + cpu().mmio_write_latency + cpu().dma_read_latency; // doorbell, WQE fetch
    const double inject = ready + (n ? cpu().dma_read_latency + fetch_extra : 0.0);
    const double received = inject + double(n) / bottleneck + wire() + extra(n, rdma, false);
    const double ack = received + wire() + nic().ack_packet_bytes / nic().line_rate;
    return ack + cpu().posted_write_latency + cpu().completion_overhead;
  }
  double read_completion(uint64_t n, double bottleneck) const
  {
    const double ready = cpu().post_overhead + cpu().mmio_write_latency + cpu().dma_read_latency;
    const double at_responder = ready + wire() + (nic().ack_packet_bytes + nic().rdma_header_bytes) / nic().line_rate;
    const double inject = at_responder + (n ? cpu().dma_read_latency : 0.0);
    const double arrival =
        inject + double(n) / bottleneck + wire() + extra(n, false, false) + cpu().posted_write_latency;
    return arrival + cpu().completion_overhead;
  }
  double bottleneck() const { return std::min({pcie_read_bw(), nic().wire_goodput(), pcie_write_bw()}); }
};

} // namespace

TEST_CASE("Uncontended RDMA WRITE completes at the closed-form time (within 1 %)", "[quick]")
{
  VerbsPair::Options o;
  o.materialize = false;
  o.buffer_bytes = 64 << 20;
  VerbsPair p(o);
  ClosedForm cf;
  // One simulation per process: the sizes run one after the other, each on an idle fabric.
  for (uint64_t n : {0ull, 1ull, 4096ull, 1ull << 20, 16ull << 20}) {
    const double t0 = p.sim->now();
    p.wca.clear();
    p.ta.clear();
    REQUIRE(p.qpa->post_send(p.write(1, 0, 0, uint32_t(n))).ok());
    p.sim->run();
    REQUIRE(p.wca.size() == 1);
    CHECK(p.wca[0].status == WcStatus::SUCCESS);
    const double expect = cf.write_completion(n, cf.bottleneck());
    INFO("n = " << n << " simulated " << p.ta[0] - t0 << " closed form " << expect);
    CHECK(p.ta[0] - t0 == Approx(expect).epsilon(0.01));
  }
}

TEST_CASE("Uncontended RDMA READ completes at the closed-form time (within 1 %)", "[quick]")
{
  VerbsPair::Options o;
  o.materialize = false;
  o.buffer_bytes = 64 << 20;
  VerbsPair p(o);
  ClosedForm cf;
  for (uint64_t n : {8ull, 65536ull, 16ull << 20}) {
    const double t0 = p.sim->now();
    p.wca.clear();
    p.ta.clear();
    REQUIRE(p.qpa->post_send(p.read(1, 0, 0, uint32_t(n))).ok());
    p.sim->run();
    REQUIRE(p.wca.size() == 1);
    const double expect = cf.read_completion(n, cf.bottleneck());
    INFO("n = " << n << " simulated " << p.ta[0] - t0 << " closed form " << expect);
    CHECK(p.ta[0] - t0 == Approx(expect).epsilon(0.01));
  }
}

TEST_CASE("Two READs on one QP: the responses stream one after the other in request order", "[quick]")
{
  // RC: a responder returns the responses of one QP in PSN order, one READ after the other (IBTA vol. 1, 9.5
  // "Transaction ordering"). Streaming them side by side gave a message read in more chunks at once more of the
  // link (issue 13: a faster NIC slowed AR-gRPC steps).
  VerbsPair::Options o;
  o.materialize = false;
  o.buffer_bytes = 64 << 20;
  VerbsPair p(o);
  ClosedForm cf;
  const uint64_t n = 4 << 20;
  REQUIRE(p.qpa->post_send(p.read(1, 0, 0, uint32_t(n))).ok());
  REQUIRE(p.qpa->post_send(p.read(2, n, n, uint32_t(n))).ok());
  p.sim->run();
  REQUIRE(p.wca.size() == 2);
  CHECK(p.wca[0].wr_id == 1);
  CHECK(p.wca[1].wr_id == 2);
  const double first = cf.read_completion(n, cf.bottleneck());
  INFO("simulated " << p.ta[0] << " and " << p.ta[1] << ", closed form " << first << " and "
                    << first + n / cf.bottleneck());
  CHECK(p.ta[0] == Approx(first).epsilon(0.01));                       // as if alone
  CHECK(p.ta[1] == Approx(first + n / cf.bottleneck()).epsilon(0.01)); // right behind it: the link never idles
}

TEST_CASE("Uncontended SEND completes at the closed-form time (within 1 %)", "[quick]")
{
  VerbsPair::Options o;
  o.materialize = false;
  o.buffer_bytes = 8 << 20;
  VerbsPair p(o);
  ClosedForm cf;
  const uint64_t n = 1 << 20;
  REQUIRE(p.qpb->post_recv(p.recv_b(1, 0, uint32_t(n))).ok());
  REQUIRE(p.qpa->post_send(p.send(1, 0, uint32_t(n))).ok());
  p.sim->run();
  REQUIRE(p.wca.size() == 1);
  CHECK(p.ta[0] == Approx(cf.write_completion(n, cf.bottleneck(), 0, false)).epsilon(0.01));
}

TEST_CASE("Cross-socket buffers pay the inter-socket hop: slower by the model's bandwidth ratio", "[quick]")
{
  VerbsPair::Options o;
  o.materialize = false;
  o.buffer_bytes = 64 << 20;
  o.loc_a = Location::host(1); // the NIC is on socket 0
  VerbsPair p(o);
  ClosedForm cf;
  const uint64_t n = 32 << 20;
  REQUIRE(p.qpa->post_send(p.write(1, 0, 0, uint32_t(n))).ok());
  p.sim->run();
  REQUIRE(p.wca.size() == 1);
  const double qpi = cf.h.socket_link.bandwidth;
  const double remote_bottleneck = std::min(qpi, cf.bottleneck());
  const double expect = cf.write_completion(n, remote_bottleneck, 2 * cf.h.socket_link.latency);
  CHECK(p.ta[0] == Approx(expect).epsilon(0.01));
  // and against the NUMA-local transfer: the payload part is slower by bottleneck_local / qpi
  const double local = cf.write_completion(n, cf.bottleneck());
  const double fixed = cf.write_completion(0, cf.bottleneck());
  CHECK((p.ta[0] - fixed) / (local - fixed) == Approx(cf.bottleneck() / qpi).epsilon(0.01));
}

TEST_CASE("GPUDirect reads of GPU memory are limited by the GPU's peer-read bandwidth", "[quick]")
{
  VerbsPair::Options o;
  o.materialize = false;
  o.buffer_bytes = 64 << 20;
  o.loc_a = Location::gpu(0); // same socket as the NIC
  VerbsPair p(o);
  ClosedForm cf;
  const uint64_t n = 32 << 20;
  REQUIRE(p.qpa->post_send(p.write(1, 0, 0, uint32_t(n))).ok());
  p.sim->run();
  const double bottleneck = std::min(cf.h.gpus[0].gpu.p2p_read_bandwidth, cf.bottleneck());
  CHECK(p.ta.at(0) == Approx(cf.write_completion(n, bottleneck)).epsilon(0.01));
}

namespace {

struct Flow {
  std::unique_ptr<CompletionQueue> cqx, cqy;
  std::unique_ptr<QueuePair> qpx, qpy;
  Buffer bx, by;
  MemoryRegion mx, my;
  double done = -1;
};

std::unique_ptr<Flow> connect_flow(sim::SimProcess& x, sim::SimProcess& y, uint64_t bytes)
{
  auto f = std::make_unique<Flow>();
  AllocAttr aa;
  f->bx = x.memory().allocate(bytes, aa).value();
  f->by = y.memory().allocate(bytes, aa).value();
  f->mx = x.device().reg_mr(f->bx.addr, bytes, Access::LOCAL_WRITE).value();
  f->my = y.device().reg_mr(f->by.addr, bytes, Access::LOCAL_WRITE | Access::REMOTE_WRITE).value();
  f->cqx = std::move(x.device().create_cq(16).value());
  f->cqy = std::move(y.device().create_cq(16).value());
  QpInitAttr ia;
  ia.send_cq = ia.recv_cq = f->cqx.get();
  f->qpx = std::move(x.device().create_qp(ia).value());
  ia.send_cq = ia.recv_cq = f->cqy.get();
  f->qpy = std::move(y.device().create_qp(ia).value());
  RcConnectOptions rc;
  REQUIRE(bring_up_rc_qp(*f->qpx, 1, {y.device().port_address(), f->qpy->qp_num(), 2}, rc).ok());
  REQUIRE(bring_up_rc_qp(*f->qpy, 2, {x.device().port_address(), f->qpx->qp_num(), 1}, rc).ok());
  Flow* raw = f.get();
  sim::SimProcess* px = &x;
  f->cqx->set_handler([raw, px](const WorkCompletion& wc) {
    CHECK(wc.ok());
    raw->done = px->runtime().now();
  });
  SendWr w;
  w.opcode = WrOpcode::RDMA_WRITE;
  w.sg_list.push_back({f->bx.addr, uint32_t(bytes), f->mx.lkey});
  w.remote_addr = f->by.addr;
  w.rkey = f->my.rkey;
  REQUIRE(f->qpx->post_send(w).ok());
  return f;
}

} // namespace

TEST_CASE("Two flows into one NIC port share it (max-min fair share)", "[quick]")
{
  const uint64_t n = 16 << 20;
  auto s = sim::Simulation::create(test::test_cluster(3)).value();
  auto* x = s->add_process("node0", "x").value();
  auto* y = s->add_process("node1", "y").value();
  auto* z = s->add_process("node2", "z").value();
  auto f1 = connect_flow(*x, *y, n);
  auto f2 = connect_flow(*z, *y, n);
  s->run();
  ClosedForm cf;
  // Both flows start together and cross node1's receive port: each gets half of its goodput.
  const double shared = cf.nic().wire_goodput() / 2;
  const double expect = cf.write_completion(n, std::min(shared, cf.bottleneck()));
  CHECK(f1->done == Approx(expect).epsilon(0.01));
  CHECK(f2->done == Approx(expect).epsilon(0.01));
  // and it takes about twice as long as a flow alone
  const double fixed = cf.write_completion(0, 1);
  CHECK((f1->done - fixed) / (cf.write_completion(n, cf.bottleneck()) - fixed) ==
        Approx(2 * cf.bottleneck() / cf.nic().wire_goodput()).epsilon(0.01));
}

TEST_CASE("Pinned copies: cross-socket H2D/D2H slower than NUMA-local by the model's ratio", "[quick]")
{
  auto s = sim::Simulation::create(test::test_cluster(1)).value();
  auto* p = s->add_process("node0").value();
  microbench::CopyConfig local, remote;
  local.gpu = remote.gpu = 0; // GPU0 on socket 0
  local.host_node = 0;
  remote.host_node = 1;
  microbench::CopyResult rl, rr;
  microbench::run_copy_bench(p->runtime(), local, [&](Result<microbench::CopyResult> r) {
    REQUIRE(r.ok());
    rl = r.value();
    microbench::run_copy_bench(p->runtime(), remote, [&](Result<microbench::CopyResult> r2) {
      REQUIRE(r2.ok());
      rr = r2.value();
    });
  });
  s->run();
  const auto h = test::test_host();
  const auto& g = h.gpus[0];
  const double n = double(local.bytes);
  const double fixed = g.gpu.memcpy_launch_overhead + h.sockets[0].cpu.dma_read_latency;
  const double down = g.pcie.read_completion_bandwidth(h.sockets[0].cpu.read_completion_size);
  const double up = g.pcie.posted_write_bandwidth();
  const double qpi = h.socket_link.bandwidth;
  CHECK(rl.h2d_bandwidth == Approx(n / (fixed + n / down)).epsilon(0.01));
  CHECK(rl.d2h_bandwidth == Approx(n / (fixed + n / up)).epsilon(0.01));
  const double rfixed = fixed + 2 * h.socket_link.latency;
  CHECK(rr.h2d_bandwidth == Approx(n / (rfixed + n / std::min(down, qpi))).epsilon(0.01));
  CHECK(rr.d2h_bandwidth == Approx(n / (rfixed + n / std::min(up, qpi))).epsilon(0.01));
  CHECK(rl.h2d_bandwidth / rr.h2d_bandwidth == Approx(down / qpi).epsilon(0.02));
}
