// Collective algorithms over a Channel, as baidu-allreduce and TF's mpi_collectives run them
// (docs/protocols.md, collectives): ring allreduce = reduce-scatter (N-1 steps: send a segment right, receive one from
// the left and add it in) then allgather (N-1 steps); segments are the N rank shares of the element count, the first
// count mod N one element longer; ring allgather with per-rank sizes after a sizing allgather; and a binomial-tree
// broadcast (MaTEx's initial variable broadcast). Reductions and copies are Work items at the tensor's location (a GPU
// kernel for GPU tensors, a CPU loop for host ones). Tests: tests/sim/collectives_test.cpp.
#pragma once

#include "core/collectives/channel.hpp"

#include <functional>
#include <string>
#include <vector>

namespace tp::collectives {

using TensorDone = std::function<void(Result<Tensor>)>;

/// Segment boundaries of `count` elements over `n` ranks: offsets (n + 1 entries).
std::vector<int64_t> ring_segments(int64_t count, int n);

/// Sum of `t` (float32) over all ranks. The reduce-scatter works in place on `t`; the result is a new tensor.
void ring_allreduce(Channel& ch, int64_t step, const std::string& name, Tensor t, TensorDone done);
/// Concatenation along the elements of every rank's `t`; `counts[r]` = elements of rank r.
void ring_allgather(Channel& ch, int64_t step, const std::string& name, Tensor t, std::vector<int64_t> counts,
                    TensorDone done);
/// Every rank's element count (the sizing allgather; the size travels in the shape of an empty tensor).
void allgather_sizes(Channel& ch, int64_t step, const std::string& name, int64_t mine,
                     std::function<void(Result<std::vector<int64_t>>)> done);
/// `t` of rank `root` on every rank (binomial tree); non-root ranks pass a tensor of the same size.
void tree_broadcast(Channel& ch, int64_t step, const std::string& name, Tensor t, int root, TensorDone done);

} // namespace tp::collectives
