// Memory a job will need, estimated before it starts, and the check that refuses a job the machine cannot hold
// (with the estimate and what to change) instead of letting the kernel kill it half-way: simulated training
// (bytes per step-graph op and per process), materialized transfers and emulated training (real bytes). The
// constants are measured (docs/faults.md, "Resource bounds"). Reads /proc and the cgroup: no SimGrid, no verbs.
// Tests: tests/core/resource_estimate_test.cpp.
#pragma once

#include "core/common/result.hpp"

#include <cstdint>
#include <string>

namespace tp {

struct MemoryEstimate {
  double bytes = 0;
  std::string parts; ///< "1,234,567 step-graph ops x 6 KiB + ..." for the message
};

/// A training job: `graph_ops` vertices of the partitioned step graph, `processes` simulated processes.
MemoryEstimate estimate_training(uint64_t graph_ops, uint64_t processes);
/// A transfer job: `materialized_bytes` of tensors that carry real bytes (0 when virtual), on two processes.
MemoryEstimate estimate_transfer(uint64_t materialized_bytes, uint64_t tensors);
/// An emulated transfer of one tensor of `bytes` (every byte real): the copies alive at once at its peak.
MemoryEstimate estimate_emulated_transfer(uint64_t bytes);
/// Emulated training: every byte is real. `model_bytes` after scaling, `towers` GPUs in all, `tasks` processes.
MemoryEstimate estimate_emulated_training(uint64_t model_bytes, uint64_t towers, uint64_t tasks);

/// Memory this process may still use: the smallest of MemAvailable (/proc/meminfo), the cgroup's
/// memory.max - memory.current, and RLIMIT_AS; TENSORPATH_MEMORY_LIMIT (bytes, or "512M", "8G") replaces it.
/// 0 if nothing can be read (no check then).
uint64_t available_memory();

/// Error naming `what`, the estimate, what is available and `advice` when the estimate exceeds 90 % of what is
/// available; ok otherwise.
Status check_memory(const MemoryEstimate& need, const std::string& what, const std::string& advice);

} // namespace tp
