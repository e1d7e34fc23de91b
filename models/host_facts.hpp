// Facts about the machine this process runs on, read from /proc/meminfo, the cgroup and the process limits (the
// one place that reads them), and the budget check of a job against them. The backend-neutral arithmetic (terms,
// the time limit, the refusal and its wording) is core/common/resource_estimate.hpp; the per-unit costs are the
// backends' (sim/job_estimate.hpp, emulator/job_estimate.hpp). Budget: TENSORPATH_MEMORY_LIMIT (docs/cli.md,
// "Budget"). Tests: tests/models/host_facts_test.cpp.
#pragma once

#include "core/common/resource_estimate.hpp"

#include <cstdint>
#include <string>

namespace tp {
namespace models {

/// Memory this process may still use: the smallest of MemAvailable (/proc/meminfo), the cgroup's
/// memory.max - memory.current, and RLIMIT_AS; TENSORPATH_MEMORY_LIMIT (bytes, or "512M", "8G") replaces it.
/// 0 if nothing can be read (no memory check then).
uint64_t available_memory();

/// The memory budget of a job: available_memory() and whether TENSORPATH_MEMORY_LIMIT set it; an Error naming
/// the variable when its value is unreadable.
Result<MemoryBudget> memory_budget();

} // namespace models

/// The check every job runner makes before it starts: check_budget_against() with this machine's memory
/// (models::memory_budget()) and the time limit. An unreadable TENSORPATH_* value is an Error.
Status check_budget(const JobEstimate& e, const std::string& advice = {});

} // namespace tp
