// One TensorFlow task's transfer machinery, assembled from a process's engine interfaces: its tensor memory
// (strategy), rendezvous manager, transfer log and transport. Backend independent: the simulator's tests
// and tools and the emulator build it the same way.
#pragma once

#include "core/transports/transport.hpp"

#include <functional>
#include <limits>
#include <memory>

namespace tp::transports {

struct TaskSpec {
  std::string task;      ///< "/job:worker/replica:0/task:0"
  std::string transport; ///< registered transport name
  memory::StrategyOptions memory;
  TransportOptions options;
  int cpu_numa_node = 0;
  uint64_t incarnation = 1;
  /// CPU seconds of one call into the host's communication library (an MPI call on the mpi transport's MPI thread):
  /// the host's CPU profile's (models::CpuProfile::mpi_call_overhead), which the backend fills in. NaN: not given; a
  /// transport that needs it refuses to start.
  double library_call_seconds = std::numeric_limits<double>::quiet_NaN();
  /// The transport only carries a collective library's point-to-point messages (allreduce mode: Baidu's ring,
  /// Horovod and MaTEx call MPI from their own threads), not TensorFlow's rendezvous: TF's own transport threads
  /// (contrib MPI's busy-polling MPI thread) do not run (TaskContext::collective_library_only).
  bool collective_library_only = false;
};

class TaskRuntime {
public:
  /// Error for an unknown transport, or one that needs RDMA on a process without a device.
  static Result<std::unique_ptr<TaskRuntime>> create(const TaskSpec& spec, const std::string& process, Runtime& rt,
                                                     verbs::Device* dev, StreamNetwork& streams,
                                                     const ClusterSpec& cluster);
  Transport& transport() { return *transport_; }
  rendezvous::RendezvousMgr& rendezvous() { return *rendezvous_; }
  memory::TensorMemory& memory() { return *memory_; }
  TransferLog& log() { return log_; }
  const TaskSpec& spec() const { return spec_; }
  Runtime& runtime() { return rt_; }

  /// Allocate a tensor in this task (the strategy's allocator).
  Result<Tensor> make_tensor(DataType dtype, const TensorShape& shape, Location loc, AllocatorAttributes attrs = {},
                             uint64_t proto_bytes = 0);

  /// Called when the transport hits a failure the original implementation treats as fatal (TaskContext::on_fatal).
  void set_fatal_handler(std::function<void(const Error&)> handler) { fatal_handler_ = std::move(handler); }

private:
  TaskRuntime(const TaskSpec& spec, Runtime& rt) : spec_(spec), rt_(rt) {}
  std::function<void(const Error&)> fatal_handler_;
  TaskSpec spec_;
  Runtime& rt_;
  std::unique_ptr<memory::TensorMemory> memory_;
  std::unique_ptr<rendezvous::RendezvousMgr> rendezvous_;
  TransferLog log_;
  std::unique_ptr<Transport> transport_;
};

} // namespace tp::transports
