// Platform construction: which links a route crosses, and the latency sums.
#include "models/catalog.hpp"
#include "sim/platform.hpp"
#include "sim/simulation.hpp"
#include "test_cluster.hpp"

#include <simgrid/s4u/Link.hpp>

#include <algorithm>

using namespace tp;

namespace {
bool crosses(const std::vector<std::string>& links, const std::string& name)
{
  return std::find(links.begin(), links.end(), name) != links.end();
}
} // namespace

TEST_CASE("Routes cross exactly the PCIe, QPI and port links of the model", "[quick]")
{
  auto s = sim::Simulation::create(test::test_cluster(2)).value();
  const sim::Platform& pf = s->platform();
  // NIC on socket 0: a DMA read from socket 1 memory crosses QPI 1->0 and the NIC's PCIe downstream link
  auto r = sim::Platform::route_links(pf.nic_endpoint(0, 0, Location::host(1), false),
                                      pf.nic_endpoint(1, 0, Location::host(0), true));
  CHECK(crosses(r, "node0.qpi.1to0"));
  CHECK(crosses(r, "node0.nic0.pcie.down"));
  CHECK(crosses(r, "node0.nic0.port.tx"));
  CHECK(crosses(r, "node1.nic0.port.rx"));
  CHECK(crosses(r, "node1.nic0.pcie.up"));
  CHECK_FALSE(crosses(r, "node1.qpi.0to1"));
  // GPUDirect read of GPU0 (socket 0): GPU upstream link and its peer-read limit, no QPI
  auto g = sim::Platform::route_links(pf.nic_endpoint(0, 0, Location::gpu(0), false),
                                      pf.nic_endpoint(1, 0, Location::gpu(1), true));
  CHECK(crosses(g, "node0.gpu0.pcie.up"));
  CHECK(crosses(g, "node0.gpu0.p2p_read"));
  CHECK_FALSE(crosses(g, "node0.qpi.0to1"));
  // ... and writing into GPU1 (socket 1) at the target crosses the target's QPI with the peer limit
  CHECK(crosses(g, "node1.qpi_p2p.0to1"));
  CHECK(crosses(g, "node1.gpu1.pcie.down"));
  // local copies: host socket 1 -> GPU0 crosses QPI and the GPU's downstream link
  auto c = sim::Platform::route_links(pf.cpu_host(0, 1), pf.gpu_host(0, 0));
  CHECK(c == std::vector<std::string>{"node0.qpi.1to0", "node0.gpu0.pcie.down"});
  // loopback through the NIC from and to the same NUMA node
  auto lb = sim::Platform::route_links(pf.nic_endpoint(0, 0, Location::host(0), false),
                                       pf.nic_endpoint(0, 0, Location::host(0), true));
  CHECK(lb == std::vector<std::string>{"node0.nic0.pcie.down", "node0.nic0.pcie.up"});
}

TEST_CASE("Latency terms add up as documented", "[quick]")
{
  auto s = sim::Simulation::create(test::test_cluster(2, test::test_host(), 300e-9)).value();
  const sim::Platform& pf = s->platform();
  const auto h = test::test_host();
  const auto& n = h.nics[0].nic;
  CHECK(pf.wire_latency(0, 0, 1, 0) ==
        Approx(n.tx_pipeline_latency + 2 * n.port_latency + 300e-9 + n.rx_pipeline_latency));
  CHECK(pf.wire_latency(0, 0, 0, 0) == Approx(n.tx_pipeline_latency + n.rx_pipeline_latency));
  CHECK(pf.dma_read_latency(0, 0, Location::host(1)) ==
        Approx(h.sockets[0].cpu.dma_read_latency + 2 * h.socket_link.latency));
  CHECK(pf.dma_write_latency(0, 0, Location::host(0)) == Approx(h.sockets[0].cpu.posted_write_latency));
  CHECK_FALSE(pf.check_location(0, Location::gpu(5)).ok());
  CHECK_FALSE(pf.check_location(0, Location::host(2)).ok());
}

TEST_CASE("A second simulation in the same process is refused with an explanation", "[quick]")
{
  auto s = sim::Simulation::create(test::test_cluster(1));
  REQUIRE(s.ok());
  auto again = sim::Simulation::create(test::test_cluster(1));
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().message().find("one simulation per OS process") != std::string::npos);
  CHECK_FALSE(s.value()->add_process("node7").ok());
  CHECK(s.value()->add_process("node0", "p").ok());
  CHECK_FALSE(s.value()->add_process("node0", "p").ok()); // duplicate name
}

TEST_CASE("An HGX H100 node: GPU peers over NVLink, a GPU and its NIC inside their PCIe switch", "[quick]")
{
  models::Catalog cat;
  auto host = cat.host("hgx-h100-8gpu");
  REQUIRE(host.ok());
  auto s = sim::Simulation::create(models::make_cluster(*host, 2, {"test-switch", 100e-9, {}}, "node")).value();
  const sim::Platform& pf = s->platform();
  // GPU to GPU: the NVLink links only, no PCIe, no socket link (GPU 0 and 5 are on different sockets).
  auto p2p = sim::Platform::route_links(pf.gpu_host(0, 0), pf.gpu_host(0, 5));
  CHECK(p2p == std::vector<std::string>{"node0.gpu0.nvlink.tx", "node0.gpu5.nvlink.rx"});
  // GPUDirect read of GPU 0 by its own NIC 0: the two devices' links, no switch uplink, no root-complex peer limit.
  auto own = sim::Platform::route_links(pf.nic_endpoint(0, 0, Location::gpu(0), false),
                                        pf.nic_endpoint(1, 0, Location::host(0), true));
  CHECK(crosses(own, "node0.gpu0.pcie.up"));
  CHECK(crosses(own, "node0.nic0.pcie.down"));
  CHECK_FALSE(crosses(own, "node0.gpu0.p2p_read"));
  CHECK_FALSE(crosses(own, "node0.pcie_switch0.up"));
  // ... and at the far end, the write into host memory leaves NIC 0's switch through its uplink.
  CHECK(crosses(own, "node1.pcie_switch0.up"));
  // GPU 1 read by NIC 0: up through GPU 1's switch, the root complex's peer limit, down NIC 0's switch.
  auto other = sim::Platform::route_links(pf.nic_endpoint(0, 0, Location::gpu(1), false),
                                          pf.nic_endpoint(1, 0, Location::host(0), true));
  CHECK(crosses(other, "node0.pcie_switch1.up"));
  CHECK(crosses(other, "node0.gpu1.p2p_read"));
  CHECK(crosses(other, "node0.pcie_switch0.down"));
  // Host memory to GPU 2 (socket 0): the switch's downlink, then the GPU's own link.
  auto h2d = sim::Platform::route_links(pf.cpu_host(0, 0), pf.gpu_host(0, 2));
  CHECK(h2d == std::vector<std::string>{"node0.pcie_switch2.down", "node0.gpu2.pcie.down"});
}

namespace {

/// test_cluster's hosts on a two-tier rail-optimized Clos of `leaf_ports` NIC ports per leaf, placed by `ecmp`.
models::ClusterProfile clos_cluster(int hosts, int leaf_ports, double ratio, models::EcmpPlacement ecmp)
{
  auto c = test::test_cluster(hosts);
  models::TopologyProfile t;
  t.name = "test-clos";
  t.file = "(test)";
  t.tiers = 2;
  t.leaf_ports = leaf_ports;
  t.oversubscription = {ratio};
  t.ecmp = ecmp;
  t.switch_model = {"test-leaf-switch", 200e-9, {}};
  c.topology = t;
  return c;
}

} // namespace

TEST_CASE("On a multi-tier topology a route crosses the leaf's uplink and the spine's downlink, one switch latency "
          "per hop",
          "[quick]")
{
  // 4 one-NIC hosts, 2 per leaf, 1 uplink per leaf (2:1): hosts 0, 1 under leaf 0, hosts 2, 3 under leaf 1
  auto s = sim::Simulation::create(clos_cluster(4, 2, 2, models::EcmpPlacement::DMODK)).value();
  const sim::Platform& pf = s->platform();
  auto same_leaf = sim::Platform::route_links(pf.nic_endpoint(0, 0, Location::host(0), false),
                                              pf.nic_endpoint(1, 0, Location::host(0), true));
  CHECK(crosses(same_leaf, "node0.nic0.port.tx"));
  CHECK(crosses(same_leaf, "node1.nic0.port.rx"));
  CHECK(std::none_of(same_leaf.begin(), same_leaf.end(),
                     [](const std::string& l) { return l.find("spine") != std::string::npos; }));
  auto across = sim::Platform::route_links(pf.nic_endpoint(0, 0, Location::host(0), false),
                                           pf.nic_endpoint(2, 0, Location::host(0), true));
  CHECK(crosses(across, "node0.nic0.port.tx"));
  CHECK(crosses(across, "leaf0>spine0"));
  CHECK(crosses(across, "spine0>leaf1"));
  CHECK(crosses(across, "node2.nic0.port.rx"));
  // the way back uses the other direction's links
  auto back = sim::Platform::route_links(pf.nic_endpoint(2, 0, Location::host(0), false),
                                         pf.nic_endpoint(0, 0, Location::host(0), true));
  CHECK(crosses(back, "leaf1>spine0"));
  CHECK(crosses(back, "spine0>leaf0"));
  // two more switches (spine, second leaf) than a route under one leaf
  CHECK(pf.wire_latency(0, 0, 2, 0) - pf.wire_latency(0, 0, 1, 0) == Approx(2 * 200e-9));
  CHECK(pf.wire_latency(0, 0, 1, 0) - pf.wire_latency(0, 0, 0, 0) > 0);
}

TEST_CASE("With spread placement a leaf's uplinks are one bundle of their summed rate", "[quick]")
{
  // 8 one-NIC hosts, 4 per leaf, 4 uplinks per leaf (1:1): spreading shares the leaf's 4 uplinks among all its flows
  auto s = sim::Simulation::create(clos_cluster(8, 4, 1, models::EcmpPlacement::SPREAD)).value();
  const sim::Platform& pf = s->platform();
  auto across = sim::Platform::route_links(pf.nic_endpoint(1, 0, Location::host(0), false),
                                           pf.nic_endpoint(6, 0, Location::host(0), true));
  CHECK(crosses(across, "leaf0>spines"));
  CHECK(crosses(across, "spines>leaf1"));
  const double port = simgrid::s4u::Link::by_name("node1.nic0.port.tx")->get_bandwidth();
  CHECK(simgrid::s4u::Link::by_name("leaf0>spines")->get_bandwidth() == Approx(4 * port));
}

TEST_CASE("A multi-tier cluster the platform cannot build is refused, naming why", "[quick]")
{
  auto mixed = clos_cluster(2, 2, 1, models::EcmpPlacement::HASH);
  auto two_nics = test::test_host();
  two_nics.nics.push_back(two_nics.nics[0]);
  mixed.groups.push_back({"big", 1, two_nics});
  auto st = sim::Platform::check_cluster(mixed);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message().find("same number of NICs") != std::string::npos);
  auto huge = clos_cluster(2000, 32, 1, models::EcmpPlacement::HASH);
  st = sim::Platform::check_cluster(huge);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message().find("at most 1024 NIC ports") != std::string::npos);
  CHECK(sim::Platform::check_cluster(clos_cluster(16, 4, 2, models::EcmpPlacement::HASH)).ok());
  CHECK(sim::Platform::check_cluster(test::test_cluster(2000)).ok()); // one switch: no route per pair
}

namespace {

/// Four flows from the hosts under leaf 0 to those under leaf 1, all at once, through 2 uplinks per leaf (2:1): the
/// closed form the NCCL collective model uses (models::LinkLoads: the busiest link's bytes over its rate) must be the
/// time the simulator's flows take, for every placement (the same routes: the pair's static choice, label 0).
void check_max_min_agrees(models::EcmpPlacement ecmp)
{
  const auto cluster = clos_cluster(8, 4, 2, ecmp);
  auto s = sim::Simulation::create(cluster).value();
  const sim::Platform& pf = s->platform();
  const auto& nic = cluster.host(0).nics[0].nic;
  auto topo = models::Topology::build(*cluster.topology, 8, 1, nic.line_rate, nic.wire_goodput());
  REQUIRE(topo.ok());
  models::LinkLoads loads(topo.value());
  const double bytes = 64e6;
  double last = 0;
  for (int i = 0; i < 4; ++i) {
    loads.add({i, 0, 4 + i, 0, 0, bytes});
    s->raw_comm(pf.nic_endpoint(size_t(i), 0, Location::host(0), false),
                pf.nic_endpoint(size_t(4 + i), 0, Location::host(0), true), bytes,
                [&] { last = std::max(last, s->now()); });
  }
  s->run();
  // the flows' host-side paths (PCIe) are faster than the fabric here: the uplinks set the time
  CHECK(loads.busiest_seconds() > bytes / nic.wire_goodput() * 1.5);
  CHECK(last == Approx(loads.busiest_seconds()).epsilon(0.01));
}

} // namespace

TEST_CASE("SimGrid's max-min sharing on the Clos agrees with the collective model's bound: D-mod-k", "[quick]")
{
  check_max_min_agrees(models::EcmpPlacement::DMODK);
}

TEST_CASE("SimGrid's max-min sharing on the Clos agrees with the collective model's bound: hash", "[quick]")
{
  check_max_min_agrees(models::EcmpPlacement::HASH);
}

TEST_CASE("SimGrid's max-min sharing on the Clos agrees with the collective model's bound: spread", "[quick]")
{
  check_max_min_agrees(models::EcmpPlacement::SPREAD);
}
