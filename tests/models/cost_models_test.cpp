// Closed-form cost functions of the hardware models (PCIe efficiencies, packetization, memcpy, registration).
#include "models/cpu_model.hpp"
#include "models/nic_model.hpp"
#include "models/pcie_model.hpp"
#include "models/registration_model.hpp"

#include <catch2/catch.hpp>

using namespace tp::models;

TEST_CASE("PCIe goodput: encoding, DLLPs and TLP headers", "[quick]")
{
  PcieProfile p;
  p.transfer_rate = 8e9;
  p.lanes = 16;
  p.encoding_efficiency = 128.0 / 130.0;
  p.max_payload_size = 256;
  p.write_tlp_overhead = 24;
  p.completion_tlp_overhead = 20;
  p.dllp_overhead = 0.1;
  const double raw = 8e9 * 16 * 128.0 / 130.0 / 8;
  CHECK(p.raw_bandwidth() == Approx(raw));
  CHECK(p.posted_write_bandwidth() == Approx(raw * 0.9 * 256 / 280));
  CHECK(p.read_completion_bandwidth(64) == Approx(raw * 0.9 * 64 / 84));
  CHECK(p.read_completion_bandwidth(128) > p.read_completion_bandwidth(64));
}

TEST_CASE("NIC packetization: packets, header bytes and goodput", "[quick]")
{
  NicProfile n;
  n.line_rate = 5e9;
  n.mtu = 1024;
  n.packet_overhead = 94;
  n.rdma_header_bytes = 16;
  n.imm_header_bytes = 4;
  CHECK(n.packets(0) == 1);
  CHECK(n.packets(1024) == 1);
  CHECK(n.packets(1025) == 2);
  CHECK(n.wire_bytes(65536, false, false) == Approx(65536 + 64 * 94));
  CHECK(n.wire_bytes(10, true, true) == Approx(10 + 94 + 16 + 4));
  CHECK(n.wire_goodput() == Approx(5e9 * 1024 / 1118));
}

TEST_CASE("memcpy bandwidth falls from the L2 plateau to the DRAM plateau", "[quick]")
{
  CpuProfile c;
  c.l2_size = 256 * 1024;
  c.l3_size = 15 * 1024 * 1024;
  c.memcpy_l2_bandwidth = 25e9;
  c.memcpy_llc_bandwidth = 10e9;
  c.memcpy_dram_bandwidth = 3e9;
  CHECK(c.memcpy_bandwidth(4096) == Approx(25e9));
  const double mid = c.memcpy_bandwidth(1 << 20);
  CHECK(mid < 25e9);
  CHECK(mid > 10e9);
  const double big = c.memcpy_bandwidth(1 << 30);
  CHECK(big < 3.1e9);
  CHECK(big > 3e9 * 0.99);
  // monotone non-increasing with size
  double prev = 1e300;
  for (double s = 64; s < 4e9; s *= 2) {
    CHECK(c.memcpy_bandwidth(s) <= prev * (1 + 1e-12));
    prev = c.memcpy_bandwidth(s);
  }
  CHECK(c.reduce_time(1 << 20) > c.memcpy_time(1 << 20));
}

TEST_CASE("Registration cost: fixed plus per page", "[quick]")
{
  RegistrationProfile r;
  r.register_fixed = 20e-6;
  r.register_per_page = 0.3e-6;
  r.deregister_fixed = 5e-6;
  r.deregister_per_page = 0.072e-6;
  r.page_size = 4096;
  CHECK(r.register_time(4096 * 256) == Approx(20e-6 + 256 * 0.3e-6));
  CHECK(r.register_time(1) == Approx(20e-6 + 0.3e-6));
  CHECK(r.deregister_time(4096 * 10) == Approx(5e-6 + 10 * 0.072e-6));
}
