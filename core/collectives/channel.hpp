// Point-to-point messages between the ranks of a collective, carried by the task's rendezvous and transport
// (so a ring allreduce runs over gRPC, verbs, GDR, MPI or AR-gRPC alike). A message is a tensor under a
// rendezvous key built from the two ranks' devices and a name unique within the step.
// Tests: tests/sim/collectives_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "core/tensor/tensor.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tp::transports {
class TaskRuntime;
}

namespace tp::collectives {

struct RankInfo {
  std::string task;   ///< "/job:worker/replica:0/task:3"
  std::string device; ///< full device name of the rank's tensors, ".../device:GPU:0"
};

/// Every rank of a collective, shared by the ranks' channels and engines (one copy, not one per rank).
using RankTable = std::shared_ptr<const std::vector<RankInfo>>;

class Channel {
public:
  Channel(transports::TaskRuntime& task, RankTable ranks, int rank);
  Channel(transports::TaskRuntime& task, std::vector<RankInfo> ranks, int rank);
  int rank() const { return rank_; }
  int size() const { return int(ranks_->size()); }
  const RankInfo& info(int r) const { return (*ranks_)[size_t(r)]; }
  transports::TaskRuntime& task() { return task_; }
  /// Rendezvous Send (passive): `peer` fetches it with recv(.., name, this rank).
  Status send(int64_t step, const std::string& name, int peer, const Tensor& t);
  /// Rendezvous Recv of what `peer` sent under `name`, into the rank's device memory.
  void recv(int64_t step, const std::string& name, int peer, std::function<void(Result<Tensor>)> done);
  /// A tensor viewing elements [offset, offset + count) of `t` (float32); keeps `t`'s storage alive.
  static Tensor view(const Tensor& t, int64_t offset, int64_t count);

private:
  std::string key(const std::string& name, int from, int to) const;
  transports::TaskRuntime& task_;
  RankTable ranks_;
  int rank_;
};

} // namespace tp::collectives
