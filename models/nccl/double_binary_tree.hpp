// NCCL's double binary tree over the nodes of a job (its tree allreduce): the first tree puts node 0 at the root
// with one child and builds a binary tree from the binary digits of the node number; the second is that tree
// mirrored (an even node count) or shifted by one node (odd), so that a node which is inner in one tree is a leaf
// in the other. Construction as NVIDIA/nccl src/graph/trees.cc (ncclGetBtree, ncclGetDtree) describes it, written
// again here. Used by models/nccl/collective_model.cpp to count the bytes each node sends and receives.
// Tests: tests/models/nccl_model_test.cpp.
#pragma once

#include <cstddef>
#include <vector>

namespace tp::models::nccl {

struct TreeNode {
  int parent = -1;           ///< -1: the root
  std::vector<int> children; ///< zero, one or two
};

/// The first tree over `n` nodes (n >= 1): node i's parent and children.
std::vector<TreeNode> binary_tree(int n);
/// The second tree: the first mirrored (n even) or shifted by one node (n odd).
std::vector<TreeNode> second_tree(int n);

} // namespace tp::models::nccl
