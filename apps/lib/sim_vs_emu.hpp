// Simulator against emulator: calibrate "the software device on this host" (emulator/host_calibration), then per
// transport and tensor size run the same transfer in the emulator (real threads, real bytes: measured) and in
// the simulator with the calibrated profile (predicted), and report the relative error of the prediction with its
// median and 90th percentile. Used by `tensorpath emulate --compare` and `tensorpath validate --slow`.
// Tests: tests/apps/sim_vs_emu_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "emulator/host_calibration.hpp"

#include <string>
#include <vector>

namespace tp::frontend {

struct SimVsEmuOptions {
  std::vector<std::string> transports; ///< empty: every registered transport
  std::vector<uint64_t> sizes;         ///< empty: 4 KiB to 256 MiB in steps of 4x
  int steps = 5;                       ///< per size (the first is first use; the rest give the steady latency)
  bool quick_calibration = false;
  /// Use a calibration that breaks check_calibration's invariants (a busy machine) instead of refusing it; the
  /// result then carries the reason in `calibration_warning`. For CI and smoke runs, whose errors are noise anyway.
  bool allow_disturbed_calibration = false;
  /// Emulated runs per transport after one warm-up run (not counted); each point is the median of its runs.
  int repeats = 3;
  /// A point whose emulated runs spread (max - min over the median) more than this is too noisy to judge the model:
  /// reported, left out of the error figures.
  double noise_limit = 0.10;
  /// Pin the calibration's and the emulated processes' threads to cores (emulator/core_pinning.hpp).
  bool pin = true;
};

struct SimVsEmuRow {
  std::string transport;
  uint64_t bytes = 0;
  double emulated = 0; ///< measured steady latency, seconds: the median of the runs
  double spread = 0;   ///< (max - min) / median of the emulated runs
  int runs = 0;
  double simulated = 0; ///< predicted steady latency, seconds
  bool bytes_ok = false;
  bool noisy = false; ///< spread above SimVsEmuOptions::noise_limit: not counted in the error figures
  double error() const { return emulated > 0 ? (simulated - emulated) / emulated : 0; }
};

struct SimVsEmuResult {
  emu::SoftHostCalibration calibration;
  std::string calibration_warning; ///< non-empty: the calibration broke an invariant and was used anyway (allowed)
  std::vector<SimVsEmuRow> rows;
  double median_abs_error = 0; ///< over the rows that are not noisy
  double p90_abs_error = 0;
  size_t judged = 0; ///< rows in the error figures
  double noise_limit = 0.10;
  std::string pinning; ///< where the emulator's threads ran (PinningReport::describe)
};

/// Median and 90th percentile (nearest rank) of |error| over the rows that are not noisy.
void summarize_errors(SimVsEmuResult& r);

Result<SimVsEmuResult> compare_sim_with_emulator(const SimVsEmuOptions& o);

/// The calibration, then one line per transport and size, then the error figures.
std::string sim_vs_emu_report(const SimVsEmuResult& r);

} // namespace tp::frontend
