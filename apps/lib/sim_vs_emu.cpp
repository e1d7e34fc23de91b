// Simulator against emulator (see sim_vs_emu.hpp).
#include "apps/lib/sim_vs_emu.hpp"

#include "core/common/isolated_run.hpp"
#include "core/common/median.hpp"
#include "core/transports/ar_grpc/ar_grpc.hpp"
#include "emulator/core_pinning.hpp"
#include "emulator/transfer_job.hpp"
#include "sim/transfer_job.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace tp::frontend {

void summarize_errors(SimVsEmuResult& r)
{
  std::vector<double> e;
  for (const auto& row : r.rows)
    if (!row.noisy) e.push_back(std::fabs(row.error()));
  r.judged = e.size();
  if (e.empty()) return;
  std::sort(e.begin(), e.end());
  auto rank = [&](double q) { return e[size_t(std::max(0.0, std::ceil(q * double(e.size())) - 1))]; };
  r.median_abs_error = median(e);
  r.p90_abs_error = rank(0.9);
}

namespace {

/// The simulator's steady latency per size, in a child process (one SimGrid simulation per process).
Result<std::vector<double>> simulate(const models::ClusterProfile& cluster, const sim::TransferJob& job)
{
  auto child = run_isolated(
      [&]() -> Result<std::string> {
        auto r = sim::run_transfer_job(cluster, job);
        if (!r.ok()) return r.error();
        std::ostringstream out;
        out.precision(17);
        for (const auto& p : r->points)
          out << p.steady_latency << "\n";
        return out.str();
      },
      600);
  if (!child.ok()) return child.error();
  std::vector<double> v;
  std::istringstream in(child.value());
  for (double x; in >> x;)
    v.push_back(x);
  if (v.size() != job.sizes.size())
    return Error::msg(job.transport + ": the simulation returned " + std::to_string(v.size()) + " sizes of " +
                      std::to_string(job.sizes.size()));
  return v;
}

std::string human_bytes(uint64_t n)
{
  if (n >= (1ull << 20)) return std::to_string(n >> 20) + " MiB";
  if (n >= 1024) return std::to_string(n >> 10) + " KiB";
  return std::to_string(n) + " B";
}

} // namespace

namespace {

/// Threads pinned at most: the calibration's measuring thread, two loops' event loop and worker, and the two software
/// fabrics it makes one after the other (an emulated transfer pins five: two processes' loop and worker, a fabric).
/// Pinning each to its own core needs this many.
constexpr int EMULATION_THREADS = 7;

/// Turns pinning off when it goes out of scope, whichever way the comparison ends.
struct PinningOff {
  ~PinningOff() { emu::set_thread_pinning(false); }
};

/// `repeats` emulated runs of `job` after one warm-up run, each on the same thread placement.
Result<std::vector<emu::EmuTransferResult>> emulate_repeatedly(const emu::EmuTransferJob& job, int repeats, bool pin,
                                                               std::string& pinning)
{
  std::vector<emu::EmuTransferResult> runs;
  PinningOff off;
  for (int k = 0; k <= repeats; ++k) {
    emu::set_thread_pinning(pin, EMULATION_THREADS); // the round-robin starts again: every run places its threads alike
    auto r = emu::run_emulated_transfer(job);
    if (pin) pinning = emu::pinning_report().describe();
    if (!r.ok()) return r.error();
    if (k > 0) runs.push_back(std::move(r.value())); // the first warms up caches, pools and page tables
  }
  return runs;
}

} // namespace

Result<SimVsEmuResult> compare_sim_with_emulator(const SimVsEmuOptions& o)
{
  transports::register_builtin_transports();
  if (o.repeats < 1) return Error::at("", "repeats", "at least 1", std::to_string(o.repeats));
  SimVsEmuResult res;
  res.noise_limit = o.noise_limit;
  res.pinning = "threads not pinned";
  Result<emu::SoftHostCalibration> cal = Error::msg("not measured");
  {
    PinningOff off;
    emu::set_thread_pinning(o.pin, EMULATION_THREADS);
    cal = emu::measure_soft_host(o.quick_calibration);
  }
  if (!cal.ok()) return cal.error();
  res.calibration = cal.value();
  if (auto inv = emu::check_calibration(res.calibration); !inv.ok()) {
    if (!o.allow_disturbed_calibration) return inv.error();
    res.calibration_warning = inv.error().message();
    std::fprintf(stderr, "tensorpath: warning: using a disturbed calibration (--allow-disturbed-calibration): %s\n",
                 res.calibration_warning.c_str());
  }
  const models::ClusterProfile cluster = emu::soft_host_cluster(res.calibration);
  std::vector<std::string> names = o.transports.empty() ? transports::transport_names() : o.transports;
  std::vector<uint64_t> sizes = o.sizes;
  if (sizes.empty())
    for (uint64_t n = 4096; n <= (256ull << 20); n *= 4)
      sizes.push_back(n);
  for (const auto& name : names) {
    sim::TransferJob sj;
    sj.transport = name;
    sj.sizes = sizes;
    sj.steps = o.steps;
    sj.gpudirect_gpus = {};
    // The emulator reads AR-gRPC's chunks one by one (its device does not charge a train as its chunks); so does the
    // prediction here, which is of that protocol.
    sj.options.own<transports::ArGrpcOptions>().chunk_trains = false;
    auto predicted = simulate(cluster, sj);
    if (!predicted.ok()) return predicted.error();
    emu::EmuTransferJob ej;
    ej.transport = name;
    ej.sizes = sizes;
    ej.steps = o.steps;
    ej.timeout = 120;
    auto measured = emulate_repeatedly(ej, o.repeats, o.pin, res.pinning);
    if (!measured.ok()) return Error::msg(name + " (emulator): " + measured.error().message());
    for (size_t i = 0; i < sizes.size(); ++i) {
      SimVsEmuRow row;
      row.transport = name;
      row.bytes = sizes[i];
      std::vector<double> lat;
      row.bytes_ok = true;
      for (const auto& run : measured.value()) {
        lat.push_back(run.points[i].steady_latency);
        row.bytes_ok = row.bytes_ok && run.points[i].bytes_ok;
      }
      row.runs = int(lat.size());
      row.emulated = median(lat);
      const auto [lo, hi] = std::minmax_element(lat.begin(), lat.end());
      row.spread = row.emulated > 0 ? (*hi - *lo) / row.emulated : 0;
      row.noisy = row.spread > o.noise_limit;
      row.simulated = predicted.value()[i];
      res.rows.push_back(row);
    }
  }
  summarize_errors(res);
  return res;
}

std::string sim_vs_emu_report(const SimVsEmuResult& r)
{
  const auto& c = r.calibration;
  std::string s;
  s += fmt::format("Software device on this host, calibrated in {:.1f} s:\n", c.seconds_spent);
  s += fmt::format("  memcpy {:.1f} / {:.1f} / {:.1f} GB/s (L2 {:.0f} KiB / LLC {:.0f} MiB / DRAM), call {:.0f} ns\n",
                   c.memcpy_l2_bandwidth * 1e-9, c.memcpy_llc_bandwidth * 1e-9, c.memcpy_dram_bandwidth * 1e-9,
                   c.l2_size / 1024, c.l3_size / 1048576, c.memcpy_call_overhead * 1e9);
  s += fmt::format(
      "  8-byte WRITE {:.1f} us (then {:.1f} us; thread hand-off {:.1f} us; {:.1f} us each in a burst of 32), work "
      "item round trip {:.1f} us, 1 us timer {:.1f} us, serialization pass {:.1f} GB/s\n",
      c.write_latency * 1e6, c.write_latency_repeat * 1e6, c.handoff * 1e6, c.wire_op_time * 1e6,
      c.work_round_trip * 1e6, c.timer_1us * 1e6, c.serialize_bandwidth * 1e-9);
  s += fmt::format(
      "  reg_mr+dereg_mr {:.2f} us + {:.3f} us/page, in-process RPC stream {:.1f} us one way, {:.2f} GB/s\n\n",
      c.register_fixed * 1e6, c.register_per_page * 1e6, c.stream_latency * 1e6, c.stream_bandwidth * 1e-9);
  if (!r.calibration_warning.empty())
    s += "  WARNING: this calibration broke an invariant and was used anyway; the errors below measure noise: " +
         r.calibration_warning + "\n\n";
  s += "  " + r.pinning + "\n\n";
  s += fmt::format("{:<10} {:>9} {:>14} {:>8} {:>14} {:>9} {:>6}\n", "transport", "size", "emulated us", "spread",
                   "simulated us", "error", "bytes");
  for (const auto& row : r.rows)
    s += fmt::format("{:<10} {:>9} {:>14.1f} {:>7.1f}% {:>14.1f} {:>8.1f}% {:>6}{}\n", row.transport,
                     human_bytes(row.bytes), row.emulated * 1e6, row.spread * 100, row.simulated * 1e6,
                     row.error() * 100, row.bytes_ok ? "ok" : "WRONG", row.noisy ? "  too noisy" : "");
  const int runs = r.rows.empty() ? 0 : r.rows[0].runs;
  s +=
      fmt::format("\nemulated: the median of {} run{} after a warm-up run; spread: (max - min) / median of those runs. "
                  "A point whose spread exceeds {:.0f} % is too noisy to judge the model and is left out below.\n",
                  runs, runs == 1 ? "" : "s", r.noise_limit * 100);
  if (r.judged == 0)
    s += fmt::format("0 of {} points judged: every point too noisy, nothing to say about the model on this machine\n",
                     r.rows.size());
  else
    s += fmt::format("{} of {} points judged: median |error| {:.1f} % (target <= 5 %), 90th percentile {:.1f} % "
                     "(target <= 10 %)\n",
                     r.judged, r.rows.size(), r.median_abs_error * 100, r.p90_abs_error * 100);
  return s;
}

} // namespace tp::frontend
