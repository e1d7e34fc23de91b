// GPU model: PCIe attachment, memory, compute peaks and the fixed costs of copies and kernels.
// Profiles: models/hw/gpu/*.json.
#pragma once

#include <string>

namespace tp::models {

struct GpuProfile {
  std::string name;
  /// The GPU generation ("pascal", "volta", "ampere", "hopper", ...; empty: not given): which of NCCL's
  /// per-architecture tables and protocol defaults apply (models/nccl/nccl_tuning.hpp).
  std::string architecture;
  std::string pcie;                  ///< default PCIe attachment (profile name)
  std::string file;                  ///< the file it was read from: `pcie` is resolved beside it first
  double memory = 0;                 ///< bytes
  double memory_bandwidth = 0;       ///< bytes/s
  double fp32_peak = 0;              ///< FLOP/s
  double memcpy_launch_overhead = 0; ///< fixed cost of one cudaMemcpy (driver + DMA setup), seconds
  double kernel_launch_overhead = 0; ///< fixed cost of a kernel launch, seconds
  double p2p_read_bandwidth = 0;     ///< a peer (NIC) DMA-reading this GPU's memory through the root complex, bytes/s

  /// Time of an element-wise reduction of `bytes` in GPU memory (three streams over HBM/GDDR).
  double reduce_time(double bytes) const { return kernel_launch_overhead + 3.0 * bytes / memory_bandwidth; }
};

} // namespace tp::models
