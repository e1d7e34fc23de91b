// Applies a FaultPlan to one simulation: keeps the windows during which NIC ports are down, lossy or a process
// withholds its receives, fires the timed faults (QP error, process and host death), draws packet losses from
// the plan's seed, and keeps what the faults cost (FaultStats, retry intervals). The simulated NIC
// (sim_device.cpp), the TCP model (sim_stream.cpp) and the processes (simulation.cpp) ask it; without a plan
// SimContext::faults is null and nothing here runs. Include only from sim/*.cpp. Docs: docs/faults.md.
#pragma once

#include "core/common/result.hpp"
#include "sim/fault_plan.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tp::sim {

struct SimContext;

class FaultInjector {
public:
  FaultInjector(SimContext& ctx, FaultPlan plan);

  /// Check host names and NIC indices against the platform (processes are checked when armed).
  Status validate() const;
  /// Start the faults whose `step` is `step`, `at` seconds from now. Errors: an unknown process.
  /// Their timers are background timers (Reactor::at_background): they do not keep the simulation going, so a
  /// fault due after the job's work has ended never fires and changes nothing.
  Status arm(int step);
  /// Faults that never fired, for reports ("never fired"): those whose step is beyond the last one run, and
  /// those armed but due after the job's work ended (`failed`: the job stopped at a failure first).
  std::vector<std::string> never_fired(int last_step, bool failed) const;

  // ---- queries of the fabric ----
  bool port_down(size_t machine, int nic, double t) const;
  /// First instant in [t0, t1] at which one of the two ports is down, or a negative value.
  double down_within(size_t ma, int na, size_t mb, int nb, double t0, double t1) const;
  /// Earliest time >= t at which both ports are up (infinity if never).
  double both_up_at(size_t ma, int na, size_t mb, int nb, double t) const;
  /// Probability that one packet between the two ports is lost at time t.
  double loss_probability(size_t ma, int na, size_t mb, int nb, double t) const;
  /// Index of the first of `packets` lost, each with probability p, or `packets` if none is.
  uint64_t first_lost(double p, uint64_t packets);
  /// A Bernoulli draw.
  bool draw(double p);
  bool withholds_receives(const std::string& process, double t) const;
  bool process_dead(const std::string& process) const { return dead_.count(process) > 0; }
  bool machine_dead(size_t machine) const { return dead_machines_.count(machine) > 0; }

  // ---- accounting ----
  FaultStats& stats() { return stats_; }
  const FaultStats& stats() const { return stats_; }
  void note_retry(double start, double end, const std::string& process, const std::string& peer);
  const std::vector<RetryInterval>& retries() const { return retries_; }
  void log(const std::string& what);
  const FaultPlan& plan() const { return plan_; }

private:
  struct Window {
    double start, end;
    double probability; // loss windows only
  };
  using Port = std::pair<size_t, int>;
  void fire(const Fault& f);
  /// A fault's first timer ran: it has fired (a window fault has begun).
  void mark_fired(size_t i) { fired_.at(i) = 1; }
  double uniform(); ///< (0, 1], from the plan's seed

  SimContext& ctx_;
  FaultPlan plan_;
  std::map<Port, std::vector<Window>> down_, lossy_;
  std::map<std::string, std::vector<Window>> no_receive_;
  std::set<std::string> dead_;
  std::set<size_t> dead_machines_;
  std::vector<char> fired_; ///< per fault of the plan
  std::vector<double> due_; ///< per fault: absolute simulated time it is due (NaN: not armed)
  uint64_t rng_state_;
  FaultStats stats_;
  std::vector<RetryInterval> retries_;
};

} // namespace tp::sim
