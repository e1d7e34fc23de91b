// A ring allreduce of one tensor across ranks of a simulated cluster, in one of three fabric modes:
//   protocol    every segment through the task's transport and rendezvous (core/collectives/ring.hpp): the full
//               protocol detail of the training runs
//   flow        the ring's message schedule as plain SimGrid comms between the ranks' NIC endpoints (PCIe,
//               wire, switch; max-min sharing), with each route's latency: no protocol, no device semantics
//   analytical  the same schedule on the analytical fabric (own calendar, first-come-first-served links, no
//               max-min solver), routes and link rates read from the same platform
// Used by `tensorpath allreduce`, the fabric-mode test and bench/allreduce_scale_bench.
#pragma once

#include "core/collectives/ring_schedule.hpp"
#include "core/common/result.hpp"
#include "core/transports/transport.hpp"
#include "models/host_model.hpp"
#include "sim/analytical_fabric.hpp"

#include <string>

namespace tp::sim {

enum class FabricMode { PROTOCOL, FLOW, ANALYTICAL };
Result<FabricMode> parse_fabric_mode(const std::string& s);
const char* to_string(FabricMode m);

struct AllreduceJob {
  FabricMode mode = FabricMode::ANALYTICAL;
  int ranks = 2;
  int ranks_per_host = 1;
  double bytes = 1 << 20;
  bool gpu = false; ///< tensors on GPUs (rank k of a host on GPU k) instead of host memory on the NIC's socket
  std::string transport = "mpi"; ///< protocol mode
  transports::TransportOptions options;
  collectives::RingScheduleOptions schedule; ///< flow / analytical: the adds between steps
};

struct AllreduceResult {
  double seconds = 0;    ///< simulated
  uint64_t messages = 0; ///< ring messages
  double wall_seconds = 0;
  double setup_wall_seconds = 0; ///< building the platform (and, for analytical, reading the routes)
  double alpha = 0, beta = 0;    ///< one message's latency and the slowest link rate on rank 0 -> 1
};

/// One ring allreduce (one simulation: call it in a child process).
Result<AllreduceResult> run_allreduce(const models::ClusterProfile& cluster, const AllreduceJob& job);

class Platform;

/// Where one rank's tensors live.
struct RankEndpoint {
  size_t machine = 0;
  Location loc;
};

/// The ring over `ranks` as the analytical fabric sees it: the links of every rank -> right neighbour route,
/// read from the platform, and each route's latency (device model included).
struct RingRoutes {
  std::vector<AnalyticalLink> links;
  std::vector<AnalyticalRoute> routes; ///< routes[r]: rank r -> rank r + 1
};
RingRoutes ring_routes(const Platform& pf, const std::vector<RankEndpoint>& ranks);
/// Simulated seconds of one ring allreduce of `bytes` on those routes (a fresh calendar: nothing else moving).
double analytical_ring_seconds(const RingRoutes& ring, double bytes, const collectives::RingScheduleOptions& opt);

} // namespace tp::sim
