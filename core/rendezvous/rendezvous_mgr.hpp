// Per-process rendezvous manager (TF's RendezvousMgr + BaseRemoteRendezvous): one LocalRendezvous per step,
// created on first use; Send is passive (local table only); RecvAsync is served locally when producer and
// consumer share an address space (then copied to the destination device), else by the transport's
// RecvFromRemoteAsync hook. Producer-side transports call recv_local_async. cleanup(step) aborts what is still
// pending in that step. Tests: tests/core/rendezvous_test.cpp.
#pragma once

#include "core/rendezvous/local_rendezvous.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>

namespace tp::memory {
class TensorMemory;
}

namespace tp::rendezvous {

/// Where and how the consumer wants the tensor.
struct RecvArgs {
  Location dst_location = Location::host(0);
  AllocatorAttributes alloc_attrs;
};

/// The transport hook: fetch a tensor produced in another address space.
class RemoteRecvHook {
public:
  virtual ~RemoteRecvHook() = default;
  virtual void recv_from_remote_async(int64_t step_id, const ParsedKey& key, const RecvArgs& args,
                                      RecvCallback done) = 0;
};

class RendezvousMgr {
public:
  /// `task`: this process's task name ("/job:worker/replica:0/task:1").
  RendezvousMgr(std::string task, memory::TensorMemory* memory) : task_(std::move(task)), memory_(memory) {}

  const std::string& task() const { return task_; }
  void set_remote_hook(RemoteRecvHook* hook) { hook_ = hook; }

  /// The step's table (created on first use). Aborted steps stay aborted until cleanup().
  LocalRendezvous& find(int64_t step_id);
  /// Send (producer side): passive. Error if the key's source is not this task.
  Status send(int64_t step_id, const ParsedKey& key, const Tensor& tensor, bool is_dead);
  /// RecvAsync (consumer side).
  void recv_async(int64_t step_id, const ParsedKey& key, const RecvArgs& args, RecvCallback done);
  /// For transports at the producer: wait for the local Send of `key` in `step_id`.
  void recv_local_async(int64_t step_id, const ParsedKey& key, RecvCallback done);
  /// Abort the step's table with `status` (pending receivers get it).
  void abort_step(int64_t step_id, const Error& status);
  /// Tear down a step: abort anything pending (Aborted) and forget the table.
  void cleanup(int64_t step_id);
  size_t active_steps() const { return steps_.size(); }

private:
  std::string task_;
  memory::TensorMemory* memory_;
  RemoteRecvHook* hook_ = nullptr;
  std::map<int64_t, std::unique_ptr<LocalRendezvous>> steps_;
  /// Remote receives in flight per step (TF's RegisterCall): an abort fails them at once; the transport's late
  /// answer is then dropped.
  struct RemoteCall {
    std::shared_ptr<RecvCallback> done;
  };
  std::map<int64_t, std::map<uint64_t, RemoteCall>> remote_calls_;
  uint64_t next_call_ = 1;
  void abort_remote_calls(int64_t step_id, const Error& status);
};

} // namespace tp::rendezvous
