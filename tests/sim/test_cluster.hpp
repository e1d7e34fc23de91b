// A synthetic cluster with round numbers for the simulator tests (independent of the shipped profiles),
// and a harness that connects one RC QP pair between two simulated processes.
#pragma once

#include "core/device/device.hpp"
#include "models/host_model.hpp"
#include "sim/simulation.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <vector>

namespace tp::test {

inline models::HostProfile test_host()
{
  models::HostProfile h;
  h.name = "test-host";
  h.file = "(test)";
  models::CpuProfile cpu;
  cpu.name = "test-cpu";
  cpu.cores = 4;
  cpu.frequency = 2e9;
  cpu.l2_size = 256 * 1024;
  cpu.l3_size = 8 * 1024 * 1024;
  cpu.memcpy_l2_bandwidth = 20e9;
  cpu.memcpy_llc_bandwidth = 10e9;
  cpu.memcpy_dram_bandwidth = 5e9;
  cpu.memcpy_call_overhead = 10e-9;
  cpu.dma_read_latency = 500e-9;
  cpu.posted_write_latency = 250e-9;
  cpu.mmio_write_latency = 200e-9;
  cpu.read_completion_size = 128;
  cpu.post_overhead = 100e-9;
  cpu.completion_overhead = 50e-9;
  cpu.serialize_bandwidth = 1e9;
  cpu.deserialize_bandwidth = 0.5e9;
  h.sockets = {{cpu, 64e9}, {cpu, 64e9}};
  h.socket_link = {"test-qpi", 6e9, 50e-9, 0.5e9};
  models::PcieProfile pcie;
  pcie.name = "test-gen3-x16";
  pcie.transfer_rate = 8e9;
  pcie.lanes = 16;
  pcie.max_payload_size = 256;
  pcie.write_tlp_overhead = 24;
  pcie.completion_tlp_overhead = 20;
  pcie.dllp_overhead = 0.1;
  pcie.link_latency = 0;
  models::GpuProfile gpu;
  gpu.name = "test-gpu";
  gpu.memory = 16e9;
  gpu.memory_bandwidth = 700e9;
  gpu.fp32_peak = 10e12;
  gpu.memcpy_launch_overhead = 10e-6;
  gpu.kernel_launch_overhead = 5e-6;
  gpu.p2p_read_bandwidth = 4e9;
  h.gpus = {{gpu, 0, pcie}, {gpu, 1, pcie}};
  models::NicProfile nic;
  nic.name = "test-nic";
  nic.link_layer = models::LinkLayerKind::INFINIBAND;
  nic.line_rate = 12.5e9; // 100 Gb/s
  nic.mtu = 4096;
  nic.packet_overhead = 26;
  nic.rdma_header_bytes = 16;
  nic.imm_header_bytes = 4;
  nic.ack_packet_bytes = 30;
  nic.port_latency = 50e-9;
  nic.tx_pipeline_latency = 100e-9;
  nic.rx_pipeline_latency = 100e-9;
  nic.wqe_processing_time = 100e-9;
  nic.max_message_rate = 0;
  nic.max_inline_data = 128;
  h.nics = {{nic, 0, pcie}};
  h.registration = {"test-reg", 20e-6, 0.3e-6, 5e-6, 0.07e-6, 4096};
  h.tcp = {"test-tcp", 1448, 90, 10e-6, 0};
  return h;
}

/// The test host with 8 GPUs of its model, 4 per socket: ring hops between GPUs of different sockets and from GPUs
/// of the NIC's other socket.
inline models::HostProfile test_host_8_gpus_two_sockets()
{
  models::HostProfile h = test_host();
  const auto gpu = h.gpus[0];
  h.gpus.clear();
  for (int k = 0; k < 8; ++k) {
    auto g = gpu;
    g.socket = k / 4;
    h.gpus.push_back(g);
  }
  return h;
}

inline models::ClusterProfile test_cluster(int hosts = 2, const models::HostProfile& h = test_host(),
                                           double switch_latency = 100e-9)
{
  return models::make_cluster(h, hosts, models::SwitchProfile{"test-switch", switch_latency, {}}, "node");
}

struct VerbsPairOptions {
  bool materialize = true;
  uint64_t buffer_bytes = 1 << 20;
  Location loc_a = Location::host(0);
  Location loc_b = Location::host(0);
  verbs::Access access_b = verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_WRITE | verbs::Access::REMOTE_READ;
  bool connect = true;
  verbs::RcConnectOptions rc;
  models::ClusterProfile cluster = test_cluster();
  bool same_machine = false;
};

/// Two processes (node0, node1) with one connected RC QP pair, buffers and MRs.
struct VerbsPair {
  std::unique_ptr<sim::Simulation> sim;
  sim::SimProcess* a = nullptr;
  sim::SimProcess* b = nullptr;
  std::unique_ptr<verbs::CompletionQueue> cqa, cqb;
  std::unique_ptr<verbs::QueuePair> qpa, qpb;
  Buffer bufa, bufb;
  verbs::MemoryRegion mra, mrb;
  std::vector<verbs::WorkCompletion> wca, wcb;
  std::vector<double> ta, tb;

  using Options = VerbsPairOptions;

  explicit VerbsPair(Options o = Options())
  {
    sim::SimOptions so;
    so.materialize = o.materialize;
    auto s = sim::Simulation::create(o.cluster, so);
    REQUIRE(s.ok());
    sim = std::move(s.value());
    a = sim->add_process("node0", "a").value();
    b = sim->add_process(o.same_machine ? "node0" : "node1", "b").value();
    AllocAttr aa;
    aa.location = o.loc_a;
    bufa = a->memory().allocate(o.buffer_bytes, aa).value();
    aa.location = o.loc_b;
    bufb = b->memory().allocate(o.buffer_bytes, aa).value();
    using verbs::Access;
    mra = a->device()
              .reg_mr(bufa.addr, bufa.size, Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ)
              .value();
    mrb = b->device().reg_mr(bufb.addr, bufb.size, o.access_b).value();
    cqa = std::move(a->device().create_cq(1024).value());
    cqb = std::move(b->device().create_cq(1024).value());
    cqa->set_handler([this](const verbs::WorkCompletion& wc) {
      wca.push_back(wc);
      ta.push_back(a->runtime().now());
    });
    cqb->set_handler([this](const verbs::WorkCompletion& wc) {
      wcb.push_back(wc);
      tb.push_back(b->runtime().now());
    });
    verbs::QpInitAttr ia;
    ia.send_cq = cqa.get();
    ia.recv_cq = cqa.get();
    ia.cap.max_inline_data = 64;
    qpa = std::move(a->device().create_qp(ia).value());
    ia.send_cq = cqb.get();
    ia.recv_cq = cqb.get();
    qpb = std::move(b->device().create_qp(ia).value());
    if (o.connect) {
      REQUIRE(verbs::bring_up_rc_qp(*qpa, 100, endpoint_b(), o.rc).ok());
      REQUIRE(verbs::bring_up_rc_qp(*qpb, 200, endpoint_a(), o.rc).ok());
    }
  }

  verbs::QpEndpoint endpoint_a() const { return {a->device().port_address(), qpa->qp_num(), 100}; }
  verbs::QpEndpoint endpoint_b() const { return {b->device().port_address(), qpb->qp_num(), 200}; }

  verbs::SendWr write(uint64_t id, uint64_t off_a, uint64_t off_b, uint32_t len, bool imm = false,
                      uint32_t imm_data = 0)
  {
    verbs::SendWr w;
    w.wr_id = id;
    w.opcode = imm ? verbs::WrOpcode::RDMA_WRITE_WITH_IMM : verbs::WrOpcode::RDMA_WRITE;
    if (len) w.sg_list.push_back({bufa.addr + off_a, len, mra.lkey});
    w.remote_addr = bufb.addr + off_b;
    w.rkey = mrb.rkey;
    w.imm_data = imm_data;
    return w;
  }
  verbs::SendWr read(uint64_t id, uint64_t off_a, uint64_t off_b, uint32_t len)
  {
    verbs::SendWr w = write(id, off_a, off_b, len);
    w.opcode = verbs::WrOpcode::RDMA_READ;
    return w;
  }
  verbs::SendWr send(uint64_t id, uint64_t off_a, uint32_t len, bool imm = false, uint32_t imm_data = 0)
  {
    verbs::SendWr w;
    w.wr_id = id;
    w.opcode = imm ? verbs::WrOpcode::SEND_WITH_IMM : verbs::WrOpcode::SEND;
    if (len) w.sg_list.push_back({bufa.addr + off_a, len, mra.lkey});
    w.imm_data = imm_data;
    return w;
  }
  verbs::RecvWr recv_b(uint64_t id, uint64_t off_b, uint32_t len)
  {
    verbs::RecvWr r;
    r.wr_id = id;
    if (len) r.sg_list.push_back({bufb.addr + off_b, len, mrb.lkey});
    return r;
  }
  void fill_a(uint64_t off, uint64_t len, uint8_t seed)
  {
    for (uint64_t i = 0; i < len; ++i)
      bufa.data[off + i] = uint8_t(seed + i * 7);
  }
  bool b_matches(uint64_t off_b, uint64_t len, uint8_t seed) const
  {
    for (uint64_t i = 0; i < len; ++i)
      if (bufb.data[off_b + i] != uint8_t(seed + i * 7)) return false;
    return true;
  }
};

} // namespace tp::test
