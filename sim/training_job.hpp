// Training steps on the simulated cluster: every task (workers, parameter servers, or allreduce ranks) is a
// process on a host with its own transport, memory strategy and rendezvous; the step graph is built from the
// model, partitioned, and each task's executor runs its share. Steps run one after the other (the sync
// barrier of synchronous SGD); the first is a warm-up (connections, registrations, pool growth). The steps are
// the training driver's (core/jobs/training_driver.hpp), which the emulator's training job runs too; this job places
// the tasks on the cluster's hosts and adds what only the simulator has: analytical rings, fault injection, stall
// diagnosis, link tracing. Returns step times, images/s, a per-step breakdown and, on request, the events for a
// Chrome trace.
#pragma once

#include "core/collectives/engine.hpp"
#include "core/jobs/training_driver.hpp"
#include "core/training/executor.hpp"
#include "core/training/training_model.hpp"
#include "core/transports/task_runtime.hpp"
#include "models/congestion/roce_fabric.hpp"
#include "models/host_model.hpp"
#include "models/tf_rpc_threads.hpp"
#include "sim/fabric_modes.hpp"
#include "sim/fault_plan.hpp"
#include "sim/simulation.hpp"

#include <optional>
#include <string>
#include <vector>

namespace tp::sim {

struct TrainingLayout {
  using Mode = training::SyncMode;
  Mode mode = Mode::PARAMETER_SERVER;
  int workers = 1;         ///< worker tasks (PS) or ranks (allreduce)
  int gpus_per_worker = 1; ///< PS: towers per worker; allreduce: 1
  int ps_tasks = 1;        ///< PS: 0 keeps the variables on the single worker's CPU (1-GPU reference)
  bool aggregate_on_worker = true;
  bool fetch_per_worker = false;  ///< PS: one pull per worker (distributed_replicated) instead of one per tower
  bool allreduce_on_host = false; ///< allreduce: gradients reduced in host memory (MaTEx's CPU TfReduce)
  /// Host index of each worker / PS task; empty: worker w on host w mod H (PS mode), rank r on host
  /// r / ranks_per_host (allreduce); PS s on host s mod H.
  std::vector<int> worker_hosts, ps_hosts;
  int ranks_per_host = 0; ///< allreduce: 0 = as many as the host has GPUs
};

/// The longest simulated time a job may cover: 2^52 ns, about 52 days. Beyond it the simulated clock (a double, in
/// seconds) is coarser than the nanosecond latencies of the devices, so their events would merge or reorder; a
/// compute time or stall_timeout beyond it is refused.
inline constexpr double MAX_SIMULATED_SECONDS = 4503599.627370496;

struct TrainingJob {
  std::string transport = "grpc";
  memory::StrategyKind strategy = memory::StrategyKind::POOL_VISITOR;
  transports::TransportOptions options;
  TrainingLayout layout;
  int steps = 3; ///< total steps, the first `warmup` not counted
  int warmup = 1;
  int cpu_threads = 4;
  /// The processes' gRPC threads (TensorFlow's release decides them): what each stream message's CPU work runs on.
  models::RpcThreading rpc_threads;
  bool collect_events = false;            ///< keep the last step's op events and transfer records for a trace
  collectives::EngineOptions collectives; ///< allreduce mode: coordinator tick, fusion, response cache
  bool initial_broadcast = false; ///< allreduce mode: broadcast rank 0's variables before the first step (MaTEx)
  /// Allreduce mode: how a ring moves: PROTOCOL (every segment through the transport) or ANALYTICAL (timed on the
  /// analytical fabric, sim/analytical_collectives.hpp). FLOW is not offered here.
  FabricMode collective_mode = FabricMode::PROTOCOL;
  /// Faults injected into the fabric (docs/faults.md). With faults, a step that fails ends the job with a
  /// TrainingResult::failure report instead of an Error.
  FaultPlan faults;
  /// Simulated seconds a step may take before the job is reported as stalled (a hang: e.g. a peer without
  /// power that nobody times out). Covers TCP's ~15 min retransmission give-up.
  double stall_timeout = 1000;
  /// TCP incast at the receivers' switch ports (network model tcp-incast, sim/incast_ports.hpp); false: off.
  bool tcp_incast = false;
  /// With tcp_incast: bytes each port holds; 0: the dynamic-threshold share of the receiver's switch's buffer (the
  /// cluster's switch profile, or its topology's leaves), which must give one.
  uint64_t tcp_port_buffer = 0;
  /// Network model roce (allreduce mode, collective_mode analytical): the RoCE fabric the rings also cross, whose
  /// congestion (PFC, ECN, DCQCN: models/congestion/roce_fabric.hpp, scenario allreduce) each ring waits beyond
  /// max-min. Its rate is the ranks' NIC line rate; ranks and size are each ring's. Unset: off.
  std::optional<models::RoceConfig> roce_fabric;
  /// Allreduce mode: one copy of rank 0's ops serves every rank (StepGraph::rank_template; the results are the same,
  /// memory and set-up no longer grow with ranks x ops). false: every rank's ops in the graph (the tests compare).
  bool share_rank_ops = true;
  /// Allreduce mode, rings timed analytically, on identical hosts behind one switch, each running as many ranks:
  /// simulate the ranks of two hosts (rank 0's, with the coordinator, and one more that reaches it over the fabric) and
  /// take every other host to run as they do; each ring is timed as the whole job's (analytical_ring's ring_ranks).
  /// Memory no longer grows with the ranks, time only through each ring's 2 (N - 1) steps and the coordinator's N
  /// requests per round. The second host's requests to rank 0's coordinator stand for every other host's (its threads
  /// work on each: EngineOptions::mirrored_copies); a ring whose routes share links is timed folded onto the two hosts
  /// (docs/model.md "Symmetric ranks" gives the measured differences). A job it cannot collapse is an error naming what
  /// breaks the symmetry (whatever its size); one that passes the checks and needs two hosts or fewer runs whole.
  bool symmetric_ranks = false;
};

using StepBreakdown = jobs::StepBreakdown;
using TrainingFailure = jobs::TrainingFailure;

struct TaskPlacement {
  std::string task;
  std::string process;
  std::string host;
  std::vector<int> gpus;
};

struct TrainingResult {
  std::string transport;
  int gpus = 0;
  int batch = 0;
  std::vector<double> step_seconds; ///< every step, warm-up included
  double step_time = 0;             ///< mean of the measured steps
  double images_per_second = 0;
  StepBreakdown breakdown;
  /// Per task (process), per measured step: what its gRPC threads and its other CPU work ran (docs/model.md "The CPU
  /// of a process").
  std::vector<jobs::ProcessCpuUse> cpu_use;
  size_t remote_transfers_per_step = 0;
  uint64_t remote_bytes_per_step = 0;
  std::vector<uint64_t> ps_bytes; ///< variable bytes per PS shard
  std::vector<TaskPlacement> placement;
  double wall_seconds = 0;
  bool rank_template = false; ///< the step graph held rank 0's ops for every rank (TrainingJob::share_rank_ops)
  /// TrainingJob::symmetric_ranks: the ranks simulated (the rest taken to run alike) and the hosts they stand for;
  /// 0 where every rank was simulated. placement, cpu_use and events list the simulated ranks only.
  int simulated_ranks = 0;
  int symmetric_hosts = 0;
  /// Comms and execs completed, all steps: SimGrid's, and the short comms and lone execs the reactor timed without
  /// SimGrid (sim::Reactor; the name is older than they are). `train --json` reports it under this name.
  uint64_t simgrid_activities = 0;
  uint64_t short_comms = 0;        ///< of those, comms timed as short comms (sim::Reactor::start_comm), all steps
  uint64_t simgrid_rounds = 0;     ///< rounds of SimGrid's engine the reactor waited for, all steps
  uint64_t timers_run_ahead = 0;   ///< timers run ahead of SimGrid's clock (sim::Reactor::set_run_ahead), all steps
  double broadcast_seconds = 0;    ///< the initial variable broadcast (allreduce mode, when asked)
  uint64_t negotiation_rounds = 0; ///< coordinator rounds of rank 0, all steps
  uint64_t collectives_run = 0;    ///< ring allreduces of rank 0, all steps (a fused batch counts once)
  // With collect_events: the last step, times relative to its start.
  std::vector<training::OpEvent> events;
  transports::TransferLog records;
  struct Comm {
    double start = 0, end = 0, bytes = 0;
    std::vector<std::string> links;
  };
  std::vector<Comm> comms; ///< data movements on the platform's links (PCIe, socket links, NIC ports)
  std::vector<std::pair<std::string, std::string>> task_hosts; ///< task -> host, for trace processes
  std::vector<CpuTrack> cpu_tracks; ///< busy gRPC threads per task (CpuTrack::process holds the task)
  // With faults: what they did and cost; `failure` if a step did not complete (step_seconds has the steps that did).
  bool faults_injected = false;
  FaultStats fault_stats;
  uint64_t incast_bursts_charged = 0; ///< with tcp_incast: TCP bursts charged a loss delay (all steps)
  /// With tcp_incast: the smallest and largest port buffer the bursts' model runs had (every burst with two or more
  /// senders, charged or not; bytes), and the switch profile whose pool the ports shared ("" with a fixed port).
  uint64_t incast_port_buffer_min = 0, incast_port_buffer_max = 0;
  std::string incast_buffer_switch;
  /// collective_mode analytical: tensor sizes whose rings ran on routes that share links (AnalyticalCollectives).
  uint64_t analytical_shared_link_sizes = 0;
  /// ... and those of them timed by their recurrence all the same (latency-bound: AnalyticalCollectives).
  uint64_t analytical_bounded_sizes = 0;
  /// ... and those of them timed folded onto the first two hosts' ranks (one segment size, routes repeating them).
  uint64_t analytical_folded_sizes = 0;
  std::optional<TrainingFailure> failure;
};

/// Allreduce ranks placed on each host without worker_hosts: ranks_per_host, else as many as the first host has GPUs
/// (at least 1): rank r on host r / that.
int allreduce_ranks_per_host(const models::ClusterProfile& cluster, const TrainingLayout& layout);

Result<TrainingResult> run_training_job(const models::ClusterProfile& cluster, const training::TrainingModel& model,
                                        const TrainingJob& job);

/// TrainingJob::symmetric_ranks: the job on two of the cluster's identical hosts (the ranks simulated; its rings
/// are `ranks` ranks'), or an error naming what breaks the symmetry; nothing where the job has two hosts or fewer
/// (it runs whole).
struct SymmetricJob {
  models::ClusterProfile cluster;
  TrainingJob job;
  int ranks = 0, hosts = 0; ///< the whole job's
};
constexpr int SYMMETRIC_SIMULATED_HOSTS = 2;
Result<std::optional<SymmetricJob>> symmetric_ranks_job(const models::ClusterProfile& cluster, const TrainingJob& job);

} // namespace tp::sim
