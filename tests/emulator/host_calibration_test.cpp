// The run-time calibration of the software device's host: every figure measured and plausible, and the profile
// built from it describes a memcpy-speed device with the measured latencies.
#include "emulator/host_calibration.hpp"

#include "tests/test_time.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace tp;

TEST_CASE("calibrating the software device measures memcpy, hand-offs, serialization and the stream")
{
  // The measurements, not the invariants (check_calibration, tested below on given figures): on a shared CI machine
  // another tenant may leave the last-level cache no faster than DRAM, which check_calibration rightly refuses.
  auto c = emu::measure_soft_host(true);
  INFO((c.ok() ? std::string() : c.error().message()));
  REQUIRE(c.ok());
  const auto& k = c.value();
  REQUIRE(k.memcpy_samples.size() >= 5);
  for (const auto& s : k.memcpy_samples)
    CHECK(s.seconds > 0);
  // A memcpy that is not above 1 GB/s or that beats 10 TB/s is a measurement bug, not a machine (the lower bound is
  // a rate, scaled in slow builds: TSan intercepts memcpy).
  for (double bw : {k.memcpy_l2_bandwidth, k.memcpy_llc_bandwidth, k.memcpy_dram_bandwidth}) {
    CHECK(bw > 1e9 / tp::test::time_scale());
    CHECK(bw < 1e13);
  }
  CHECK(k.l2_size > 0);
  CHECK(k.l3_size >= k.l2_size);
  CHECK(k.write_latency > 0);
  CHECK(k.write_latency < tp::test::wall_seconds(0.01));
  CHECK(k.handoff == Approx(k.write_latency / 2));
  // A WRITE in a burst of 32 takes some time, and less than 10 ms (scaled in slow builds).
  CHECK(k.wire_op_time > 0);
  CHECK(k.wire_op_time < tp::test::wall_seconds(0.01));
  CHECK(k.work_round_trip > 0);
  CHECK(k.timer_1us >= 1e-6); // a 1 us timer never fires early (the raw median: nothing clamps it)
  CHECK(k.timer_1us < tp::test::wall_seconds(0.01));
  CHECK(k.serialize_bandwidth > 0);
  CHECK(k.stream_latency > 0);
  CHECK(k.stream_bandwidth > 1e8 / tp::test::time_scale()); // a rate: 1 / time, scaled in slow builds
  CHECK(k.register_fixed > 0);
  CHECK(k.register_per_page >= 0);
}

TEST_CASE("the calibrated profile is a memcpy-speed device with the measured latencies")
{
  emu::SoftHostCalibration c;
  c.l2_size = 1 << 20;
  c.l3_size = 32 << 20;
  c.memcpy_l2_bandwidth = 100e9;
  c.memcpy_llc_bandwidth = 50e9;
  c.memcpy_dram_bandwidth = 15e9;
  c.memcpy_call_overhead = 2e-9;
  c.write_latency = 40e-6;
  c.handoff = 20e-6;
  c.work_round_trip = 6e-6;
  c.timer_1us = 55e-6;
  c.serialize_bandwidth = 150e9;
  c.stream_latency = 25e-6;
  c.stream_bandwidth = 4e9;
  c.register_fixed = 1e-7;
  const auto cl = emu::soft_host_cluster(c);
  REQUIRE(cl.host_count() == 2);
  const auto& h = cl.host(0);
  REQUIRE(h.sockets.size() == 1);
  REQUIRE(h.nics.size() == 1);
  CHECK(h.nics[0].nic.line_rate == 15e9);
  CHECK(h.nics[0].nic.packet_overhead == 0);
  CHECK(h.nics[0].pcie.raw_bandwidth() > 100 * c.memcpy_dram_bandwidth); // PCIe never limits
  CHECK(h.sockets[0].cpu.mmio_write_latency == 20e-6);
  CHECK(h.sockets[0].cpu.completion_overhead == 20e-6);
  CHECK(h.sockets[0].cpu.work_handoff_latency == 6e-6);
  CHECK(h.sockets[0].cpu.mpi_call_overhead == 55e-6); // the emulated MPI thread's per-call 1 us timer, as measured
  auto early = c;
  early.timer_1us = 0.4e-6; // a clock coarser than the timer: the profile never charges less than the 1 us asked for
  CHECK(emu::soft_host_cluster(early).host(0).sockets[0].cpu.mpi_call_overhead == 1e-6);
  // Far beyond the LLC a copy runs at the DRAM rate measured.
  CHECK(h.sockets[0].cpu.memcpy_time(double(1ull << 30)) == Approx(double(1ull << 30) / 15e9).epsilon(0.05));
  CHECK(h.tcp.stack_latency == 25e-6);
  CHECK(h.tcp.stream_bandwidth_cap() == 4e9);
  CHECK(h.registration.register_time(4096) + h.registration.deregister_time(4096) == Approx(1e-7));
  CHECK(cl.network_switch.latency == 0);
}

TEST_CASE("a calibration that breaks an invariant is refused with the figure named")
{
  emu::SoftHostCalibration c;
  c.memcpy_l2_bandwidth = 40e9;
  c.memcpy_llc_bandwidth = 20e9;
  c.memcpy_dram_bandwidth = 8e9;
  c.memcpy_call_overhead = 20e-9;
  c.write_latency = 4e-6;
  c.write_latency_repeat = 5e-6;
  c.wire_op_time = 1e-6;
  c.work_round_trip = 8e-6;
  c.timer_1us = 3e-6;
  c.serialize_bandwidth = 5e9;
  c.register_fixed = 2e-6;
  c.stream_latency = 6e-6;
  c.stream_bandwidth = 3e9;
  REQUIRE(emu::check_calibration(c).ok());
  auto slow_llc = c;
  slow_llc.memcpy_llc_bandwidth = 6e9; // the symptom of a busy machine: the cache "slower" than DRAM
  auto st = emu::check_calibration(slow_llc);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().field == "memcpy_llc_bandwidth");
  CHECK(st.error().message().find("quiet machine") != std::string::npos);
  auto unstable = c;
  unstable.write_latency_repeat = 11e-6; // 4 us, then 11 us
  st = emu::check_calibration(unstable);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().field == "write_latency");
  for (double bad : {0.0, -1e-6, std::nan("")}) {
    auto b = c;
    b.stream_latency = bad;
    st = emu::check_calibration(b);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().field == "stream_latency");
  }
  auto unmeasured = c;
  unmeasured.wire_op_time = std::nan(""); // a burst whose posts were refused
  st = emu::check_calibration(unmeasured);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().field == "wire_op_time");
}
