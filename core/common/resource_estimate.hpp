// What a job will cost (peak memory and wall time), estimated before it starts, and the budget check that refuses
// a job beyond what the machine holds or the user allows, with the estimate, the parameter that drives it and how
// to override. Backend-neutral: the per-unit costs are the backends' (sim/job_estimate, emulator/job_estimate),
// measured on this code; this file only adds them up and compares. What the machine has (/proc, the cgroup) is read
// outside core, in models/host_facts.hpp, which also holds check_budget(), the check with this machine's memory.
// Budget: TENSORPATH_MEMORY_LIMIT and TENSORPATH_TIME_LIMIT (docs/cli.md, "Budget").
// Tests: tests/core/resource_estimate_test.cpp.
#pragma once

#include "core/common/result.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tp {

/// One part of a job's cost: what it counts, the parameter that makes it grow, and what it needs.
struct CostTerm {
  std::string what;      ///< "2,199,021,158,400 ring messages x 0.5 us"
  std::string parameter; ///< what drives it, as the user wrote it: "ranks = 1048576"
  double bytes = 0;      ///< memory (in the process that runs it)
  double seconds = 0;    ///< wall time on this machine
};

/// A job's estimate: its terms, the peak memory of its largest process and its wall time in all.
struct JobEstimate {
  std::string job; ///< "allreduce, analytical mode, 1048576 ranks"
  std::vector<CostTerm> terms;
  double bytes = 0;   ///< peak memory (the largest process)
  double seconds = 0; ///< wall time, every process in turn

  /// A part of the same process: memory and time add.
  void add(std::string what, std::string parameter, double bytes, double seconds);
  /// Another job run after this one in its own process: times add, memory is the larger of the two.
  void then(const JobEstimate& next);
  /// The term that needs the most time (memory: `by_memory`); null without terms.
  const CostTerm* driver(bool by_memory) const;
  /// Replace the parameter name `from` (its start) by `to` in every term ("ranks" -> "--ranks").
  void rename_parameter(const std::string& from, const std::string& to);
};

/// The memory a job may use: `bytes` (0: not known, no memory check) and whether the user set it
/// (TENSORPATH_MEMORY_LIMIT) rather than the machine reporting it (models/host_facts.hpp reads both).
struct MemoryBudget {
  uint64_t bytes = 0;
  bool set_by_user = false;
};

/// The wall-time budget of one command in seconds (5 minutes by default: an interactive command that would run longer
/// is refused unless the user says so): TENSORPATH_TIME_LIMIT ("600", "500ms", "90s", "10m", "2h", "1d";
/// "0", "none" or "unlimited": no limit), else DEFAULT_TIME_LIMIT. 0 means no limit. Error for an unreadable value.
constexpr double DEFAULT_TIME_LIMIT = 300;
Result<double> time_limit();
/// This process runs a job under its own timeout (a sweep point's point_timeout, a validation case's --timeout):
/// that timeout replaces the default limit (TENSORPATH_TIME_LIMIT still applies where it is lower), so that a job
/// which would be stopped at its timeout is refused up front with its estimate. `source` names it in refusals.
void set_job_timeout(double seconds, const std::string& source);

/// Ok when the estimate fits: memory within 90 % of `memory`, time within the time limit. Otherwise an Error
/// naming the job, what it would need, what is allowed, the term (parameter) that drives the excess, `advice` and
/// the variables that let it run anyway. An unreadable TENSORPATH_TIME_LIMIT is an Error too. Job runners call
/// check_budget() (models/host_facts.hpp), which passes this machine's memory.
Status check_budget_against(const JobEstimate& e, const MemoryBudget& memory, const std::string& advice = {});

/// "1.2 GB", "35 MB"; "12 s", "3.5 min", "2.1 h", "4.0 d".
std::string human_bytes(double bytes);
std::string human_seconds(double seconds);
/// 1234567 -> "1,234,567" (numbers up to 2^64 and beyond in doubles: "2.2e+12" above 1e15).
std::string human_count(double n);

} // namespace tp
