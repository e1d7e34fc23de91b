// A ring allreduce of one tensor across ranks of a simulated cluster, in one of three fabric modes:
//   protocol    every segment through the task's transport and rendezvous (core/collectives/ring.hpp): the full
//               protocol detail of the training runs
//   flow        the ring's message schedule as plain SimGrid comms along the data path protocol mode takes (the
//               mpi transport's: host bounce buffers, peer copies within a host, host staging of GPU payloads;
//               see DataPath), max-min sharing, with the path's fixed costs: no protocol, no device semantics
//   analytical  the same schedule on the analytical fabric (own calendar, shared links served one message after the
//   other, no
//               max-min solver), the same paths with their links and rates read from the same platform
// Used by `tensorpath allreduce` and `replay`, training's analytical collectives and bench/allreduce_scale_bench.
// Tests: tests/sim/fabric_modes_test.cpp, tests/sim/fabric_agreement_test.cpp (flow and analytical against protocol).
#pragma once

#include "core/collectives/fabric_mode.hpp"
#include "core/collectives/ring_schedule.hpp"
#include "core/common/result.hpp"
#include "core/transports/mpi/mpi.hpp"
#include "core/transports/transport.hpp"
#include "models/host_model.hpp"
#include "sim/analytical_fabric.hpp"

#include <string>

namespace tp::sim {

// The mode enum and its words are backend-free (core/collectives/fabric_mode.hpp); here under their sim names.
using collectives::FabricMode;
using collectives::parse_collective_mode;
using collectives::parse_fabric_mode;
using collectives::to_string;

struct AllreduceJob {
  FabricMode mode = FabricMode::ANALYTICAL;
  int ranks = 2;
  int ranks_per_host = 1;
  double bytes = 1 << 20;
  bool gpu = false; ///< tensors on GPUs (rank k of a host on GPU k) instead of host memory on the NIC's socket
  std::string transport = "mpi"; ///< protocol mode
  /// Protocol mode's transport options; the fabric modes follow the mpi transport's path with them. By default as
  /// Baidu's ring runs on MPI: raw buffers (MPI_OPTIMAL_PATH) and non-blocking receives.
  transports::TransportOptions options = [] {
    transports::TransportOptions o;
    o.own<transports::MpiOptions>().optimal_path = true;
    o.own<transports::MpiOptions>().nonblocking_recv = true;
    return o;
  }();
  /// Flow / analytical: the protocol ring's reductions and copies between steps (ring_adds); false: messages only
  /// (as SMPI's MPI_Allreduce with a no-op reduction, bench/allreduce_scale_bench).
  bool local_work = true;
  /// Protocol mode: allreduces run before the timed one, untimed (first use: registrations, staging pools grown,
  /// as a training run's first step). The fabric modes have no first-use costs.
  int warmup = 1;
  /// Analytical mode on identical hosts behind one switch, every host full: read the routes from three hosts and time
  /// the ring by its recurrence when no link is shared (the same result in time and memory linear in the ranks);
  /// false: build every host (tests compare the two).
  bool fold_alike_hosts = true;
  /// Analytical mode, routes that share links: time a ring of one segment size folded onto the first two hosts' ranks
  /// where every host's routes repeat theirs (analytical_ring's `period`); false: every rank's messages
  /// (`tensorpath allreduce --every-host` sets both false).
  bool fold_rings = true;
};

struct AllreduceResult {
  double seconds = 0;    ///< simulated
  uint64_t messages = 0; ///< ring messages
  double wall_seconds = 0;
  double setup_wall_seconds = 0; ///< building the platform (and, for analytical, reading the routes)
  /// Rank 0 -> 1's path at one segment (bytes / ranks): its time minus segment / beta, and its slowest stage's rate.
  double alpha = 0, beta = 0;
  /// What sets beta: the SimGrid link with the lowest rate on that path's slowest stage ("host0.nic0.port.tx": the
  /// NIC's line rate; "....pcie.up": a PCIe link; ...), or "cpu memcpy" for a copy by a CPU core; empty with one rank.
  std::string beta_link;
  /// Analytical mode: no two ranks' routes share a link, so the ring was timed by its recurrence
  /// (collectives::ring_allreduce_uncontended) rather than message by message; the result is the same.
  bool closed_form = false;
  /// Analytical mode, routes sharing links: a latency-bound ring of two segment sizes timed by its recurrence all the
  /// same, sharing adding at most this many seconds (sim::ring_contention_bound); 0: not so timed.
  double contention_bound = 0;
  /// Analytical mode, routes sharing links: the ranks the ring was folded onto, message by message (the first two
  /// hosts': analytical_ring's `period`); 0: every rank's messages.
  int folded_ranks = 0;
  /// Messages timed one by one: fewer than `messages` where steady steps were counted or the ring folded (the tries
  /// and folds included); 0 where the recurrence timed the ring.
  uint64_t simulated_messages = 0;
  /// Machines of the SimGrid platform the routes were read from: the cluster's, or three of its identical hosts
  /// (AllreduceJob::fold_alike_hosts).
  int platform_machines = 0;
};

/// An AllreduceResult as one line of text and back (every field; doubles to 17 digits, "inf" kept), to bring a run
/// back from a child process. The parse names the text it could not read.
std::string to_text(const AllreduceResult& r);
Result<AllreduceResult> allreduce_result_from_text(const std::string& text);

/// Machines a folded analytical ring reads its routes from (AllreduceJob::fold_alike_hosts).
constexpr int FOLDED_MACHINES = 3;
/// Whether the analytical ring of `job` on `cluster` can be read from FOLDED_MACHINES hosts: one group of identical
/// hosts, one switch (no multi-tier topology), every host full, more hosts than that. It is, unless ranks' routes then
/// turn out to share a link.
bool analytical_foldable(const models::ClusterProfile& cluster, const AllreduceJob& job);

/// One ring allreduce (one simulation: call it in a child process).
Result<AllreduceResult> run_allreduce(const models::ClusterProfile& cluster, const AllreduceJob& job);

class Platform;

/// Where one rank's tensors live.
struct RankEndpoint {
  size_t machine = 0;
  Location loc;
};

/// How a ring message moves between two ranks: the data path of the mpi transport's MPI library model
/// (core/transports/mpi, core/transports/rdma/messenger), which protocol mode runs by default and which Baidu's
/// ring and Horovod ran on. The fabric modes time a message on the links and fixed costs of this path.
struct DataPath {
  /// Payloads below this go as a TensorProto in the MPI response (every payload without MPI_OPTIMAL_PATH): the
  /// sender copies the tensor into pinned host memory on the NIC's socket and once more there (SerializeToString),
  /// the proto moves as an eager or rendezvous payload, and the receiver copies it twice (ParseFromString,
  /// MakeTensorFromProto), one step after the other.
  double proto_below = 0;
  /// Payloads up to this are copied into a pinned host bounce buffer on the NIC's socket, SENT through the NIC (its
  /// loopback between ranks of one host) into the peer's bounce buffer, and copied out (one after the other).
  uint64_t eager_limit = 0;
  /// Larger payloads between ranks of one host: one copy from the peer's memory (shared memory / CUDA IPC).
  bool peer_copy = false;
  /// Larger payloads between hosts: the NIC reads and writes host memory only (the MPI library registers no GPU
  /// memory), so a GPU payload is staged through host memory on the NIC's socket at both ends; above this size the
  /// staging is pipelined in blocks of it (0: the whole payload, then the NIC, then the copy out).
  uint64_t staging_block = 0;

  enum Kind { PROTO_EAGER, PROTO_RENDEZVOUS, EAGER, RENDEZVOUS, KINDS };
  Kind kind(double bytes) const
  {
    const bool eager = bytes <= double(eager_limit);
    if (bytes < proto_below) return eager ? PROTO_EAGER : PROTO_RENDEZVOUS;
    return eager ? EAGER : RENDEZVOUS;
  }
};
/// The mpi transport's path with these options (mpi_optimal_path).
DataPath mpi_data_path(const transports::TransportOptions& options);
/// Whether the fabric modes can stand for the mpi transport with these options: only when its data receives do not
/// block its single MPI thread (mpi_optimal_path and mpi_nonblocking_recv, as Baidu's ring). A blocking receive
/// keeps the thread until the data has landed, so the rank answers the next rank's request only then: that
/// serializes ring steps (up to twice as long per step with large segments: AlexNet on 40 GPUs without fusion,
/// 749 against 381 ms), which no fabric mode models. Error names the option.
Status check_fabric_options(const transports::TransportOptions& options);

/// The ring over `ranks` as the analytical fabric sees it: the links of every rank -> right neighbour path (read
/// from the platform), and each path's delay for a message's size (fixed costs, copies, pipeline fill).
struct RingRoutes {
  std::vector<AnalyticalLink> links;
  std::vector<AnalyticalRoute> routes[DataPath::KINDS]; ///< per DataPath::Kind, [r]: rank r -> rank r + 1
  DataPath path;
  const AnalyticalRoute& route(int src, double bytes) const { return routes[path.kind(bytes)][size_t(src)]; }
  size_t ranks() const { return routes[0].size(); }
};
RingRoutes ring_routes(const Platform& pf, const std::vector<RankEndpoint>& ranks, const DataPath& path);
/// The local work of the protocol ring (core/collectives/ring.cpp) for tensors at `loc` of host `h`, timed as the
/// runtime times those work items: a reduction and a copy per step (GPU kernels, or one-thread CPU loops).
collectives::RingScheduleOptions ring_adds(const models::HostProfile& h, Location loc);
/// Whether no link that a message holds (a shared one) is on two ranks' routes at either segment size of `bytes`.
/// `segments`: the ranks of the ring whose segments are timed (default: the routes' own count).
bool ring_links_unshared(const RingRoutes& ring, double bytes, int segments = 0);
/// The most that links shared between ranks' routes can add to a ring allreduce of `bytes` on the analytical fabric
/// over its time with every link free (ring_allreduce_uncontended): 2 (N - 1) steps, each message waiting at most for
/// one message of every other rank that shares a link of its route, each holding it at most the longest message's
/// time, twice that for the gaps a message cannot use.
/// `segments`: as ring_links_unshared.
double ring_contention_bound(const RingRoutes& ring, double bytes, int segments = 0);
/// analytical_ring times a ring whose segments have two sizes by its recurrence where ring_contention_bound is at most
/// this share of its time.
inline constexpr double RING_CONTENTION_TOLERANCE = 1e-3;
/// A message of `bytes` from `rank` on its route when its links are free, as the analytical fabric times it.
collectives::RingHopTime ring_hop_time(const RingRoutes& ring, int rank, double bytes);
/// One ring allreduce of `bytes` on those routes (a fresh calendar: nothing else moving): by the ring's recurrence
/// where ring_links_unshared (`*closed_form` set to true), or for segments of two sizes where ring_contention_bound
/// is within RING_CONTENTION_TOLERANCE of it (`contention_bound` set); else message by message on the analytical
/// fabric, its repeated steps counted (collectives::run_steady_ring_allreduce).
/// `ring_ranks` > ring.ranks(): the routes are one period of a ring of that many ranks (identical hosts: rank r's route
/// is rank (r mod ring.ranks())'s, as TrainingJob::symmetric_ranks simulates them): the recurrence over every rank
/// (exact), or message by message folded onto the routes' ranks (collectives::run_folded_ring_allreduce).
/// One period of a ring's ranks, for analytical_ring to fold the ring onto: the routes of the ring's first P ranks with
/// the last one's to rank 0 (ring_routes of ring_period_candidate's ranks: the first two hosts'), and of its first 2 P
/// (the first four hosts').
struct RingPeriod {
  RingRoutes routes, doubled;
};
/// `period` (only with ring_ranks 0): a ring whose segments have one size and whose links are shared is timed message
/// by message folded onto P ranks, 2 (N-1) P messages instead of 2 (N-1) N, where ring_period_repeats says `ring`
/// repeats both of `period`'s routes and the ring folded onto 2 P ranks takes the same time as onto P: the routes
/// repeat every host, but ties between messages on shared links can settle into a pattern over several hosts (on DGX
/// A100 hosts, one of two hosts: a fold onto three differs from the whole ring by up to 0.26 %), which a fold onto P
/// ranks reproduces only if P is a multiple of its period. Else the whole ring (with the folds' messages counted).
collectives::RingScheduleResult analytical_ring(const RingRoutes& ring, double bytes,
                                                const collectives::RingScheduleOptions& opt, bool* closed_form,
                                                int ring_ranks = 0, const RingPeriod* period = nullptr);
/// Whether a ring allreduce of `bytes` has segments of one size and every rank r of `ring` sends them over the route
/// of rank r mod P of `period` (P = period.ranks(), a divisor of ring.ranks() and at most half of it): link for link,
/// under one map of `ring`'s links onto `period`'s that keeps each link's rate and sharing, with the same latency and
/// delay; and every shared link held by ranks of distinct residues mod P that are exactly those holding its image.
/// Then, with every rank starting together and doing the same local work, rank r + P's steps can be rank r's, link
/// holds included, and the ring folded onto `period` (run_folded_ring_allreduce) is the whole ring, but for the order
/// of messages that reach a shared link at one instant (the fabric serves them in sending order, and the whole ring's
/// last rank sends after every other: docs/model.md "Folded rings", "Symmetric ranks").
bool ring_period_repeats(const RingRoutes& ring, const RingRoutes& period, double bytes);
/// The ranks of the first `hosts` hosts (in rank order) where the ranks go on past them: a period to try
/// (RingPeriod, built by ring_routes); empty where the ranks fill no more than that many hosts.
std::vector<RankEndpoint> ring_period_candidate(const std::vector<RankEndpoint>& ranks, size_t hosts);
/// analytical_ring's period for a ring over `ranks` on `pf`: the first two hosts' ranks and the first four's (none
/// where the ranks fill four hosts or fewer).
std::optional<RingPeriod> ring_period(const Platform& pf, const std::vector<RankEndpoint>& ranks, const DataPath& path);

} // namespace tp::sim
