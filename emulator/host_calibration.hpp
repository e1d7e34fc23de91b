// "The software device on this host" as a hardware profile, calibrated at run time by microbenchmarks of the
// emulator's own primitives: memcpy bandwidth against size (L2 / LLC / DRAM plateaus and the per-call cost),
// the cross-thread hand-off (an event loop waking another: the cost of every completion, message delivery and
// work item), a WRITE's time in a burst of them (reported only), the serialization pass, memory registration on
// the software device, and the in-process stream.
// The simulator run with this profile predicts what the emulator measures: that comparison
// (apps/lib/sim_vs_emu) checks the protocol accounting of every transport against real executions.
// Tests: tests/emulator/host_calibration_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "models/host_model.hpp"

#include <cstdint>
#include <vector>

namespace tp::emu {

struct MemcpySample {
  uint64_t bytes = 0;
  double seconds = 0; ///< median time of one copy
};

struct SoftHostCalibration {
  std::vector<MemcpySample> memcpy_samples;
  double l2_size = 0, l3_size = 0;  ///< bytes, from the operating system (0: unknown)
  double memcpy_l2_bandwidth = 0;   ///< bytes/s, working set within L2
  double memcpy_llc_bandwidth = 0;  ///< working set within the last-level cache
  double memcpy_dram_bandwidth = 0; ///< working set far beyond it
  double memcpy_call_overhead = 0;  ///< seconds for a 64-byte copy
  double write_latency = 0;         ///< 8-byte RDMA WRITE on the software device, post to completion (median)
  double write_latency_repeat = 0;  ///< the same, measured a second time (stability check)
  double handoff = 0;               ///< one thread waking another: half of write_latency, seconds
  /// A WRITE's time in a burst: 32 8-byte WRITEs posted back to back, from the first post to the last completion, per
  /// WRITE (median of the bursts), seconds. It bounds the software device's time per queued operation from above (the
  /// first WRITE's latency is spread over the burst; the wire thread is woken about once per burst, not per WRITE).
  /// Reported, not in the profile (docs/validation.md, "AR-gRPC's large payloads").
  double wire_op_time = 0;
  double work_round_trip = 0;       ///< an empty work item: loop -> worker -> loop, seconds
  /// What a 1 us timer of an emulated process's loop really takes, from its setting to its callback (median), seconds:
  /// the MPI thread's per-call cost is such a timer (core/transports/mpi), so it is the profile's mpi_call_overhead.
  double timer_1us = 0;
  double serialize_bandwidth = 0; ///< the emulator's serialization pass, bytes/s
  double register_fixed = 0;      ///< soft device reg_mr + dereg_mr of one page, seconds
  double register_per_page = 0;
  double stream_latency = 0;   ///< one-way delivery of a small RPC message over an in-process stream, seconds
  double stream_bandwidth = 0; ///< bytes through an in-process stream, copied in and out (as a socket), bytes/s
  double seconds_spent = 0;    ///< how long the calibration took
};

/// Measure this host. `quick` uses fewer repetitions (tests); the full run takes a few seconds. A memcpy sweep and
/// device latency that break check_calibration's stability invariants (a busy machine) are measured again, up to
/// three times; an Error only when a measurement could not be taken. Before a simulation uses the result,
/// check_calibration must pass (tensorpath emulate --compare refuses it otherwise, or warns with
/// --allow-disturbed-calibration).
Result<SoftHostCalibration> measure_soft_host(bool quick = false);

/// What a calibration must satisfy before a simulation may use it: every rate and latency positive and finite;
/// memcpy within the last-level cache at least as fast as from DRAM, within 10 % (a cache that measures slower than
/// memory is noise from other work on the machine, not a property of it); the device latency stable across two
/// measurements (`write_latency_repeat`, within a factor of 2). The error names the figure, its value and what to do.
Status check_calibration(const SoftHostCalibration& c);

/// The host profile a simulation uses to predict the emulator on this host: one socket whose CPU has the measured
/// memcpy and hand-off costs, a "NIC" that moves bytes at memcpy speed with hand-off latencies (the wire thread),
/// no PCIe cost, a stream (TCP model) with the hand-off as its latency.
models::HostProfile soft_host_profile(const SoftHostCalibration& c);

/// A two-host cluster of that profile behind a zero-latency switch (the emulator's two processes).
models::ClusterProfile soft_host_cluster(const SoftHostCalibration& c);

} // namespace tp::emu
