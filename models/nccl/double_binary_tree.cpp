// NCCL's double binary tree (see the header).
#include "models/nccl/double_binary_tree.hpp"

namespace tp::models::nccl {

namespace {

/// Parent and children of `rank` in the first tree over `n` ranks: the lowest set bit of the rank gives its level;
/// the parent clears that bit and sets the next one up (or only clears it, past the last rank); the children are
/// rank -/+ half that bit (the upper child moved down while it lies past the last rank). Rank 0 is the root, with one
/// child: the highest power of two below n.
TreeNode node_of(int n, int rank)
{
  TreeNode t;
  int bit = 1;
  while (bit < n && !(bit & rank))
    bit <<= 1;
  if (rank == 0) {
    if (n > 1) t.children.push_back(bit >> 1);
    return t;
  }
  int up = (rank ^ bit) | (bit << 1);
  if (up >= n) up = rank ^ bit;
  t.parent = up;
  int low = bit >> 1;
  if (low == 0) return t;
  t.children.push_back(rank - low);
  int down = rank + low;
  while (down >= n && low > 0) {
    low >>= 1;
    down = rank + low;
  }
  if (low > 0 && down < n && down != rank) t.children.push_back(down);
  return t;
}

} // namespace

std::vector<TreeNode> binary_tree(int n)
{
  std::vector<TreeNode> out;
  for (int r = 0; r < n; ++r)
    out.push_back(node_of(n, r));
  return out;
}

std::vector<TreeNode> second_tree(int n)
{
  const auto first = binary_tree(n);
  std::vector<TreeNode> out(size_t(n > 0 ? n : 0));
  // Node r of the second tree is node map(r) of the first, renamed back.
  auto to_first = [n](int r) { return n % 2 == 1 ? (r - 1 + n) % n : n - 1 - r; };
  auto from_first = [n](int r) { return n % 2 == 1 ? (r + 1) % n : n - 1 - r; };
  for (int r = 0; r < n; ++r) {
    const TreeNode& f = first[size_t(to_first(r))];
    TreeNode& t = out[size_t(r)];
    t.parent = f.parent < 0 ? -1 : from_first(f.parent);
    for (int c : f.children)
      t.children.push_back(from_first(c));
  }
  return out;
}

} // namespace tp::models::nccl
