// Simulator against emulator (see sim_vs_emu.hpp).
#include "apps/lib/sim_vs_emu.hpp"

#include "core/common/isolated_run.hpp"
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
    e.push_back(std::fabs(row.error()));
  if (e.empty()) return;
  std::sort(e.begin(), e.end());
  auto rank = [&](double q) { return e[size_t(std::max(0.0, std::ceil(q * double(e.size())) - 1))]; };
  r.median_abs_error = e.size() % 2 ? e[e.size() / 2] : (e[e.size() / 2 - 1] + e[e.size() / 2]) / 2;
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

Result<SimVsEmuResult> compare_sim_with_emulator(const SimVsEmuOptions& o)
{
  transports::register_builtin_transports();
  SimVsEmuResult res;
  auto cal = emu::measure_soft_host(o.quick_calibration);
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
    auto predicted = simulate(cluster, sj);
    if (!predicted.ok()) return predicted.error();
    emu::EmuTransferJob ej;
    ej.transport = name;
    ej.sizes = sizes;
    ej.steps = o.steps;
    ej.timeout = 120;
    auto measured = emu::run_emulated_transfer(ej);
    if (!measured.ok()) return Error::msg(name + " (emulator): " + measured.error().message());
    for (size_t i = 0; i < sizes.size(); ++i) {
      SimVsEmuRow row;
      row.transport = name;
      row.bytes = sizes[i];
      row.emulated = measured->points[i].steady_latency;
      row.simulated = predicted.value()[i];
      row.bytes_ok = measured->points[i].bytes_ok;
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
      "  8-byte WRITE {:.1f} us (then {:.1f} us; thread hand-off {:.1f} us), work item round trip {:.1f} us, "
      "serialization pass {:.1f} GB/s\n",
      c.write_latency * 1e6, c.write_latency_repeat * 1e6, c.handoff * 1e6, c.work_round_trip * 1e6,
      c.serialize_bandwidth * 1e-9);
  s += fmt::format(
      "  reg_mr+dereg_mr {:.2f} us + {:.3f} us/page, in-process RPC stream {:.1f} us one way, {:.2f} GB/s\n\n",
      c.register_fixed * 1e6, c.register_per_page * 1e6, c.stream_latency * 1e6, c.stream_bandwidth * 1e-9);
  if (!r.calibration_warning.empty())
    s += "  WARNING: this calibration broke an invariant and was used anyway; the errors below measure noise: " +
         r.calibration_warning + "\n\n";
  s += fmt::format("{:<10} {:>9} {:>14} {:>14} {:>9} {:>6}\n", "transport", "size", "emulated us", "simulated us",
                   "error", "bytes");
  for (const auto& row : r.rows)
    s += fmt::format("{:<10} {:>9} {:>14.1f} {:>14.1f} {:>8.1f}% {:>6}\n", row.transport, human_bytes(row.bytes),
                     row.emulated * 1e6, row.simulated * 1e6, row.error() * 100, row.bytes_ok ? "ok" : "WRONG");
  s += fmt::format("\n{} points: median |error| {:.1f} % (target <= 5 %), 90th percentile {:.1f} % (target <= 10 %)\n",
                   r.rows.size(), r.median_abs_error * 100, r.p90_abs_error * 100);
  return s;
}

} // namespace tp::frontend
