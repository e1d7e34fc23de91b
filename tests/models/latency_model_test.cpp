// The latency compositions (models/latency_model.hpp) and the per-message RC costs (models/rc_costs.hpp) against
// their closed forms on a two-socket host with a GPU and two NICs.
#include "models/latency_model.hpp"
#include "models/rc_costs.hpp"

#include <catch2/catch.hpp>

using namespace tp;
using namespace tp::models;

namespace {

HostProfile two_socket_host()
{
  HostProfile h;
  h.sockets.resize(2);
  for (auto& s : h.sockets) {
    s.cpu.dma_read_latency = 400e-9;
    s.cpu.posted_write_latency = 150e-9;
    s.cpu.mmio_write_latency = 120e-9;
  }
  h.sockets[1].cpu.dma_read_latency = 500e-9; // tell the sockets apart
  h.socket_link.latency = 60e-9;
  GpuSpec g;
  g.socket = 1;
  g.pcie.link_latency = 30e-9;
  h.gpus.push_back(g);
  NicSpec n;
  n.socket = 0;
  n.pcie.link_latency = 20e-9;
  h.nics.push_back(n);
  n.socket = 1;
  h.nics.push_back(n);
  return h;
}

} // namespace

TEST_CASE("Latency compositions: DMA read and write, doorbell, across sockets and to a GPU", "[quick]")
{
  const HostProfile h = two_socket_host();
  CHECK(socket_of(h, Location::host(1)) == 1);
  CHECK(socket_of(h, Location::gpu(0)) == 1);
  CHECK(dma_read_latency(h, 0, Location::host(0)) == Approx(400e-9 + 2 * 20e-9));
  CHECK(dma_read_latency(h, 0, Location::host(1)) == Approx(400e-9 + 2 * 20e-9 + 2 * 60e-9));
  CHECK(dma_read_latency(h, 1, Location::gpu(0)) == Approx(500e-9 + 2 * 20e-9 + 2 * 30e-9));
  CHECK(dma_write_latency(h, 0, Location::gpu(0)) == Approx(150e-9 + 20e-9 + 30e-9 + 60e-9));
  CHECK(dma_write_latency(h, 1, Location::host(1)) == Approx(150e-9 + 20e-9));
  CHECK(doorbell_latency(h, 0, 0) == Approx(120e-9 + 20e-9));
  CHECK(doorbell_latency(h, 0, 1) == Approx(120e-9 + 20e-9 + 60e-9));
  CHECK(local_copy_latency(h, Location::host(0), Location::gpu(0)) == Approx(500e-9 + 2 * 60e-9));
  CHECK(local_copy_latency(h, Location::gpu(0), Location::host(1)) == Approx(500e-9));
}

TEST_CASE("Latency compositions: the wire between two NICs and a NIC's loopback", "[quick]")
{
  NicProfile a, b;
  a.tx_pipeline_latency = 100e-9;
  a.rx_pipeline_latency = 110e-9;
  a.port_latency = 50e-9;
  b.port_latency = 70e-9;
  b.rx_pipeline_latency = 130e-9;
  SwitchProfile sw;
  sw.latency = 90e-9;
  CHECK(wire_latency(a, b, sw, false) == Approx(100e-9 + 50e-9 + 90e-9 + 70e-9 + 130e-9));
  CHECK(wire_latency(a, b, sw, true) == Approx(100e-9 + 110e-9)); // no port, no switch
}

TEST_CASE("RC costs: ACK, READ request, goodput and the headers the goodput does not charge", "[quick]")
{
  NicProfile n;
  n.line_rate = 5e9;
  n.mtu = 1024;
  n.packet_overhead = 94;
  n.rdma_header_bytes = 16;
  n.imm_header_bytes = 4;
  n.ack_packet_bytes = 60;
  CHECK(ack_packet_time(n) == Approx(60 / 5e9));
  CHECK(ack_time(n, 1e-6) == Approx(1e-6 + 60 / 5e9));
  CHECK(read_request_time(n) == Approx(76 / 5e9));
  CHECK(goodput_time(n, 1024 * 100) == Approx(1118 * 100 / 5e9));
  // Full packets: the fluid goodput charges every header exactly; RETH and ImmDt are extra.
  CHECK(extra_header_time(n, 4096, false, false) == Approx(0).margin(1e-18));
  CHECK(extra_header_time(n, 4096, true, true) == Approx(20 / 5e9));
  // A 10-byte message pays a whole packet's header, of which the goodput charged 10 x 94 / 1024 bytes.
  CHECK(extra_header_time(n, 10, false, false) == Approx((94 - 10.0 * 94 / 1024) / 5e9));
}

TEST_CASE("Behind a PCIe switch: a GPU and its NIC meet in the switch, the uplink adds to the rest, NVLink for peers",
          "[quick]")
{
  HostProfile h;
  h.sockets.resize(1);
  h.sockets[0].cpu.dma_read_latency = 500e-9;
  h.sockets[0].cpu.posted_write_latency = 250e-9;
  h.sockets[0].cpu.mmio_write_latency = 250e-9;
  PcieSwitchSpec sw;
  sw.latency = 150e-9;
  sw.uplink.link_latency = 20e-9;
  h.pcie_switches = {sw, sw};
  GpuSpec g;
  g.pcie.link_latency = 10e-9;
  g.pcie_switch = 0;
  h.gpus = {g, g};
  h.gpus[1].pcie_switch = 1;
  NicSpec n;
  n.pcie.link_latency = 30e-9;
  n.pcie_switch = 0;
  h.nics = {n};
  // GPU 0 shares NIC 0's switch: its links and the switch, both ways, no root complex.
  CHECK(dma_read_latency(h, 0, Location::gpu(0)) == Approx(2 * (30e-9 + 150e-9 + 10e-9)));
  CHECK(dma_write_latency(h, 0, Location::gpu(0)) == Approx(30e-9 + 150e-9 + 10e-9));
  // GPU 1 behind the other switch: up NIC 0's switch to the root complex, down GPU 1's.
  CHECK(dma_read_latency(h, 0, Location::gpu(1)) == Approx(500e-9 + 2 * 30e-9 + 2 * 170e-9 + 2 * (10e-9 + 170e-9)));
  CHECK(dma_read_latency(h, 0, Location::host(0)) == Approx(500e-9 + 2 * 30e-9 + 2 * 170e-9));
  CHECK(doorbell_latency(h, 0, 0) == Approx(250e-9 + 30e-9 + 170e-9));
  CHECK(local_copy_latency(h, Location::host(0), Location::gpu(1)) == Approx(500e-9 + 2 * 170e-9));
  // GPU to GPU: through the root complex over PCIe, or one NVLink round trip when the host has NVLink.
  CHECK(local_copy_latency(h, Location::gpu(0), Location::gpu(1)) == Approx(500e-9 + 2 * 170e-9));
  h.nvlink = NvlinkProfile{};
  h.nvlink->latency = 700e-9;
  CHECK(local_copy_latency(h, Location::gpu(0), Location::gpu(1)) == Approx(2 * 700e-9));
}
