// Public entry point of the simulator backend: build a cluster from a ClusterProfile, start simulated
// processes on its machines, and run. Each SimProcess offers the engine interfaces of core/ (Runtime,
// verbs::Device per NIC, StreamNetwork, MemorySpace) so that protocol code runs unchanged on it.
// SimGrid allows one simulation per OS process: a second Simulation in the same process is an Error.
// Example: apps/cmd_perftest.cpp. Tests: tests/sim/*.
#pragma once

#include "core/device/device.hpp"
#include "core/memory/buffer.hpp"
#include "core/runtime/runtime.hpp"
#include "core/stream/stream.hpp"
#include "models/host_model.hpp"
#include "models/tf_rpc_threads.hpp"
#include "sim/fault_plan.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace simgrid::s4u {
class Host;
}

namespace tp::sim {

class Platform;
struct SimContext;

struct SimOptions {
  /// Back every buffer with real bytes by default (tests check the bytes that land).
  bool materialize = false;
  /// SimGrid context factory ("raw", "boost", "thread"; "thread" is the one clean under ASan and TSan).
  /// Empty: the environment variable TENSORPATH_SIMGRID_CONTEXTS if set (so that a whole test suite, the
  /// `tensorpath` binaries it spawns and the processes they fork all use it), else "thread" in a build with
  /// AddressSanitizer or ThreadSanitizer, else SimGrid's default. See docs/sanitizers.md.
  std::string context_factory;
  /// Extra SimGrid --cfg=key:value settings (after tensorpath's own network-model settings).
  std::vector<std::string> simgrid_config;
  /// Faults to inject (docs/faults.md); empty: none, and no fault bookkeeping runs.
  FaultPlan faults;
  /// The gRPC threads of every process (TensorFlow's release decides them): what each stream message's CPU work
  /// runs on (sim/sim_stream.cpp).
  models::RpcThreading rpc_threads;
  /// TCP incast at the receivers' switch ports (sim/incast_ports.hpp; network model tcp-incast); false: off
  /// (max-min alone, no loss).
  bool tcp_incast = false;
  /// With tcp_incast: bytes each port toward a receiver holds, drop-tail; 0: its dynamic-threshold share of
  /// tcp_switch_buffer.
  uint64_t tcp_port_buffer = 0;
  std::optional<models::SwitchBuffer> tcp_switch_buffer;
  /// TCP's minimum retransmission time-out with tcp_incast (Linux's TCP_RTO_MIN).
  double tcp_min_rto = 0.2;
};

/// A simulated OS process on one machine of the cluster.
class SimProcess {
public:
  virtual ~SimProcess() = default;
  virtual const std::string& name() const = 0;
  /// Index of the machine (Platform numbering) and its name.
  virtual size_t machine() const = 0;
  virtual Runtime& runtime() = 0;
  virtual MemorySpace& memory() = 0;
  virtual StreamNetwork& streams() = 0;
  /// The verbs device of NIC `nic` (0-based) of this machine.
  virtual verbs::Device& device(int nic = 0) = 0;
  virtual int device_count() const = 0;
};

/// What a process's CPU ran (Simulation::cpu_use): its gRPC threads (sim/cpu_pool.hpp) and its other CPU work.
struct ProcessCpu {
  std::string process;
  std::string host;
  int rpc_threads = 0;           ///< server + client threads made so far
  double rpc_cpu_seconds = 0;    ///< CPU its gRPC threads ran
  double rpc_waited_seconds = 0; ///< time its messages waited for one of its gRPC threads, summed over them
  uint64_t rpc_messages = 0;     ///< messages its gRPC threads worked on
  double work_cpu_seconds = 0;   ///< its other CPU work (SimRuntime::work_cpu_seconds)
  int busy_pollers = 0;          ///< its busy-polling threads (SimRuntime::busy_pollers)
};

/// The busy gRPC threads of one process's pool over time (Simulation::record_cpu).
struct CpuTrack {
  std::string process;
  std::string pool; ///< "grpc server" or "grpc client"
  int threads = 0;
  std::vector<std::pair<double, int>> busy; ///< (time, threads busy from then on)
};

struct SimStats {
  uint64_t activities = 0;  ///< comms and execs completed (lone execs and short comms, timed without SimGrid, too)
  uint64_t short_comms = 0; ///< comms of at most Reactor::short_comm_bytes() timed as short comms
  uint64_t simgrid_rounds = 0;   ///< rounds of SimGrid's engine the reactor waited for (Reactor::simgrid_rounds)
  uint64_t timers_run_ahead = 0; ///< timers run ahead of SimGrid's clock, without a round (Reactor::set_run_ahead)
  double simulated_time = 0;
};

class Simulation {
public:
  /// Build the platform. Errors: a second simulation in this OS process, an invalid cluster.
  static Result<std::unique_ptr<Simulation>> create(const models::ClusterProfile& cluster,
                                                    const SimOptions& options = {});
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  /// Start a process on `machine` (a host name of the cluster). `name` defaults to the machine name.
  Result<SimProcess*> add_process(const std::string& machine, const std::string& name = {});
  SimProcess* process(const std::string& name) const;
  /// Run every posted task, timer and transfer until nothing is left. May be called more than once:
  /// each call continues from the current simulated time.
  void run();
  double now() const;
  const Platform& platform() const;
  SimStats stats() const;

  /// Raw activities for fabric-level models that skip the device semantics (sim/fabric_modes): a comm of
  /// `bytes` between two platform hosts (max-min shared with everything else) and a timer. Callbacks run on the
  /// reactor; both may be called before run().
  void raw_comm(simgrid::s4u::Host* from, simgrid::s4u::Host* to, double bytes, std::function<void()> done);
  void raw_timer(double delay, std::function<void()> f);

  // ---- fault injection (options.faults) ----
  /// Start the faults of `step` (their `at` counts from now). Errors: a fault naming an unknown process.
  Status arm_faults(int step);
  /// Null without a fault plan.
  const FaultStats* fault_stats() const;
  std::vector<RetryInterval> retry_intervals() const;
  /// Add a wait a congestion model charged outside the fabric (it joins retry_intervals()).
  void add_charged_wait(RetryInterval w);
  /// Faults that never fired: the job ended before their step, or before their time (`failed`: it stopped at a
  /// failure). A fault's timer does not keep the simulation going, so one due after the work has ended does nothing.
  std::vector<std::string> never_fired_faults(int last_step, bool failed) const;
  /// TCP bursts the incast ports charged a retransmission delay (options.tcp_incast); 0 without.
  uint64_t incast_bursts_charged() const;
  /// The smallest and largest port buffer the incast ports' model runs had (bytes); 0, 0 without.
  std::pair<uint64_t, uint64_t> incast_port_buffers() const;
  /// The first configuration the tcp-incast model refused during the run ("" when none): its charges are missing.
  std::string incast_error() const;
  /// While on, pending fault timers keep run() going (a step whose tasks are not all done waits for them: a fault
  /// may end a hang); off, run() returns when only fault timers are left.
  void set_faults_keep_alive(bool on);
  /// Called when a fault kills a process: its name, and whether its sockets were closed (a killed process) or not
  /// (a machine without power).
  void set_kill_listener(std::function<void(const std::string& process, bool fin)> listener);
  /// Make run() return after the current task, dropping every pending event (a job that ends at its first error).
  void stop();
  /// run() gives up at this absolute simulated time (a stalled job); deadline_hit() says whether it did.
  void set_deadline(double t);
  bool deadline_hit() const;
  /// After run() returned at the deadline (`window`: the simulated seconds it allowed): what was still in progress
  /// then (transfers, computations, timers), longest first, each with the resource that makes it slow ("... its
  /// slowest link node1_nic0 at 8 b/s needs at least 8.4e+06 s more"). `slow`: one transfer or computation in
  /// progress spans at least a tenth of the window on its own (too slow, not hung); otherwise only short work and
  /// timers were pending (retries, time-outs, polling that never complete the step: a livelock or a hang).
  struct AtDeadline {
    bool slow = false;
    std::string in_progress; ///< empty: nothing at all was pending
  };
  AtDeadline at_deadline(double window) const;

  /// One finished data movement on the platform (a DMA, a wire transfer, a copy): for traces.
  struct CommTrace {
    double start = 0, end = 0;
    double bytes = 0;
    std::vector<std::string> links; ///< names of the links it crossed ("node0.nic0.port.tx", ...)
  };
  /// Call `tracer` for every comm that finishes (nullptr: stop). Costs a route lookup per comm while set.
  void set_comm_tracer(std::function<void(const CommTrace&)> tracer);

  /// Every process's CPU use so far (cumulative), in process creation order.
  std::vector<ProcessCpu> cpu_use() const;
  /// Record (or stop recording) the busy threads of every process's gRPC pools from now; cpu_tracks() returns them.
  void record_cpu(bool on);
  std::vector<CpuTrack> cpu_tracks() const;

private:
  explicit Simulation(std::unique_ptr<SimContext> ctx);
  std::unique_ptr<SimContext> ctx_;
};

} // namespace tp::sim
