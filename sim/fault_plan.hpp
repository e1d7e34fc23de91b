// Faults to inject into the simulated fabric (docs/faults.md): what goes wrong, where, and when. Plain data,
// SimGrid-free: scenarios describe it (apps/lib/fault_spec.cpp parses the JSON), SimOptions carries it, and
// sim/fault_injector applies it to the NICs, links, TCP streams and processes of one simulation.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace tp::sim {

enum class FaultKind {
  LINK_DOWN,     ///< a NIC port (and its cable) is down from `at` for `duration`, then back
  PACKET_LOSS,   ///< each packet through a NIC port is lost with `probability` (from `at` for `duration`)
  NO_RECEIVE,    ///< a process posts no receive WR from `at` for `duration` (its peers get RNR NAKs)
  QP_ERROR,      ///< every QP of a process is forced into the error state at `at`
  PROCESS_DEATH, ///< a process is killed at `at`: the kernel closes its sockets (FIN) and destroys its QPs
  HOST_DEATH,    ///< a machine loses power at `at`: its processes stop, nothing answers, no FIN is sent
};

/// The kind's name in scenario files ("link_down", ...). Inline: the SimGrid-free parsers (apps/lib/tp_specs, which
/// the fuzz build links without the simulator) use it too.
inline const char* to_string(FaultKind k)
{
  switch (k) {
  case FaultKind::LINK_DOWN:
    return "link_down";
  case FaultKind::PACKET_LOSS:
    return "packet_loss";
  case FaultKind::NO_RECEIVE:
    return "no_receive";
  case FaultKind::QP_ERROR:
    return "qp_error";
  case FaultKind::PROCESS_DEATH:
    return "process_death";
  case FaultKind::HOST_DEATH:
    return "host_death";
  }
  return "?";
}

struct Fault {
  FaultKind kind = FaultKind::LINK_DOWN;
  std::string host;    ///< LINK_DOWN, PACKET_LOSS, HOST_DEATH: a machine name of the cluster
  int nic = 0;         ///< LINK_DOWN, PACKET_LOSS: NIC index on that machine
  std::string process; ///< NO_RECEIVE, QP_ERROR, PROCESS_DEATH: a simulated process ("worker0", "ps1", ...)
  int step = 1;        ///< training jobs: `at` counts from the start of this step (1 = the first, warm-up included)
  double at = 0;       ///< seconds after the start of `step` (transfer jobs: after the first transfer starts)
  double duration = std::numeric_limits<double>::infinity(); ///< how long it lasts (infinity: for good)
  double probability = 0;                                    ///< PACKET_LOSS: per packet, in [0, 1]
  std::string where;                                         ///< where it was read from, for messages
};

struct FaultPlan {
  std::vector<Fault> faults;
  uint64_t seed = 1; ///< the only source of randomness (packet loss); same seed, same run
  /// TCP (gRPC and the other transports' control channels): retransmission time-out and how many
  /// retransmissions before the connection is dropped (Linux: 200 ms minimum RTO, tcp_retries2 = 15).
  double tcp_min_rto = 0.2;
  int tcp_retries = 15;
  bool empty() const { return faults.empty(); }
};

/// Every fault kind, in the order the docs list them (models::fault_type_names() holds their names in this order).
inline constexpr FaultKind ALL_FAULT_KINDS[] = {FaultKind::LINK_DOWN, FaultKind::PACKET_LOSS,   FaultKind::NO_RECEIVE,
                                                FaultKind::QP_ERROR,  FaultKind::PROCESS_DEATH, FaultKind::HOST_DEATH};

/// The plan's fault types by name (to_string), in its order: what models::check_faults_supported takes.
inline std::vector<std::string> fault_type_names(const FaultPlan& plan)
{
  std::vector<std::string> out;
  for (const auto& f : plan.faults)
    out.push_back(to_string(f.kind));
  return out;
}

/// What the faults cost, for reports: counts and the time the transfers spent waiting to be resent.
struct FaultStats {
  uint64_t packets_lost = 0;        ///< RC packets dropped (loss or a port down)
  uint64_t rc_retransmissions = 0;  ///< go-back-N restarts after a timeout or a sequence NAK
  uint64_t rc_timeouts = 0;         ///< of which after the ACK time-out
  uint64_t rnr_naks = 0;            ///< RNR NAKs received by requesters
  uint64_t tcp_retransmissions = 0; ///< TCP segments resent (fast retransmit or RTO)
  uint64_t qps_failed = 0;          ///< QPs that went to the error state because of a fault
  double retry_seconds = 0;         ///< sum over transfers of the time between a loss and its resend
  std::vector<std::string> events;  ///< "t=0.512 s: link node1/nic0 down", ... in time order
  std::string first_error;          ///< the first error completion other than a flush (also in events)
};

/// One interval during which a transfer between two processes waited for a retransmission (RC or TCP) or
/// an RNR retry: the step breakdown charges the part of it on the critical path to "retry".
struct RetryInterval {
  double start = 0, end = 0;
  std::string process, peer;
};

} // namespace tp::sim
