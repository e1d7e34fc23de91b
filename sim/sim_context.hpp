// Internal state shared by the simulator's pieces (engine, platform, reactor, processes, the registry
// that lets a simulated NIC find its peer by LID). Include only from sim/*.cpp.
#pragma once

#include "sim/fault_injector.hpp"
#include "sim/incast_ports.hpp"
#include "sim/platform.hpp"
#include "sim/reactor.hpp"
#include "sim/simulation.hpp"

#include <simgrid/s4u/Engine.hpp>

#include <map>
#include <memory>
#include <unordered_map>

namespace tp::sim {

class SimDevice;
class SimProcessImpl; // simulation.cpp

struct SimContext {
  SimOptions options;
  std::unique_ptr<simgrid::s4u::Engine> engine;
  std::unique_ptr<Platform> platform;
  Reactor reactor;
  std::vector<std::unique_ptr<SimProcessImpl>> processes; // complete type in simulation.cpp only
  ~SimContext();
  std::unordered_map<uint16_t, SimDevice*> devices_by_lid;
  uint16_t next_lid = 1;
  bool running = false;

  /// Start a comm of `bytes` between two SimGrid hosts; `done` runs at completion. Zero bytes or
  /// from == to complete at once (SimGrid's 0-byte comms never finish with latency-factor 0).
  uint64_t start_comm(simgrid::s4u::Host* from, simgrid::s4u::Host* to, double bytes, Reactor::Task done);
  /// Occupy `threads` cores of `host` for `seconds` (each thread its own core while there are enough; threads of
  /// every exec on the host share its cores fairly when there are not, so the exec then takes longer).
  uint64_t start_exec(simgrid::s4u::Host* host, double seconds, Reactor::Task done, int threads = 1);
  /// Cancel what start_comm/start_exec returned.
  void cancel(uint64_t id);
  /// Tracing of finished comms (Simulation::set_comm_tracer): start time, bytes, route link names.
  std::function<void(double start, double end, double bytes, const std::vector<std::string>& links)> comm_tracer;
  /// A process by name, or nullptr.
  SimProcess* find_process(const std::string& name) const;
  std::vector<SimProcess*> process_list() const;
  /// Fault injection; null when the options have no faults.
  std::unique_ptr<FaultInjector> faults;
  /// TCP incast at the receivers' switch ports; null unless options.tcp_incast is set.
  std::unique_ptr<IncastPorts> incast;
  /// Waits a congestion model charged outside the fabric (a ring allreduce's PFC and DCQCN excess, network model
  /// roce): the critical path counts them as retry.
  std::vector<RetryInterval> charged_waits;
  /// Called when fault injection kills a process (name, whether the kernel closed its sockets).
  std::function<void(const std::string&, bool)> on_kill;
};

/// Fault injection (simulation.cpp): stop process `name` (its runtime, NICs and sockets). `fin`: the kernel
/// closes its sockets, as for a killed process; false: nothing is sent, as for a machine without power.
void kill_process(SimContext& ctx, const std::string& name, bool fin);
/// Move every QP of process `name` to the error state; returns how many.
size_t fail_process_qps(SimContext& ctx, const std::string& name);

} // namespace tp::sim
