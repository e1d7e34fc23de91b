// Training runs for the CLI and scenarios: resolve the hardware and the workload, run one simulated training
// job per transport (each in its own process) plus a 1-GPU reference, and report step time, images/s,
// scaling efficiency and the step breakdown as a table, JSON, or a Chrome trace (trace-event JSON for
// Perfetto / chrome://tracing). Tests: tests/apps/cli_test.cpp, tests/sim/training_test.cpp.
#pragma once

#include "core/collectives/library_defaults.hpp"
#include "core/common/result.hpp"
#include "core/memory/tensor_memory.hpp"
#include "core/transports/transport.hpp"
#include "sim/training_job.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tp::frontend {

struct TrainingSpec {
  std::string hw = "hkust-4node";   ///< host or cluster profile
  std::string model = "vgg16";      ///< an architecture name, or "synthetic" (the three fields below)
  int64_t synthetic_parameters = 0; ///< synthetic: fp32 parameters, split evenly over the layers
  int synthetic_layers = 0;         ///< synthetic: layers, one variable each
  double synthetic_compute_ms = 0;  ///< synthetic: one GPU's forward + backward per step (1/3 + 2/3)
  /// synthetic: take the variable list from this model (models/workload/language_model.hpp) instead of
  /// `parameters` / `layers`; compute_ms is split over its layers in proportion to their forward FLOPs.
  std::string synthetic_variables_of;
  int batch = 32;
  /// The arithmetic of the measured per-GPU compute: fp32 (default), tf32 or amp (models/workload/workload.hpp).
  std::string precision = "fp32";
  training::SyncMode mode = training::SyncMode::PARAMETER_SERVER; ///< "ps" or "allreduce"
  std::vector<std::string> transports{"grpc"};
  memory::StrategyKind strategy = memory::StrategyKind::POOL_VISITOR;
  int workers = 0;           ///< 0: default (one per host in ps mode, one per GPU in allreduce mode)
  int gpus_per_worker = 0;   ///< 0: every GPU of the host (ps mode)
  int ps_tasks = -1;         ///< -1: as many as workers
  bool ps_own_hosts = false; ///< ps: the PS tasks run on hosts of their own, after the workers' hosts
  int steps = 3;
  std::string fabric; ///< TCP profile override
  /// The TensorFlow release whose gRPC threads the processes have (models/tf_rpc_threads.hpp; empty: 1.15).
  std::string tf_version;
  std::string nic;                 ///< NIC profile override (every host's NICs; their sockets and PCIe stay)
  std::string switch_name;         ///< switch override
  std::string fetch = "per_tower"; ///< ps: per_tower (tf_cnn parameter_server) or per_worker (distributed_replicated)
  bool one_gpu_reference = true;
  int ranks_per_host = 0; ///< allreduce: 0 = every GPU of a host
  /// allreduce: the library whose defaults apply (Horovod's unless named), and the options in force (its defaults
  /// with the job's overrides): coordinator tick, fusion, response cache, MaTEx mode.
  collectives::AllreduceLibrary library = collectives::AllreduceLibrary::HOROVOD;
  collectives::EngineOptions collectives = collectives::library_defaults(collectives::AllreduceLibrary::HOROVOD);
  bool initial_broadcast = false; ///< allreduce: broadcast the variables first (MaTEx)
  bool allreduce_on_host = false; ///< allreduce: reduce in host memory (MaTEx's CPU TfReduce)
  /// allreduce: protocol (through the transport) or analytical
  sim::FabricMode collective_mode = sim::FabricMode::PROTOCOL;
  /// allreduce, analytical rings: two hosts' ranks simulated for every identical host
  /// (sim::TrainingJob::symmetric_ranks)
  bool symmetric_ranks = false;
  transports::TransportOptions transport_options;
  bool collect_events = false; ///< keep the first transport's last-step events (for a trace)
  sim::FaultPlan faults;       ///< injected into every transport's run (not the 1-GPU reference)
  double stall_timeout = 1000; ///< simulated seconds before a step is reported as a hang
  /// Network model tcp-incast (ps mode; sim/incast_ports.hpp); false: the flow model alone.
  bool tcp_incast = false;
  /// With tcp_incast: bytes each switch port toward a receiver holds; 0: the share of the switch profile's buffer.
  uint64_t tcp_port_buffer = 0;
  /// Network model roce (allreduce, rings timed analytically): the RoCE fabric whose congestion each ring waits
  /// (sim::TrainingJob::roce_fabric); unset: none.
  std::optional<models::RoceConfig> roce_fabric;
};

struct TrainingRun {
  std::string transport;
  std::string error; ///< non-empty: the run failed
  sim::TrainingResult result;
};

struct TrainingReport {
  TrainingSpec spec;
  std::string cluster;        ///< cluster description
  std::string gpu;            ///< GPU profile the compute is taken for
  std::string provenance;     ///< how the per-step compute was obtained
  double compute_seconds = 0; ///< one GPU's forward + backward per step
  uint64_t model_bytes = 0;
  std::optional<sim::TrainingResult> reference; ///< 1 GPU, variables on its host's CPU
  std::vector<TrainingRun> runs;
  /// No run ended in an error, and none failed or stalled under injected faults.
  bool all_ok() const;
  /// images/s of a run over (GPUs x the 1-GPU reference's images/s); 0 without a reference.
  double scaling_efficiency(const sim::TrainingResult& r) const;
  double speedup_over_one_gpu(const sim::TrainingResult& r) const;
};

/// What a long run shows: the fraction of the whole done (0..1), what of what ("grpc (1/5): step 2/3") and the
/// estimated seconds of the whole.
using TrainingProgress = std::function<void(double fraction, const std::string& what, double estimate)>;

/// Every run of the spec, each in its own process, one after the other; refused up front (sim/job_estimate) when
/// all of them together exceed the budget (core/common/resource_estimate.hpp).
Result<TrainingReport> run_training(const TrainingSpec& spec, const TrainingProgress& progress = {});
/// An analytical collective mode models the mpi transport's path with raw-buffer messages and non-blocking receives
/// only (sim/fabric_modes.hpp): any other combination is refused up front, naming what to set.
Status check_collective_mode(const TrainingSpec& spec);
/// The runs that failed, one line each ("verbs_v1: failed in step 2 (...)", "grpc: stalled in step 2", "mpi: ERROR
/// ..."): a run that ended in an error, or whose transfers failed or whose step never finished under faults.
std::vector<std::string> failed_runs(const TrainingReport& r);
std::string training_table(const TrainingReport& r);
std::string training_json(const TrainingReport& r);
/// Metrics of a report by name: per transport T "step_ms.T", "images_per_second.T", "scaling_efficiency.T",
/// "speedup_over_one_gpu.T", "network_ms.T" (critical path), and "speedup.A_over_B" (step of B / step of A);
/// with a single transport also the names without ".T".
std::map<std::string, double> training_metrics(const TrainingReport& r);

/// Chrome trace of the first run that kept its events (spec.collect_events); error if none did.
Status write_trace(const TrainingReport& r, const std::string& path);
/// The trace JSON text itself (for tests): hosts and tracks mapped here, written through
/// traces/chrome_trace_writer.hpp.
std::string chrome_trace(const sim::TrainingResult& r);

} // namespace tp::frontend
