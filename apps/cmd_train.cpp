// `tensorpath train`: simulated synchronous training steps of a model on a cluster, per transport side by side:
// step time, images/s, scaling against one GPU, and where a step's time goes; --trace writes a Chrome trace.
#include "apps/commands.hpp"
#include "apps/lib/cli_common.hpp"
#include "apps/lib/hw_resolve.hpp"
#include "apps/lib/progress_line.hpp"
#include "apps/lib/training_report.hpp"
#include "core/collectives/library_defaults.hpp"
#include "core/common/isolated_run.hpp"
#include "core/transports/transport.hpp"
#include "models/catalog.hpp"
#include "models/tf_rpc_threads.hpp"
#include "models/workload/workload.hpp"

#include <cstdio>

namespace tp::cli {

namespace {

int run_train(const frontend::ParsedArgs& a)
{
  transports::register_builtin_transports();
  frontend::TrainingSpec spec;
  spec.hw = a.get("hw", "hkust-4node");
  spec.model = a.get("model", "vgg16");
  spec.fabric = a.get("fabric");
  spec.tf_version = a.get("tf");
  if (auto tv = a.has("tf") ? models::given_tf_rpc_threading(spec.tf_version, "tensorpath train --tf")
                            : models::tf_rpc_threading(spec.tf_version);
      !tv.ok())
    return report_error(tv.error());
  spec.switch_name = a.get("switch");
  // A bad --mode or --collective-mode is reported where run_training refused it before they were enums: after the
  // other options.
  const auto mode = training::parse_sync_mode(a.get("mode", "ps"));
  if (mode.ok()) spec.mode = mode.value();
  spec.fetch = a.get("fetch", "per_tower");
  const auto collective_mode = sim::parse_collective_mode(a.get("collective-mode", "protocol"));
  if (collective_mode.ok()) spec.collective_mode = collective_mode.value();
  auto list =
      frontend::transport_list(a.get("transport", "grpc,verbs_v1,verbs_v2,gdr"), "tensorpath train --transport");
  if (!list.ok()) return report_error(list.error());
  spec.transports = list.value();
  auto strat = memory::parse_strategy(a.get("strategy", "pool_visitor"));
  if (!strat.ok()) return report_error(strat.error());
  spec.strategy = strat.value();
  struct IntOpt {
    const char* name;
    int* dst;
    long def, lo, hi;
  };
  IntOpt ints[] = {{"batch", &spec.batch, 32, 1, 4096},
                   {"workers", &spec.workers, 0, 0, 100000000},
                   {"gpus-per-worker", &spec.gpus_per_worker, 0, 0, 64},
                   {"ps", &spec.ps_tasks, -1, -1, 100000},
                   {"steps", &spec.steps, 3, 2, 1000}};
  for (auto& o : ints) {
    auto v = a.get_int(o.name, o.def, o.lo, o.hi);
    if (!v.ok()) return report_error(v.error());
    *o.dst = int(v.value());
  }
  spec.precision = a.get("precision", "fp32");
  if (!models::known_precision(spec.precision))
    return report_error(Error::at("", "tensorpath train --precision", models::PRECISIONS, spec.precision));
  // Options of the other mode would be silently ignored: refuse them.
  if (mode.ok() && spec.mode == training::SyncMode::PARAMETER_SERVER)
    for (const char* o : {"library", "fusion", "tick-ms", "response-cache", "collective-mode", "symmetric-ranks"})
      if (a.has(o))
        return report_error(Error::at("", std::string("tensorpath train --") + o,
                                      "an allreduce option only with --mode allreduce", "--mode ps"));
  if (mode.ok() && spec.mode == training::SyncMode::ALLREDUCE)
    for (const char* o : {"ps", "fetch", "gpus-per-worker"})
      if (a.has(o))
        return report_error(Error::at("", std::string("tensorpath train --") + o,
                                      "a parameter-server option only with --mode ps", "--mode allreduce"));
  auto lib = collectives::parse_allreduce_library(a.get("library", "horovod"));
  if (!lib.ok()) {
    Error e = lib.error();
    e.field = "tensorpath train --library";
    return report_error(e);
  }
  spec.library = lib.value();
  spec.collectives = collectives::library_defaults(spec.library);
  if (a.has("fusion")) {
    auto f = a.get("fusion") == "0" ? Result<uint64_t>(uint64_t(0)) : a.get_size("fusion", 0);
    if (!f.ok()) return report_error(f.error());
    spec.collectives.fusion_threshold = f.value();
  }
  auto tick = a.get_number("tick-ms", spec.collectives.tick_seconds * 1e3, 1e-6, 10000);
  if (!tick.ok()) return report_error(tick.error());
  spec.collectives.tick_seconds = tick.value() * 1e-3;
  if (a.has("response-cache")) {
    const std::string v = a.get("response-cache");
    if (v != "on" && v != "off")
      return report_error(Error::at("", "tensorpath train --response-cache", "on or off", "\"" + v + "\""));
    spec.collectives.response_cache = v == "on";
  }
  if (auto st = frontend::apply_transport_flags(a, spec.transports, spec.transport_options, "tensorpath train");
      !st.ok())
    return report_error(st.error());
  if (auto st = frontend::check_collective_mode(spec); !st.ok()) return report_error(st.error());
  if (!mode.ok()) return report_error(mode.error());
  if (!collective_mode.ok() && spec.mode == training::SyncMode::ALLREDUCE) return report_error(collective_mode.error());
  spec.one_gpu_reference = !a.has("no-reference");
  spec.symmetric_ranks = a.has("symmetric-ranks");
  spec.collect_events = a.has("trace");
  frontend::ProgressLine line("train", frontend::ProgressLine::stderr_is_terminal());
  auto res = frontend::run_training(spec, [&line](double fraction, const std::string& what, double estimate) {
    line.set_estimate(estimate);
    line.update(fraction, what);
  });
  line.finish();
  if (!res.ok()) return report_error(res.error());
  if (a.has("trace")) {
    if (auto st = frontend::write_trace(res.value(), a.get("trace")); !st.ok()) return report_io_error(st.error());
  }
  if (a.has("json"))
    std::printf("%s\n", frontend::training_json(res.value()).c_str());
  else
    std::printf("%s", frontend::training_table(res.value()).c_str());
  return res->all_ok() ? 0 : 1;
}

} // namespace

Command train_command()
{
  frontend::CommandSpec s;
  s.name = "train";
  s.summary = "synchronous training steps of a model on a simulated cluster, per transport side by side";
  s.usage = "[--model NAME] [--hw PROFILE] [--transport NAMES|all] [--mode ps|allreduce] [options]";
  s.retired = {{"ar-chunk-trains", "chunk trains are the simulator's default for ar_grpc; --ar-chunk-by-chunk turns "
                                   "them off (docs/model.md \"Chunk trains\")"}};
  s.options = {
      {"model", 0, true, "NAME",
       "vgg16 (default), alexnet, resnet50, resnet101, resnet152, inception3, googlenet (tensorpath profiles lists "
       "GPUs)"},
      {"batch", 0, true, "N", "images per GPU per step (default 32)"},
      {"precision", 0, true, "P",
       "fp32 (default), tf32 or amp: the measured per-GPU compute used (a precision other than fp32 must have been "
       "measured on the host's GPU: H100/H200/A100 ResNet-50)"},
      {"hw", 0, true, "PROFILE", "host or cluster profile (default hkust-4node)"},
      {"switch", 0, true, "NAME", "switch profile (default: the cluster's)"},
      {"fabric", 0, true, "TCP", "TCP stack profile for the gRPC paths (tcp-ethernet, tcp-ipoib-datagram, ...)"},
      {"tf", 0, true, "VERSION",
       "TensorFlow release 1.0 to 1.15 (default 1.15): its gRPC threads carry every RPC's CPU work (1.0-1.5: one "
       "server and one client thread per process; 1.6 on: 8 and 8, a peer per client thread)"},
      {"transport", 0, true, "NAMES", "comma-separated transports or all (default grpc,verbs_v1,verbs_v2,gdr)"},
      {"mode", 0, true, "M", "ps (parameter server, default) or allreduce (ring, one rank per GPU)"},
      {"workers", 0, true, "N",
       "worker tasks (ps) or ranks (allreduce); default: one per host (ps), every GPU (allreduce)"},
      {"gpus-per-worker", 0, true, "G", "ps: GPUs (towers) per worker (default: all GPUs of a host)"},
      {"ps", 0, true, "N", "ps: parameter-server tasks (default: as many as workers)"},
      {"fetch", 0, true, "F",
       "ps: per_tower (every GPU pulls the variables, tf_cnn parameter_server; default) or per_worker (one pull "
       "per worker, copied to its GPUs, as distributed_replicated)"},
      {"library", 0, true, "L",
       "allreduce: whose defaults apply: horovod (>= 0.21: 1 ms cycle, 128 MiB fusion, response cache; default), "
       "horovod-0.20 (5 ms, 64 MiB, cache), baidu (5 ms tick, no fusion), tf-contrib-mpi (1 ms, no fusion), matex "
       "(no coordinator)"},
      {"fusion", 0, true, "SIZE", "allreduce: tensor fusion threshold (0 turns fusion off; default: the library's)"},
      {"tick-ms", 0, true, "MS", "allreduce: coordinator tick / Horovod cycle time (default: the library's)"},
      {"response-cache", 0, true, "on|off", "allreduce: Horovod's response cache (default: the library's)"},
      {"collective-mode", 0, true, "M",
       "allreduce: protocol (every ring segment through the transport, default) or analytical (rings timed on the "
       "analytical fabric: for hundreds of ranks; the mpi transport's path, with --mpi-optimal-path and "
       "--mpi-nonblocking-recv)"},
      {"symmetric-ranks", 0, false, "",
       "allreduce, --collective-mode analytical, identical hosts behind one switch: simulate two hosts' ranks and take "
       "every other host to run as they do (rings timed for every rank; memory no longer grows with the ranks, time "
       "far less than with every rank; docs/model.md \"Symmetric ranks\" says what it leaves out)"},
  };
  // The transports' own switches (core/transports/<name>: OptionKnob), where the mpi ones always stood.
  for (auto& o : frontend::transport_flag_options())
    s.options.push_back(std::move(o));
  s.options.insert(
      s.options.end(),
      std::initializer_list<frontend::OptionSpec>{
          {"strategy", 0, true, "S",
           "memory strategy: on_demand, on_demand_cached, staging_copy, pool_visitor (default), graph_aware"},
          {"steps", 0, true, "K", "steps per run, the first is a warm-up (default 3)"},
          {"no-reference", 0, false, "", "skip the 1-GPU reference run (no scaling efficiency)"},
          {"trace", 0, true, "FILE", "Chrome trace (Perfetto) of the last step of the first transport"},
          {"json", 0, false, "", "machine-readable output"},
      });
  s.details =
      "Each run is its own process. Example: tensorpath train --model vgg16 --hw hkust-4node --batch 32\n"
      "Defaults are the real systems' defaults: in allreduce mode Horovod's (>= 0.21: cycle 1 ms, fusion 128 MiB,\n"
      "response cache on; --library picks another library's), and the report prints the ones in force.\n"
      "A run beyond the budget (memory, TENSORPATH_TIME_LIMIT) is refused with its estimate (docs/cli.md).";
  return {s, &run_train};
}

} // namespace tp::cli
