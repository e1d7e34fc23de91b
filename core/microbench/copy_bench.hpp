// Host<->GPU copy bandwidth, as CUDA's bandwidthTest measures it: repeated cudaMemcpy of one size between
// a (pinned or pageable) host buffer on a chosen NUMA node and a GPU, timed on the runtime's clock.
// Written against Runtime only, so the same code times the simulator's PCIe/NUMA model or a real copy.
// CLI: `tensorpath pcie-copy`. Tests: tests/sim/microbench_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "core/runtime/runtime.hpp"

#include <functional>

namespace tp::microbench {

struct CopyConfig {
  int gpu = 0;
  int host_node = 0;
  uint64_t bytes = 32ull << 20; ///< bandwidthTest's default 32 MiB
  int iterations = 10;
  bool pinned = true;
  /// Also a GPU-to-GPU peer copy from `gpu` to this GPU (CUDA's p2pBandwidthLatencyTest, unidirectional with P2P
  /// enabled: NVLink where the host has it, else PCIe peer-to-peer); -1: none.
  int peer_gpu = -1;
};

struct CopyResult {
  CopyConfig config;
  double h2d_bandwidth = 0; ///< bytes/s
  double d2h_bandwidth = 0;
  double d2d_bandwidth = 0; ///< device-to-device on the same GPU (read + write counted once, as bandwidthTest)
  double p2p_bandwidth = 0; ///< gpu -> peer_gpu (with peer_gpu)
};

/// Runs H2D, then D2H, then D2D, then the peer copy (with peer_gpu); `done` gets the bandwidths or the first error.
void run_copy_bench(Runtime& rt, const CopyConfig& cfg, std::function<void(Result<CopyResult>)> done);

} // namespace tp::microbench
