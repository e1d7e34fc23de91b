// Simulator job estimates (see job_estimate.hpp). Every constant below is a per-unit cost of this code, measured
// with GNU time (`/usr/bin/time -f "%e %U %S %M"`, the simulating children included) on the development machine
// (2 cores shared with other builds, RelWithDebInfo): seconds are CPU seconds (user + system), the wall time of the
// single-threaded simulator on an otherwise idle core (a busy machine takes longer); bytes are peak RSS.
// bench/estimate_check.py reruns the commands and prints estimate against measurement (docs/resource-bounds.md).
// Where a cost grew with the job, the largest per-unit value measured is taken: the estimates err high.
#include "sim/job_estimate.hpp"
#include "core/collectives/ring_schedule.hpp"
#include "core/transports/ar_grpc/ar_grpc.hpp"
#include "sim/training_job.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <cstdio>
#include <string>

namespace tp::sim {

namespace {

// ---- every simulating process ----
// A small job (pcie-copy, a 4 KiB transfer): 0.15-0.2 s and 35 MB (the binary, the catalog, SimGrid's engine).
constexpr double BASE_SECONDS = 0.2;
constexpr double BASE_BYTES = 35e6;

// ---- the SimGrid platform (sim/platform.cpp) ----
// Built detached from the engine's root and attached once (sim/platform.cpp), what is left growing faster than the
// hosts is SimGrid 3.32's StarZone checking each new NIC zone's route by searching the fabric's zones: time as
// a x SimGrid hosts + b x zones^2 (zones: per machine its local zone and one per NIC). `tensorpath allreduce --mode
// analytical --every-host --size 1G` on perftest-reference hosts (12 SimGrid hosts and 2 zones each): 1024, 2048,
// 4096, 8192 machines took 0.24, 0.53, 1.21, 3.62 s of CPU and 59, 109, 209, 409 MB (4.2 KB per SimGrid host); the
// fit through 4096 and 8192: 1.1e-5 s per host and 9.3e-9 s per zone^2 (before: 1.2e-11 s per host^2 x machine).
constexpr double PLATFORM_SECONDS_PER_SG_HOST = 1.3e-5; // 1.2 x the fit
constexpr double PLATFORM_SECONDS_PER_ZONE2 = 1.1e-8;   // 1.2 x the fit
constexpr double PLATFORM_BYTES_PER_SG_HOST = 4.5e3;

// ---- one ring allreduce (sim/fabric_modes.cpp: `tensorpath allreduce --mode M --ranks N --size 4K`) ----
// analytical, message by message (ranks' routes share a link): 2 N (N-1) messages at 2.2-3.0 M per wall second on the
// busy machine (256-2048 ranks): ~0.3 us per message.
constexpr double ANALYTICAL_SECONDS_PER_MESSAGE = 0.3e-6;
// analytical where no link is shared: the ring's recurrence (collectives::ring_allreduce_uncontended), N (N - 1) 2
// additions and maxima when segments have two sizes (one size and alike hosts: 2 (N - 1) steps of one rank, free).
// `--size 4*(1000 N + 1)` (two sizes): 16384 and 65536 ranks took 1.33 and 21.1 s of CPU: 2.5 ns per message.
constexpr double RECURRENCE_SECONDS_PER_MESSAGE = 3e-9; // 1.2 x
// Per rank and step of the schedule one byte (core/collectives/ring_schedule.cpp RankState::got), per rank its
// state, route and hop (~300 B).
constexpr double RING_BYTES_PER_RANK_STEP = 1;
// network model roce in training: the roce model's fluid run of each distinct ring (its two max-min runs are closed
// forms). `tensorpath roce --scenario allreduce --senders 8 --size 100000000` (100 Gb/s, 2 leaves): 82 ms of CPU for
// 31.8 ms simulated at 0.5 us steps over 24 ports and 8 flows: 40 ns per port- or flow-step.
constexpr double ROCE_SECONDS_PER_UNIT_STEP = 48e-9; // 1.2 x
constexpr double RING_BYTES_PER_RANK = 300;
// flow: 256 and 512 ranks took 1.4 and 9.3 s of CPU (4 KiB or 1 GiB alike): SimGrid's max-min solver over the N
// comms in flight. 2.7 us + 0.03 us per rank per message.
constexpr double FLOW_SECONDS_PER_MESSAGE = 2.7e-6;
constexpr double FLOW_SECONDS_PER_MESSAGE_PER_RANK = 0.03e-6;
constexpr double FLOW_BYTES_PER_RANK = 2e3; // a SimGrid comm in flight per rank
// protocol (mpi, host memory): 32 and 64 ranks took 0.3 and 1.5 s of CPU for the timed allreduce and its warm-up:
// up to 90 us per message.
constexpr double PROTOCOL_SECONDS_PER_MESSAGE = 90e-6;
// A simulated process with its transport, memory space, rendezvous, NIC model and streams (training jobs: ResNet-50
// parameter-server jobs with 2 to 16 workers and ring allreduce with 16 to 128 ranks, 1.5-2.6 KB per step-graph op
// and the rest per process).
constexpr double BYTES_PER_PROCESS = 0.5e6;

// ---- transfers (sim/transfer_job.cpp: `tensorpath transfer --transport T --tensors N --steps 3 --size S`) ----
// 3000 tensors x 3 steps of 4 KiB: verbs_v2 0.8 s of CPU (90 us per transfer; on the busy machine's wall clock
// grpc, ar_grpc, mpi and verbs_v1 took 0.6, 0.9, 1.3 and 1.4 times verbs_v2). The bytes' cost per transport is
// TRANSFER_BYTE_COSTS below (ar_grpc's chunks of concurrent tensors cost more).
constexpr double SECONDS_PER_TRANSFER = 0.12e-3;
// mpi with many concurrent large tensors: 3000 tensors of 1 MiB per step took 70.9 s of CPU for 3 steps (300
// tensors: 1.1 s of wall): 5 us per pair of tensors in flight per step (the other transports stayed linear).
constexpr double MPI_SECONDS_PER_TENSOR_PAIR = 5e-6;
// Each transfer keeps two records (both sides) that go back to the parent as JSON and CSV text: 102-114 MB for 9000
// transfers (35 MB without), 7.4-8.8 KB each.
constexpr double BYTES_PER_TRANSFER = 9e3;
// Materialized transfers: source, destination and one staging or bounce copy per tensor.
constexpr double MATERIALIZED_COPIES = 3;

// ---- training (sim/training_job.cpp: `tensorpath train ... --no-reference`) ----
// Peak RSS against the step graph's size: ResNet-50 parameter-server jobs with 2 to 16 workers (36-106 MB,
// 1.5-2.1 KB per op) and ring-allreduce jobs with 16 to 128 ranks (69-475 MB, 1.7-2.6 KB per op).
// Since allreduce ranks share one copy of rank 0's ops (StepGraph::rank_template) those jobs take less: ResNet-50,
// Baidu, analytical rings on dgx-a100-8gpu hosts, 64 to 1024 ranks: 73 MB to 1.4 GB, 1.0-1.2 KB per rank and op, and
// 0.59 to 32.1 s of CPU against the 1.7 to 69.2 s these constants were fitted to (docs/performance.md). The constants
// are kept: they still bound parameter-server jobs from above, and err high for allreduce ones (at 1024 ranks the
// estimate is 71 s and 3.7 GB).
constexpr double BYTES_PER_OP = 2.6e3;
// Allreduce ranks sharing rank 0's ops (TrainingJob::share_rank_ops, the default) with one executor plan and one
// cluster map for all (docs/performance.md): ResNet-50, Baidu, analytical rings on dgx-a100-8gpu hosts, 1,024 / 2,048
// / 4,096 ranks peaked at 553 MB / 1.09 GB / 2.19 GB, 0.46-0.47 KB per rank and op all told; charged 0.3 KB per op
// on top of BYTES_PER_PROCESS (0.5 MB each): 1.5-1.6x the measurement at those sizes.
constexpr double BYTES_PER_TEMPLATE_RANK_OP = 0.3e3;
// Each remote transfer of a step keeps its records until the step ends: ResNet-50 ring allreduce over 16 ranks in
// protocol mode (128 K ring messages per step) peaked at 421 MB, parameter servers through verbs_v1 (5,340 transfers
// per step) 18 MB above the ops and processes: 3.2-6.6 KB per transfer.
constexpr double BYTES_PER_STEP_TRANSFER = 6.6e3;
// The executor's work per op and step, and the coordinator (Horovod/Baidu negotiation): a round per tick while the
// step lasts and per collective, each O(N) (every rank's requests through rank 0) since the reactor's events cost
// O(1) (before, a wait over every activity in flight made a round O(N^2)). ResNet-50, Baidu (5 ms tick), analytical
// rings on dgx-a100-8gpu hosts, 2 steps, 64/128/256/512/1024 ranks: 1.7/4.2/9.3/27.6/69.2 s of CPU; fitted as
// a N + b N^2, a = 0.040 s per rank (3 us per op, the coordinator's rounds: 285 per step) and b N^2 = 28 s at 1024
// ranks, half of it the rings' messages (22 distinct sizes, message by message: these hosts' routes share PCIe
// links), the rest allocation that grows with the ranks in flight. Charged to the rounds per rank and
// round (85 us), so that the estimate is not below the measurement up to 1024 ranks (estimate / measured: 64 ranks 2.3,
// 256 1.6, 512 1.2, 1024 1.0). Those fits are historical: the rounds were then counted as compute / tick + one per
// gradient (285 a step), now compute / tick + 2 (19.8), and the code has become 7x faster since; the 85 us was kept
// (measured against the new count: docs/resource-bounds.md, the paragraph after the table).
constexpr double SECONDS_PER_OP_STEP = 3e-6;
constexpr double SECONDS_PER_COORDINATOR_RANK = 85e-6;
// Symmetric ranks (TrainingJob::symmetric_ranks): rank 0's threads work on each other host's request and response as
// a copy of the second host's, one CPU work item each: 65,536 GPUs of ResNet-50 with Baidu's coordinator, 2 steps,
// took 1.3 s more with the copies than without (8.1 against 6.8 s; 20 rounds x 2 x 65,520 copies: 0.5 us each).
constexpr double SECONDS_PER_COORDINATOR_COPY = 1e-6;
// Parameter-server steps: the F remote transfers of a step (every tower's pulls, every worker's pushes: P per variable)
// start together. Each costs k1, and k2 for every other transfer of its variable (the max-min solve at each of its
// comms' starts and ends runs over the flows in flight, which grow with P), plus b per byte moved; AR-gRPC's bytes
// cost per rendezvous chunk instead (c each; its chunk size grows with the NIC's rate, ar_grpc.cpp tune_ar_grpc).
// Fitted (least squares of the relative error, then x 1.25, AR-gRPC's x 1.4) on the CPU seconds per step of 3 steps
// after short comms (docs/model.md "Short comms"; measured with their first version, which took each share at its own
// start: the present one is up to 20 % cheaper on these jobs), per transport grpc / verbs_v1 / verbs_v2 / gdr / mpi /
// ar_grpc:
// - VGG16 (32 variables, 553 MB) on dgx-a100-8gpu, 1 GPU per worker, as many PS, N = 16 / 32 / 64 / 128 workers
//   (F = 64 N, P = 2 N): whole runs of 0.30 / 0.55 / 0.40 / 0.39 / 0.55 / 2.99 s at N = 16, 2.48 / 13.7 / 13.0 / 13.1 /
//   9.7 / 99.2 s at N = 128 (before short comms verbs_v1 took 136 s there, verbs_v2 43.8, gdr 29.4, mpi 11.1);
// - ResNet-50 (267 variables, 102 MB) there, 32 workers (F = 17,088, P = 64): 5.9 / 20.2 / 9.6 / 9.6 / 7.8 / 19.2 s;
// - ResNet-50 on hkust-4node, 4 workers x 4 GPUs, 4 PS (F = 5,340, P = 20), 2 steps: 0.84 / 4.5 / 1.2 / 0.96 / 5.0 /
//   2.4 s;
// - ar_grpc alone, default steps: VGG16 on hkust-4node, 4 workers x 2 GPUs (F = 384, P = 12, 64 KiB chunks) 7.8 s;
//   ResNet-152 on osu-ri2-k80-edr, batch 8, 3 x 2, 1 PS (F = 6,993, P = 9, 128 KiB chunks) 2.7 s; InceptionV3 there,
//   batch 64, 2 GPUs per worker (F = 2,268, P = 6) 0.8 s.
// The fit gives 1.0-1.4x those for grpc, verbs_v2 and gdr, 1.1-2.8x for verbs_v1, 0.9-1.9x for ar_grpc, and 1.2-1.6x
// for mpi but for the hkust-4node run (0.43x). mpi's k1 is therefore taken per GPU of a worker: its busy-polling MPI
// thread keeps every CPU work of the host a SimGrid exec, and a worker's towers add CPU work (docs/model.md "The CPU
// of a process"). Measured on the final short comms, mpi on hkust-4node, 4 workers and 4 PS: ResNet-50 with 4 GPUs
// per worker, 2 steps, 4.75 s (estimated 2.5 s before the per-GPU k1, 8.3 s with it); with 1 GPU per worker 0.42 s
// (1.1 s either way).
// An unknown transport takes the largest of each coefficient (both b and c) and the Messenger's channel memory.
struct TransportStepCost {
  const char* transport;
  double k1; ///< seconds per remote transfer per step
  double k2; ///< seconds per remote transfer and other transfer of its variable per step
  double b;  ///< seconds per byte moved per step
  double c;  ///< seconds per rendezvous chunk moved per step (AR-gRPC)
};
constexpr TransportStepCost PS_STEP_COSTS[] = {
    {"grpc", 1.1e-4, 7.4e-8, 0, 0},    {"verbs_v1", 4.3e-4, 2.0e-6, 0, 0}, {"verbs_v2", 9.3e-5, 2.3e-6, 0, 0},
    {"gdr", 7.4e-5, 2.3e-6, 4e-13, 0}, {"mpi", 1.8e-4, 1.0e-6, 3e-12, 0},  {"ar_grpc", 5.9e-5, 7.7e-6, 0, 2.2e-5}};
// Transfer jobs: the bytes of one transport's tensors, per byte (the earlier PS fit's per-byte terms: ar_grpc's chunks
// of concurrent tensors cost more, ~1e-11 s per byte for the others on a busy machine's wall clock).
struct TransportByteCost {
  const char* transport;
  double b;
};
constexpr TransportByteCost TRANSFER_BYTE_COSTS[] = {{"grpc", 3e-11},      {"verbs_v2", 3e-11}, {"gdr", 3e-11},
                                                     {"ar_grpc", 7.1e-10}, {"verbs_v1", 3e-11}, {"mpi", 3e-11}};
// Messenger transports (mpi, ar_grpc) keep a channel per pair of tasks that exchange tensors, with its pre-posted
// bounce buffers: 0.3 MB each, measured as their peak RSS above verbs_v2's (VGG16 at 128 workers: 1.89 against 0.63
// GB for 4,096 worker-PS pairs; ResNet-50 at 32: 651 against 348 MB for 1,024).
constexpr double MESSENGER_BYTES_PER_CHANNEL = 0.3e6;
// AR-gRPC with chunk trains (ArGrpcOptions::chunk_trains, docs/model.md "Chunk trains"): its per-chunk cost is
// AR_GRPC_TRAIN_CHUNKS times smaller: c / 4. Whole estimates against the CPU measured, 3 steps, with trains: VGG16 on
// hkust-4node, 4 workers x 2 GPUs, 2.1 against 2.0 s; ResNet-152 on osu-ri2-k80-edr, 3 x 2, 1 PS, 3.4 against 1.8 s;
// InceptionV3 there, 2 GPUs per worker, 1.1 against 0.6 s; VGG16 on dgx-a100-8gpu, 128 workers and PS, 59.6 against
// 32.5 s (chunk by chunk: 7.1 / 4.2 / 1.3 / 86.4 s estimated, 7.6 / 2.6 / 0.8 / 99.2 s measured).
// Allreduce mode, protocol rings: a ring message through the transport, dearer with more ranks in flight (SimGrid's
// max-min over the ranks' comms). ResNet-50 through mpi: Baidu on 16 ranks of hkust-4node (128 K messages per step)
// 49.5 s of CPU for 3 steps, 130 us per message; Horovod on 64 ranks of dgx-a100-8gpu (4 fused rings, 32 K messages
// per step) 17.8 s for 2 steps, ~245 us per message: 92 us + 2.4 us x N.
constexpr double TRAINING_SECONDS_PER_RING_MESSAGE = 92e-6;
constexpr double TRAINING_SECONDS_PER_RING_MESSAGE_RANK = 2.4e-6;

// ---- microbenchmarks (sim/microbench_jobs.cpp) ----
// perftest: --lat --iters 200000 took 2.3 s of CPU (11 us per operation; bandwidth tests ran 2-3 times as many per
// second on the busy machine); latency tests keep a sample per iteration (16 B: 1 M iterations 51.6 MB against
// 39 MB for 200 K).
constexpr double SECONDS_PER_PERFTEST_OP = 14e-6;
constexpr double BYTES_PER_PERFTEST_ITERATION = 16;
// pcie-copy: 480 K copies (8 GPU/node pairs x 3 directions x 20000) in 0.3 s of CPU, the start included.
constexpr double SECONDS_PER_COPY = 1e-6;

/// The transport's coefficients (PS_STEP_COSTS); an unknown transport takes the largest of each.
TransportStepCost step_cost(const std::string& transport)
{
  TransportStepCost out{"", 0, 0, 0, 0};
  for (const auto& c : PS_STEP_COSTS)
    out.k1 = std::max(out.k1, c.k1), out.k2 = std::max(out.k2, c.k2), out.b = std::max(out.b, c.b),
    out.c = std::max(out.c, c.c);
  for (const auto& c : PS_STEP_COSTS)
    if (transport == c.transport) out = c;
  return out;
}

/// The line rate (bytes/s) of the first NIC of the first host that has one; 0 if none has.
double first_nic_line_rate(const models::ClusterProfile& cluster)
{
  for (size_t h = 0; h < cluster.host_count(); ++h)
    if (!cluster.host(h).nics.empty()) return cluster.host(h).nics[0].nic.line_rate;
  return 0;
}

/// A transfer job's cost per byte (TRANSFER_BYTE_COSTS); an unknown transport takes the largest.
double transfer_byte_cost(const std::string& transport)
{
  double largest = 0;
  for (const auto& c : TRANSFER_BYTE_COSTS) {
    if (transport == c.transport) return c.b;
    largest = std::max(largest, c.b);
  }
  return largest;
}

std::string num(double n)
{
  return human_count(n);
}

std::string fmt_k(double k)
{
  char b[16];
  std::snprintf(b, sizeof b, "%.2g", k);
  return b;
}

std::string cluster_param(const models::ClusterProfile& c)
{
  return "hosts in the cluster = " + std::to_string(c.host_count()) + (c.name.empty() ? "" : " (" + c.name + ")");
}

/// SimGrid hosts of one machine (sim/platform.cpp): CPUs and GPUs, and per NIC a source and a destination view of
/// every memory and GPU.
double sg_hosts(const models::HostProfile& h)
{
  const double places = double(h.sockets.size() + h.gpus.size());
  return places + double(h.nics.size()) * 2 * places;
}

/// SimGrid zones of one machine: its local zone and one per NIC.
double sg_zones(const models::HostProfile& h)
{
  return 1.0 + double(h.nics.size());
}

uint64_t ring_collectives_per_step(const training::TrainingModel& model, const TrainingJob& job)
{
  uint64_t vars = 0;
  for (const auto& l : model.layers)
    vars += l.variables.size();
  const uint64_t threshold = job.collectives.fusion_threshold;
  if (threshold == 0) return vars;
  // Fused batches: at least the bytes over the threshold; the batches also break at each tick, so allow four
  // times as many, never more than one per variable.
  return std::min<uint64_t>(vars, 4 * (model.bytes() / threshold + 1));
}

/// The ranks of two hosts where a ring of `ranks`, `per_host` to a host, is folded onto them (analytical_ring's
/// `period`, sim::ring_period): one group of identical hosts behind one switch, ranks placed host by host, every host
/// full and four hosts' ranks a period of the ring; 0 otherwise. The routes are checked to repeat once read
/// (ring_period_repeats); on these clusters they do.
int fold_period(const models::ClusterProfile& cluster, int ranks, int per_host, bool placed_by_hand = false)
{
  const bool alike = cluster.groups.size() == 1 && !(cluster.topology && cluster.topology->tiers > 1);
  if (!alike || placed_by_hand || per_host < 1 || ranks % (4 * per_host) != 0 || ranks <= 4 * per_host) return 0;
  return 2 * per_host;
}

/// Messages the analytical fabric times for one ring of `bytes` over `whole` ranks, `simulated` of them simulated
/// (where routes share a link): every message, and collectives::run_steady_ring_allreduce's tries before them (for
/// one segment size), at most. Where a try finds the steady state (DGX A100 rings) the ring costs only the tries up to
/// it: the estimate then errs high. With a `period` (fold_period) a ring of one segment size is folded onto that many
/// ranks and twice as many: the folds' messages and tries (a ring whose folds disagreed would run whole as well, which
/// no shipped profile showed).
struct RingMessages {
  double run = 0, tries = 0; ///< messages of the whole ring (or its folds), and of the steady-state tries
  double total() const { return run + tries; }
};
RingMessages ring_messages(double bytes, double simulated, double whole, int period)
{
  if (period > 0 && simulated == whole && collectives::ring_segment_sizes(bytes, int(whole)).one_size())
    return {2 * (whole - 1) * 3 * period, double(collectives::ring_steady_tries_messages(period, int(whole)) +
                                                 collectives::ring_steady_tries_messages(2 * period, int(whole)))};
  return {2 * simulated * (whole - 1),
          double(collectives::ring_steady_tries_messages(int(simulated), int(whole), bytes))};
}
double analytical_ring_messages(double bytes, double simulated, double whole, int period = 0)
{
  return ring_messages(bytes, simulated, whole, period).total();
}

/// The rings the analytical collectives time in a job (each distinct size once: sim/analytical_collectives.cpp keeps
/// the seconds by size for the whole job; fused batches: a step's worth, the same batches forming each step) and the
/// messages timed for them (analytical_ring_messages; fused batches' sizes are not known here: each counted as of one
/// segment size, with the steady-state tries, the most a ring can take).
std::pair<uint64_t, double> analytical_rings_per_job(const training::TrainingModel& model, const TrainingJob& job,
                                                     double simulated, double whole, int period)
{
  if (job.collectives.fusion_threshold > 0) {
    const uint64_t rings = ring_collectives_per_step(model, job);
    const double one_size = 4.0 * whole; // a batch whose segments have one size: the tries counted too
    return {rings, double(rings) * analytical_ring_messages(one_size, simulated, whole)};
  }
  std::set<uint64_t> sizes;
  for (const auto& l : model.layers)
    for (const auto& v : l.variables)
      sizes.insert(v.bytes);
  double messages = 0;
  for (const uint64_t b : sizes)
    messages += analytical_ring_messages(double(b), simulated, whole, period);
  return {sizes.size(), messages};
}

} // namespace

JobEstimate estimate_platform(const models::ClusterProfile& cluster, size_t machines_built)
{
  JobEstimate e;
  e.job = "simulation";
  e.add("starting a simulating process", "", BASE_BYTES, BASE_SECONDS);
  const size_t built = std::min(machines_built, cluster.host_count());
  double hosts = 0, zones = 0;
  for (size_t m = 0; m < built; ++m) {
    hosts += sg_hosts(cluster.host(m));
    zones += sg_zones(cluster.host(m));
  }
  e.add("a SimGrid platform of " + num(double(built)) + " machines, " + num(hosts) + " SimGrid hosts, " + num(zones) +
            " zones (build time grows as hosts + zones^2)",
        cluster_param(cluster), PLATFORM_BYTES_PER_SG_HOST * hosts,
        PLATFORM_SECONDS_PER_SG_HOST * hosts + PLATFORM_SECONDS_PER_ZONE2 * zones * zones);
  return e;
}

JobEstimate estimate_allreduce(const models::ClusterProfile& cluster, const AllreduceJob& job)
{
  const bool folded = job.mode == FabricMode::ANALYTICAL && job.fold_alike_hosts && analytical_foldable(cluster, job);
  JobEstimate e = estimate_platform(cluster, folded ? size_t(FOLDED_MACHINES) : cluster.host_count());
  const double n = std::max(job.ranks, 1);
  const std::string ranks = "ranks = " + std::to_string(job.ranks);
  const int hosts = (std::max(job.ranks, 1) + std::max(job.ranks_per_host, 1) - 1) / std::max(job.ranks_per_host, 1);
  if (int(cluster.host_count()) == std::max(hosts, 2) && hosts > 2) // a cluster made for the ranks
    e.terms.back().parameter = ranks + (job.ranks_per_host > 1 ? " (" + std::to_string(hosts) + " hosts)" : "");
  e.job = std::string("allreduce (") + to_string(job.mode) + " mode, " + std::to_string(job.ranks) + " ranks)";
  const double messages = 2 * n * (n - 1);
  const std::string what = num(messages) + " ring messages (2 N (N-1))";
  switch (job.mode) {
  case FabricMode::ANALYTICAL:
    if (folded) { // read from three hosts, timed by the recurrence (unless routes share a link: then re-estimated)
      // One segment size and one rank per host (every route alike): the ranks move in lock step, one rank's steps.
      const bool lock_step =
          job.ranks_per_host == 1 && collectives::ring_segment_sizes(job.bytes, job.ranks).one_size();
      if (lock_step)
        e.add(num(2 * (n - 1)) + " ring steps in lock step (every rank alike) x " +
                  human_seconds(RECURRENCE_SECONDS_PER_MESSAGE),
              ranks, RING_BYTES_PER_RANK * n, RECURRENCE_SECONDS_PER_MESSAGE * 2 * (n - 1));
      else
        e.add(what + " by the ring's recurrence x " + human_seconds(RECURRENCE_SECONDS_PER_MESSAGE), ranks,
              RING_BYTES_PER_RANK * n, RECURRENCE_SECONDS_PER_MESSAGE * messages);
      break;
    }
    {
      // At most every message and the steady-state tries before them; 8 bytes per timed step of a try (its starts).
      // A ring of one segment size on identical hosts folds onto two and four hosts' ranks (not with --every-host).
      const int period = job.fold_rings ? fold_period(cluster, job.ranks, job.ranks_per_host) : 0;
      const RingMessages timed = ring_messages(job.bytes, n, n, period);
      const bool folds = period > 0 && collectives::ring_segment_sizes(job.bytes, job.ranks).one_size();
      e.add(num(timed.total()) + " messages at most (" +
                (folds ? "the ring folded onto two and four hosts' ranks, 2 (N-1) x 6 per host" : what) +
                ", and the steady-state tries) x " + human_seconds(ANALYTICAL_SECONDS_PER_MESSAGE) + ", " + num(n) +
                " ranks' state",
            ranks, RING_BYTES_PER_RANK_STEP * timed.run + 8 * timed.tries + RING_BYTES_PER_RANK * n,
            ANALYTICAL_SECONDS_PER_MESSAGE * timed.total());
    }
    break;
  case FabricMode::FLOW: {
    const double per = FLOW_SECONDS_PER_MESSAGE + FLOW_SECONDS_PER_MESSAGE_PER_RANK * n;
    e.add(what + " x " + human_seconds(per) + " (SimGrid comms, max-min over N in flight)", ranks,
          RING_BYTES_PER_RANK_STEP * messages + (RING_BYTES_PER_RANK + FLOW_BYTES_PER_RANK) * n, per * messages);
    break;
  }
  case FabricMode::PROTOCOL: {
    const double runs = 1 + std::max(job.warmup, 0); // the untimed warm-up allreduces run the same ring
    e.add(what + (runs > 1 ? " x " + num(runs) + " allreduces (warm-up included)" : std::string()) + " x " +
              human_seconds(PROTOCOL_SECONDS_PER_MESSAGE) + " through the transport, " + num(n) +
              " simulated processes",
          ranks, BYTES_PER_PROCESS * n, PROTOCOL_SECONDS_PER_MESSAGE * messages * runs);
    break;
  }
  }
  return e;
}

JobEstimate estimate_transfer(const models::ClusterProfile& cluster, const TransferJob& job)
{
  JobEstimate e = estimate_platform(cluster);
  e.job = "transfer (" + job.transport + ")";
  e.add("two simulated processes", "", 2 * BYTES_PER_PROCESS, 0);
  const double tensors = std::max(job.tensors_per_step, 1);
  const double steps = std::max(job.steps, 1);
  // AR-gRPC's per-byte cost is its chunks' events: with chunk trains a quarter of them where a tensor has 4 chunks or
  // more (transfer --transport ar_grpc --size 256M --steps 10 --tensors 4: 1.75 s of CPU chunk by chunk, 0.44 s in
  // trains), as many fewer as it has chunks below that; none fewer from a GPU (staged block by block, the chunks ready
  // a few at a time: not measured).
  const auto& ar = job.options.of<transports::ArGrpcOptions>();
  const bool trains = job.transport == "ar_grpc" && ar.chunk_trains && !job.src.is_gpu();
  const double chunk = double(
      ar.chunk_bytes ? ar.chunk_bytes : transports::tune_ar_grpc(5e-6, 1e9, first_nic_line_rate(cluster)).chunk_bytes);
  const double per_byte = transfer_byte_cost(job.transport);
  double transfers = 0, bytes = 0, largest = 0, pairs = 0, byte_cost = 0;
  for (uint64_t s : job.sizes) {
    transfers += tensors * steps;
    bytes += tensors * steps * double(s);
    const double fewer =
        trains ? std::clamp(std::ceil(double(s) / chunk), 1.0, double(transports::AR_GRPC_TRAIN_CHUNKS)) : 1.0;
    byte_cost += tensors * steps * double(s) * per_byte / fewer;
    largest = std::max(largest, double(s));
    pairs += steps * tensors * (tensors - 1) / 2;
  }
  const std::string counts =
      "tensors per step = " + std::to_string(job.tensors_per_step) + ", steps = " + std::to_string(job.steps) +
      (job.sizes.size() > 1 ? " x " + std::to_string(job.sizes.size()) + " sizes" : std::string());
  uint64_t largest_size = 0;
  for (uint64_t s : job.sizes)
    largest_size = std::max(largest_size, s);
  e.add(num(transfers) + " transfers x " + human_seconds(SECONDS_PER_TRANSFER) + " and " +
            human_bytes(BYTES_PER_TRANSFER) + " of records each",
        counts, BYTES_PER_TRANSFER * transfers, SECONDS_PER_TRANSFER * transfers);
  e.add(human_bytes(bytes) + " moved x " + human_seconds(per_byte * 1e6) + " per MB (" + job.transport +
            (trains ? ", up to " + std::to_string(transports::AR_GRPC_TRAIN_CHUNKS) + "x less in chunk trains" : "") +
            ")",
        "size = " + std::to_string(largest_size) + " bytes" + (job.sizes.size() > 1 ? " (the largest)" : "") + ", " +
            counts,
        0, byte_cost);
  if (job.transport == "mpi" && pairs > 0)
    e.add(num(pairs) + " pairs of tensors in flight together x " + human_seconds(MPI_SECONDS_PER_TENSOR_PAIR),
          "tensors per step = " + std::to_string(job.tensors_per_step), 0, MPI_SECONDS_PER_TENSOR_PAIR * pairs);
  if (job.materialize)
    e.add(num(tensors) + " materialized tensor(s) of " + human_bytes(largest) + " x " +
              std::to_string(int(MATERIALIZED_COPIES)) + " copies",
          "size = " + human_bytes(largest) + ", tensors per step = " + std::to_string(job.tensors_per_step),
          MATERIALIZED_COPIES * largest * tensors, 0);
  return e;
}

uint64_t step_graph_ops(const training::TrainingModel& model, const TrainingLayout& L)
{
  uint64_t vars = 0;
  for (const auto& l : model.layers)
    vars += l.variables.size();
  const uint64_t layers = model.layers.size();
  const uint64_t workers = uint64_t(std::max(L.workers, 0));
  const uint64_t towers = workers * uint64_t(std::max(L.gpus_per_worker, 1));
  // PS: per tower forward and backward per layer, a read and a gradient per variable and their SEND/RECV pairs;
  // per worker the sums; the PS tasks' reads and applies. Allreduce: per rank the layers, a read and a gradient
  // per variable, and its allreduce.
  return L.mode == TrainingLayout::Mode::PARAMETER_SERVER
             ? towers * (2 * layers + 4 * vars) + workers * 2 * vars + 3 * vars
             : towers * (2 * layers + 2 * vars) + workers * vars;
}

namespace {

/// `ring_ranks` > 0: the job is a symmetric job's simulated part (TrainingJob::symmetric_ranks), its rings that many
/// ranks' folded onto its own.
JobEstimate estimate_placed_training(const models::ClusterProfile& cluster, const training::TrainingModel& model,
                                     const TrainingJob& job, int ring_ranks)
{
  const auto& L = job.layout;
  JobEstimate e = estimate_platform(cluster);
  const bool ps = L.mode == TrainingLayout::Mode::PARAMETER_SERVER;
  e.job = "training job (" + job.transport + ", " + std::to_string(L.workers) + (ps ? " workers, " : " ranks, ") +
          std::to_string(std::max(L.ps_tasks, 0)) + " PS tasks)";
  const double ops = double(step_graph_ops(model, L));
  const double steps = std::max(job.steps, 1);
  const double workers = std::max(L.workers, 0);
  const double towers = workers * std::max(L.gpus_per_worker, 1);
  const double processes = workers + std::max(L.ps_tasks, 0);
  double vars = 0;
  for (const auto& l : model.layers)
    vars += double(l.variables.size());
  const std::string tasks =
      (ps ? "workers = " : "ranks = ") + std::to_string(L.workers) +
      (ps && L.gpus_per_worker > 1 ? " x " + std::to_string(L.gpus_per_worker) + " GPUs" : std::string());
  const std::string tasks_steps = tasks + ", steps = " + std::to_string(job.steps);
  const double bytes_per_op = !ps && job.share_rank_ops ? BYTES_PER_TEMPLATE_RANK_OP : BYTES_PER_OP;
  e.add(num(ops) + " step-graph ops x " + std::to_string(int(bytes_per_op)) + " B, x " + num(steps) + " steps x " +
            human_seconds(SECONDS_PER_OP_STEP),
        tasks_steps, bytes_per_op * ops, SECONDS_PER_OP_STEP * ops * steps);
  e.add(num(processes) + " simulated processes x " + human_bytes(BYTES_PER_PROCESS), tasks,
        BYTES_PER_PROCESS * processes, 0);
  if (ps && L.ps_tasks > 0) {
    // Every tower (or worker) pulls every variable, every worker (or tower) pushes every gradient.
    const double pulls = L.fetch_per_worker ? workers : towers;
    const double pushes = L.aggregate_on_worker ? workers : towers;
    const double per_variable = pulls + pushes;
    const double f = per_variable * vars;
    auto [name, k1, k2, b, c] = step_cost(job.transport);
    if (job.transport == "mpi") k1 *= std::max(L.gpus_per_worker, 1);
    const double bytes = per_variable * double(model.bytes());
    std::string moved = human_bytes(bytes) + " per step" + (b > 0 ? " x " + human_seconds(b * 1e6) + " per MB" : "");
    double bytes_cost = b * bytes;
    if (c > 0) {
      // Chunks of the size AR-gRPC picks for the first NIC's rate (its ping's RTT taken as its 5 us default).
      const auto& ar = job.options.of<transports::ArGrpcOptions>();
      const double chunk =
          double(ar.chunk_bytes ? ar.chunk_bytes
                                : transports::tune_ar_grpc(5e-6, 1e9, first_nic_line_rate(cluster)).chunk_bytes);
      if (ar.chunk_trains) c /= transports::AR_GRPC_TRAIN_CHUNKS;
      moved += (b > 0 ? " and " : " in ") + human_bytes(chunk) + " chunks x " + human_seconds(c) +
               (ar.chunk_trains ? " per chunk (trains of " + std::to_string(transports::AR_GRPC_TRAIN_CHUNKS) + ")"
                                : " per chunk");
      bytes_cost += c * std::ceil(bytes / chunk); // an unknown transport pays both, the dearest known costs
    }
    e.add("F = " + num(f) + " remote transfers per step, P = " + num(per_variable) +
              " per variable (k1 F + k2 F P, k1 = " + fmt_k(k1) + ", k2 = " + fmt_k(k2) + " for " + job.transport +
              ")" + (b > 0 || c > 0 ? " + " + moved : std::string()) + ", x " + num(steps) + " steps",
          tasks_steps, BYTES_PER_STEP_TRANSFER * f, steps * (k1 * f + k2 * f * per_variable + bytes_cost));
    if (job.transport == "mpi" || job.transport == "ar_grpc" || name[0] == '\0') { // unknown: the dearest too
      const double channels = workers * std::min(double(L.ps_tasks), vars);
      e.add(num(channels) + " worker-PS channels x " + human_bytes(MESSENGER_BYTES_PER_CHANNEL), tasks,
            MESSENGER_BYTES_PER_CHANNEL * channels, 0);
    }
  }
  if (!ps && L.workers > 1) {
    const double n = L.workers;
    const double collectives = double(ring_collectives_per_step(model, job));
    if (job.collective_mode == FabricMode::PROTOCOL) {
      const double messages = collectives * 2 * n * (n - 1);
      const double per_message = TRAINING_SECONDS_PER_RING_MESSAGE + TRAINING_SECONDS_PER_RING_MESSAGE_RANK * n;
      e.add(num(messages) + " ring messages per step (" + num(collectives) + " allreduces x 2 N (N-1)) x " +
                human_seconds(per_message) + " (" + human_seconds(TRAINING_SECONDS_PER_RING_MESSAGE) + " + " +
                human_seconds(TRAINING_SECONDS_PER_RING_MESSAGE_RANK) + " x N), x " + num(steps) + " steps",
            tasks_steps, BYTES_PER_STEP_TRANSFER * messages, per_message * messages * steps);
    } else {
      // Analytical rings: the routes once, each distinct ring timed once on the analytical fabric (no messages),
      // message by message at worst (where ranks' routes share links), its steady steps counted.
      // Symmetric ranks: rings of the whole job's ranks folded onto the simulated ones, 2 (N-1) messages per simulated
      // rank, message by message or by the recurrence (which then runs one period of ranks: cheaper per step).
      // Otherwise, on identical hosts, a ring of one segment size is folded onto two hosts' ranks and four's.
      const double whole = ring_ranks > 0 ? double(ring_ranks) : n;
      const int period = ring_ranks > 0 ? 0
                                        : fold_period(cluster, L.workers, allreduce_ranks_per_host(cluster, L),
                                                      !L.worker_hosts.empty());
      const auto [rings, timed] = analytical_rings_per_job(model, job, n, whole, period);
      e.add("the analytical rings (" + num(n) + " routes, " + num(double(rings)) + " distinct allreduces" +
                (ring_ranks > 0 ? " of " + num(whole) + " ranks folded onto them" : std::string()) + " timed once, " +
                num(timed) + " messages at most (2 (N-1) per rank" + (ring_ranks > 0 ? " simulated" : "") +
                (period > 0 ? ", or per rank of two and four hosts for one segment size" : "") +
                ", and the steady-state tries of rings with one segment size) x " +
                human_seconds(ANALYTICAL_SECONDS_PER_MESSAGE) + ")",
            tasks, RING_BYTES_PER_RANK * whole, ANALYTICAL_SECONDS_PER_MESSAGE * timed);
    }
    if (job.roce_fabric && job.collective_mode == FabricMode::ANALYTICAL) {
      // Every distinct ring once on the roce model (sim/training_job.cpp add_roce_congestion): at most one sender
      // per host, each streaming at most twice the ring's bytes at its share of an uplink; the distinct rings' bytes
      // at most the model's.
      const double rate = first_nic_line_rate(cluster) * 8;
      auto c = *job.roce_fabric;
      c.rate = rate > 0 ? rate : c.rate;
      c.scenario = models::RoceScenario::ALLREDUCE;
      c.senders = int(std::min<double>(n, double(cluster.host_count())));
      double ports = 0;
      for (const auto& sw : models::roce_switches(c))
        ports += 2.0 * double(sw.ingress_rates.size());
      const double fair = c.rate / 8 / std::max(1.0, c.oversubscription);
      const double simulated = 2.0 * double(model.bytes()) / fair;
      const double unit_steps = simulated / models::roce_step(c) * (ports + c.senders);
      e.add("the roce model on each distinct ring (" + num(simulated * 1e3) + " ms simulated at " +
                human_seconds(models::roce_step(c)) + " steps over " + num(ports) + " ports and " + num(c.senders) +
                " senders x " + human_seconds(ROCE_SECONDS_PER_UNIT_STEP) + ")",
            "roce_fabric.oversubscription = " + num(c.oversubscription), 0, ROCE_SECONDS_PER_UNIT_STEP * unit_steps);
    }
    if (job.collectives.coordinator) {
      // A round per tick (CollectiveEngine::tick negotiates each tick, new requests or not), the next tick scheduled
      // once the round's collectives are done: while the step computes, about a round per tick, and then one per
      // batch of collectives (gradients requested after the last round began), not one per gradient. Counted as
      // compute / tick + 2 per step. Measured: Baidu's 5 ms tick, ResNet-50 on dgx-a100-8gpu (89 ms of compute, 267
      // gradients), 7 rounds a step at 4,096 GPUs (19.8 counted); Horovod's 1 ms cycle on hkust-4node (631 ms), 365 a
      // step (633 counted). A job whose rings outlast many ticks between the gradients may make more.
      const double tick = job.collectives.tick_seconds > 0 ? job.collectives.tick_seconds : 1e-3;
      const double rounds = model.compute_seconds() / tick + 2;
      e.add(num(rounds) + " coordinator rounds per step x " + human_seconds(SECONDS_PER_COORDINATOR_RANK) +
                " x N, x " + num(steps) + " steps",
            tasks_steps, 0, SECONDS_PER_COORDINATOR_RANK * rounds * n * steps);
      if (ring_ranks > n) // symmetric ranks: rank 0 still works on every other host's request and response
        e.add(num(rounds) + " coordinator rounds per step x 2 (N - simulated) copies x " +
                  human_seconds(SECONDS_PER_COORDINATOR_COPY) + ", x " + num(steps) + " steps",
              "ranks = " + std::to_string(ring_ranks) + ", steps = " + std::to_string(job.steps), 0,
              SECONDS_PER_COORDINATOR_COPY * rounds * 2 * (double(ring_ranks) - n) * steps);
    }
  }
  return e;
}

} // namespace

JobEstimate estimate_training(const models::ClusterProfile& cluster, const training::TrainingModel& model,
                              const TrainingJob& job)
{
  if (job.symmetric_ranks) {
    auto c = symmetric_ranks_job(cluster, job);
    if (c.ok() && c.value()) {
      JobEstimate e = estimate_placed_training(c.value()->cluster, model, c.value()->job, c.value()->ranks);
      e.job += ", symmetric: " + std::to_string(c.value()->ranks) + " ranks as " +
               std::to_string(c.value()->job.layout.workers) + " simulated";
      return e;
    }
  }
  return estimate_placed_training(cluster, model, job, 0);
}

JobEstimate estimate_perftest(const models::ClusterProfile& cluster, const PerftestJob& job)
{
  JobEstimate e = estimate_platform(cluster);
  const auto& c = job.config;
  e.job = "perftest";
  const double iters = double(c.effective_iterations());
  const double qps = c.metric == microbench::Metric::BW ? std::max(c.qps, 1) : 1;
  const double ops = iters * qps * double(c.sizes.size());
  e.add(num(ops) + " operations (iterations x QPs x sizes) x " + human_seconds(SECONDS_PER_PERFTEST_OP),
        "iterations = " + num(iters) + (qps > 1 ? " x qps = " + num(qps) : "") +
            (c.sizes.size() > 1 ? " x " + std::to_string(c.sizes.size()) + " sizes" : ""),
        BYTES_PER_PERFTEST_ITERATION * iters * qps, SECONDS_PER_PERFTEST_OP * ops);
  return e;
}

JobEstimate estimate_copies(const models::ClusterProfile& cluster, const std::vector<CopyJob>& jobs)
{
  JobEstimate e = estimate_platform(cluster);
  e.job = "pcie-copy";
  double copies = 0, iters = 0;
  for (const auto& j : jobs) {
    copies += 3.0 * std::max(j.config.iterations, 1);
    iters = std::max(iters, double(j.config.iterations));
  }
  e.add(num(copies) + " copies (3 directions x iterations x " + std::to_string(jobs.size()) + " GPU/node pairs) x " +
            human_seconds(SECONDS_PER_COPY),
        "iterations = " + num(iters), 0, SECONDS_PER_COPY * copies);
  return e;
}

} // namespace tp::sim
