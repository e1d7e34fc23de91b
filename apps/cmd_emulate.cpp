// `tensorpath emulate`: tensors between emulated processes (real threads, real memory, the software verbs
// device) through each transport, with every received byte checked; per-transfer records in the simulator's
// format. The same transport source files as `tensorpath transfer`.
#include "apps/commands.hpp"
#include "apps/lib/cli_common.hpp"
#include "apps/lib/sim_vs_emu.hpp"
#include "core/common/file_io.hpp"
#include "emulator/ibv_device.hpp"
#include "emulator/job_estimate.hpp"
#include "emulator/training_job.hpp"
#include "emulator/transfer_job.hpp"
#include "models/workload/workload.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>

namespace tp::cli {

namespace {

/// --compare: the simulator's prediction (calibrated software-device profile) against the emulator's measurement.
int run_compare(const frontend::ParsedArgs& a, const std::vector<std::string>& names)
{
  frontend::SimVsEmuOptions o;
  o.transports = names;
  if (a.has("size") || a.has("sweep")) {
    auto sizes = frontend::size_list(a, 1 << 20);
    if (!sizes.ok()) return report_error(sizes.error());
    o.sizes = sizes.value();
    for (uint64_t s : o.sizes) // real bytes: refused up front when this machine cannot hold them
      if (auto st = emu::check_emulated_size(s, a.has("size") ? "--size" : "--sweep"); !st.ok())
        return report_error(st.error());
  }
  auto steps = a.get_int("steps", 5, 2, 1000);
  if (!steps.ok()) return report_error(steps.error());
  o.steps = int(steps.value());
  o.allow_disturbed_calibration = a.has("allow-disturbed-calibration");
  auto repeats = a.get_int("repeats", 3, 1, 100);
  if (!repeats.ok()) return report_error(repeats.error());
  o.repeats = int(repeats.value());
  o.pin = !a.has("no-pin");
  std::printf("Simulator (calibrated profile of the software device on this host) against the emulator, host "
              "tensors, steady-state latency\n\n");
  std::fflush(stdout);
  auto r = frontend::compare_sim_with_emulator(o);
  if (!r.ok()) return report_error(r.error());
  std::fputs(frontend::sim_vs_emu_report(r.value()).c_str(), stdout);
  if (a.has("json")) {
    nlohmann::json j;
    j["median_abs_error"] = r->median_abs_error;
    if (!r->calibration_warning.empty()) j["calibration_warning"] = r->calibration_warning;
    j["p90_abs_error"] = r->p90_abs_error;
    j["points_judged"] = r->judged;
    j["noise_limit"] = r->noise_limit;
    j["pinning"] = r->pinning;
    const auto& c = r->calibration;
    j["calibration"] = {{"memcpy_l2_bandwidth", c.memcpy_l2_bandwidth},
                        {"memcpy_llc_bandwidth", c.memcpy_llc_bandwidth},
                        {"memcpy_dram_bandwidth", c.memcpy_dram_bandwidth},
                        {"write_latency", c.write_latency},
                        {"handoff", c.handoff},
                        {"wire_op_time", c.wire_op_time},
                        {"work_round_trip", c.work_round_trip},
                        {"timer_1us", c.timer_1us},
                        {"stream_latency", c.stream_latency},
                        {"stream_bandwidth", c.stream_bandwidth}};
    j["rows"] = nlohmann::json::array();
    for (const auto& row : r->rows)
      j["rows"].push_back({{"transport", row.transport},
                           {"bytes", row.bytes},
                           {"emulated", row.emulated},
                           {"spread", row.spread},
                           {"runs", row.runs},
                           {"noisy", row.noisy},
                           {"simulated", row.simulated},
                           {"error", row.error()},
                           {"bytes_ok", row.bytes_ok}});
    if (auto st = io::write_file_atomically(a.get("json"), j.dump(1) + "\n"); !st.ok())
      return report_io_error(st.error());
  }
  for (const auto& row : r->rows)
    if (!row.bytes_ok) return 1;
  return 0;
}

/// --train MODEL: scaled-down synchronous training steps on emulated processes, per transport.
int run_train(const frontend::ParsedArgs& a, const std::vector<std::string>& names)
{
  const std::string gpu = a.get("gpu", "k40m");
  auto batch = a.get_int("batch", 32, 1, 4096);
  auto workers = a.get_int("workers", 2, 1, 64);
  auto ps = a.get_int("ps", 1, 0, 64);
  auto towers = a.get_int("gpus-per-worker", 1, 1, 16);
  auto steps = a.get_int("steps", 3, 2, 1000);
  for (auto* r : {&batch, &workers, &ps, &towers, &steps})
    if (!r->ok()) return report_error(r->error());
  const auto mode = training::parse_sync_mode(a.get("mode", "ps"));
  if (!mode.ok()) return report_error(Error::at("", "--mode", mode.error().expected, mode.error().got));
  const bool ps_mode = mode.value() == training::SyncMode::PARAMETER_SERVER;
  auto scale_r = a.get_number("scale", 0.01, 1e-9, 1);
  if (!scale_r.ok()) return report_error(scale_r.error());
  const double scale = scale_r.value();
  models::WorkloadLibrary lib;
  auto wl = lib.make(a.get("train"), gpu, int(batch.value()));
  if (!wl.ok()) return report_error(wl.error());
  const training::TrainingModel model = models::to_training_model(wl.value());
  emu::EmuTrainingJob job;
  job.mode = mode.value();
  job.workers = int(workers.value());
  job.ps_tasks = int(ps.value());
  job.gpus_per_worker = int(towers.value());
  job.fetch_per_worker = a.get("fetch", "per_tower") == "per_worker";
  job.steps = int(steps.value());
  job.scale = scale;
  auto st = memory::parse_strategy(a.get("strategy", "pool_visitor"));
  if (!st.ok()) return report_error(st.error());
  job.strategy = st.value();
  const auto scaled = emu::scale_model(model, scale);
  std::printf("Emulated training: %s (batch %lld on %s, scaled by %g: %.2f MB of variables, %.2f ms of compute per "
              "step), %s, %d worker(s)%s, %d step(s) (first is warm-up)\n\n",
              model.name.c_str(), static_cast<long long>(batch.value()), gpu.c_str(), scale, scaled.bytes() * 1e-6,
              scaled.compute_seconds() * 1e3, ps_mode ? "parameter servers" : "ring allreduce", job.workers,
              ps_mode ? fmt::format(" x {} GPU(s), {} PS", job.gpus_per_worker, job.ps_tasks).c_str() : "", job.steps);
  JobEstimate need;
  need.job = "tensorpath emulate --train";
  for (const auto& n : names) {
    emu::EmuTrainingJob j = job;
    j.transport = n;
    need.then(emu::estimate_emulated_training(scaled, j));
  }
  if (auto st = check_budget(need, "use a smaller --scale, fewer --workers, --steps or transports"); !st.ok())
    return report_error(st.error());
  std::printf("%-10s %6s %12s %14s %12s\n", "transport", "tasks", "step [ms]", "network MB/step", "compute [ms]");
  int status = 0;
  for (const auto& n : names) {
    emu::EmuTrainingJob j = job;
    j.transport = n;
    auto r = emu::run_emulated_training(model, j);
    if (!r.ok()) {
      std::printf("%-10s ERROR %s\n", n.c_str(), r.error().message().c_str());
      status = 1;
      continue;
    }
    // Bytes between tasks per step: PS pushes and pulls, or every rank's ring traffic (2 (N-1)/N of the model each).
    const double net = !ps_mode ? 2.0 * (j.workers - 1) * double(r->model_bytes) : double(r->remote_bytes_per_step);
    std::printf("%-10s %6d %12.2f %14.2f %12.2f\n", n.c_str(), r->tasks, r->step_time * 1e3, net * 1e-6,
                r->compute_seconds * 1e3);
  }
  std::printf("\nwall-clock step times of emulated processes (threads of this process) moving real bytes; GPU "
              "kernels are sleeps of their scaled duration.\n");
  return status;
}

int run_emulate(const frontend::ParsedArgs& a)
{
  transports::register_builtin_transports();
  if (!a.has("compare")) // the comparison's own options are refused rather than ignored without it
    for (const char* o : {"json", "allow-disturbed-calibration", "repeats", "no-pin"})
      if (a.has(o))
        return report_error(Error::at("", std::string("--") + o,
                                      "--compare beside it (it applies to the comparison only)", "no --compare"));
  if (a.has("train")) {
    auto list = frontend::transport_list(a.get("transport", "all"), "tensorpath emulate --transport");
    if (!list.ok()) return report_error(list.error());
    return run_train(a, list.value());
  }
  if (a.has("compare")) {
    auto list = frontend::transport_list(a.get("transport", "all"), "tensorpath emulate --transport");
    if (!list.ok()) return report_error(list.error());
    return run_compare(a, list.value());
  }
  const std::string device = a.get("device", "soft");
  if (device != "soft" && device != "ibv" && device.rfind("ibv:", 0) != 0)
    return report_error(Error::at("", "--device", "soft, ibv or ibv:NAME", "\"" + device + "\""));
  if (device != "soft") {
    auto devs = emu::IbvDevice::list();
    if (!devs.ok()) { // this machine has no RDMA device: nothing to run on, which is not a mistake of the user's
      std::fprintf(stderr, "tensorpath emulate: skipped: no device (%s)\n", devs.error().message().c_str());
      return exit_code::SKIPPED;
    }
  }
  auto list = frontend::transport_list(a.get("transport", "all"), "tensorpath emulate --transport");
  if (!list.ok()) return report_error(list.error());
  const std::vector<std::string> names = list.value();
  emu::EmuTransferJob job;
  job.device = device;
  auto st = memory::parse_strategy(a.get("strategy", "pool_visitor"));
  if (!st.ok()) return report_error(st.error());
  job.strategy = st.value();
  auto src = frontend::parse_placement(a.get("src", "cpu"), "--src");
  auto dst = frontend::parse_placement(a.get("dst", "cpu"), "--dst");
  if (!src.ok()) return report_error(src.error());
  if (!dst.ok()) return report_error(dst.error());
  job.src = src.value();
  job.dst = dst.value();
  auto steps = a.get_int("steps", 5, 1, 1000);
  if (!steps.ok()) return report_error(steps.error());
  job.steps = int(steps.value());
  auto sizes = frontend::size_list(a, 1 << 20);
  if (!sizes.ok()) return report_error(sizes.error());
  job.sizes = sizes.value();
  for (uint64_t s : job.sizes) // real bytes: refused up front when this machine cannot hold them
    if (auto st = emu::check_emulated_size(s, a.has("size") ? "--size" : "--sweep"); !st.ok())
      return report_error(st.error());
  job.os_processes = a.has("processes");
  if (job.os_processes && device != "soft")
    return report_error(Error::at("", "--processes", "the software device (--device soft)", device));
  JobEstimate need;
  need.job = "tensorpath emulate";
  for (const auto& n : names) {
    emu::EmuTransferJob j = job;
    j.transport = n;
    need.then(emu::estimate_emulated_transfer(j));
  }
  if (auto st = check_budget(need, "use a smaller --size, fewer --steps or transports"); !st.ok())
    return report_error(st.error());
  transports::TransferLog all;
  int status = 0;
  std::printf("Emulated transfers %s -> %s (%s, %s), strategy %s, %d step(s) per size\n\n", a.get("src", "cpu").c_str(),
              a.get("dst", "cpu").c_str(),
              device == "soft" ? "software verbs device" : ("libibverbs device " + device).c_str(),
              job.os_processes ? "two OS processes: shared memory + TCP" : "threads of this process",
              memory::to_string(job.strategy), job.steps);
  std::printf("%-10s %11s %12s %12s %10s %6s\n", "transport", "bytes", "first[us]", "steady[us]", "GB/s", "bytes");
  for (const auto& n : names) {
    emu::EmuTransferJob j = job;
    j.transport = n;
    auto r = emu::run_emulated_transfer(j);
    if (!r.ok()) {
      std::printf("%-10s ERROR %s\n", n.c_str(), r.error().message().c_str());
      status = 1;
      continue;
    }
    for (const auto& p : r->points) {
      std::printf("%-10s %11llu %12.1f %12.1f %10.3f %6s\n", n.c_str(), static_cast<unsigned long long>(p.bytes),
                  p.first_latency * 1e6, p.steady_latency * 1e6, p.bandwidth * 1e-9, p.bytes_ok ? "ok" : "WRONG");
      if (!p.bytes_ok) status = 1;
    }
    for (const auto& rec : r->records.records())
      all.add(rec);
  }
  if (a.has("records"))
    if (auto w = frontend::write_records(a.get("records"), all); !w.ok()) return report_io_error(w.error());
  std::printf("\nwall-clock latencies on this machine; 'bytes': every received tensor compared with what was sent.\n");
  return status;
}

} // namespace

Command emulate_command()
{
  frontend::CommandSpec s;
  s.name = "emulate";
  s.summary = "tensors between emulated processes (software verbs device, real bytes), per transport";
  s.usage = "[--transport NAMES|all] [--size N | --sweep] [--src P] [--dst P] [--strategy S] [--steps K] [options]";
  s.options = {
      {"transport", 0, true, "NAMES", "comma-separated transports, or all (default)"},
      {"size", 's', true, "N", "tensor size in bytes, K/M/G suffixes (default 1M)"},
      {"sweep", 0, false, "", "sizes 4 KiB to 256 MiB, x4 steps"},
      {"src", 0, true, "P", "producer placement: cpu, numaN or gpuN (emulated in host memory)"},
      {"dst", 0, true, "P", "consumer placement"},
      {"strategy", 0, true, "S", "memory strategy (default pool_visitor)"},
      {"steps", 0, true, "K", "transfers per size; the first is first use (default 5)"},
      {"device", 0, true, "D",
       "soft (the software verbs device; default), ibv or ibv:NAME (libibverbs: hardware or rxe soft-RoCE)"},
      {"records", 0, true, "FILE", "per-transfer records of both sides: FILE.json or FILE.csv"},
      {"train", 0, true, "MODEL",
       "scaled-down synchronous training steps of MODEL (vgg16, resnet50, ...) instead of single transfers"},
      {"scale", 0, true, "F", "--train: multiply variable bytes and compute by F (default 0.01)"},
      {"mode", 0, true, "M", "--train: ps (default) or allreduce"},
      {"workers", 0, true, "N", "--train: worker tasks or allreduce ranks (default 2)"},
      {"ps", 0, true, "K", "--train: parameter-server tasks (default 1)"},
      {"gpus-per-worker", 0, true, "G", "--train: towers per worker (default 1)"},
      {"fetch", 0, true, "F", "--train: per_tower (default) or per_worker variable fetch"},
      {"gpu", 0, true, "PROFILE", "--train: GPU whose measured throughput gives the compute (default k40m)"},
      {"batch", 0, true, "B", "--train: images per GPU per step (default 32)"},
      {"processes", 0, false, "",
       "producer and consumer as two OS processes (forked): the software device between them over shared memory "
       "and a Unix-socket link, the RPC streams over TCP on 127.0.0.1"},
      {"json", 0, true, "FILE", "--compare: also write the table as JSON (scripts/plot.py sim-vs-emu draws it)"},
      {"compare", 0, false, "",
       "calibrate a profile of the software device on this host, then print the simulator's prediction against the "
       "emulator's measurement per transport and size (4 KiB-256 MiB unless --size/--sweep) with the median and "
       "90th-percentile error"},
      {"repeats", 0, true, "R",
       "--compare: emulated runs per transport after a warm-up run (default 3); a point is their median, and one whose "
       "runs spread more than 10 % is reported as too noisy instead of judged"},
      {"no-pin", 0, false, "",
       "--compare: leave the emulator's threads where the scheduler puts them (default: pinned to cores round-robin, "
       "the calibration's too)"},
      {"allow-disturbed-calibration", 0, false, "",
       "--compare: use a calibration that breaks its invariants (LLC slower than DRAM, unstable latency: a busy "
       "machine) with a warning instead of refusing it"},
  };
  s.details = "The emulated processes are threads of this process (a real event loop each), or with --processes two\n"
              "OS processes; every received byte is checked.";
  return {s, &run_emulate};
}

} // namespace tp::cli
