// What a simulator job will cost on this machine (peak memory, wall time), before it starts: the SimGrid platform,
// the step graph, ring messages, transfers, perftest operations, copies, each counted from the job and priced at a
// per-unit cost measured on this code (the constants in job_estimate.cpp, with their measurements; how to re-measure:
// docs/resource-bounds.md). Every job runner checks its own estimate (check_budget) before it builds anything; the
// CLI adds up the processes of a command and checks the whole before it starts the first.
// Tests: tests/sim/resource_bounds_test.cpp.
#pragma once

#include "core/training/training_model.hpp"
#include "models/host_facts.hpp"
#include "models/host_model.hpp"
#include "sim/fabric_modes.hpp"
#include "sim/microbench_jobs.hpp"
#include "sim/training_job.hpp"
#include "sim/transfer_job.hpp"

#include <cstdint>
#include <vector>

namespace tp::sim {

/// One simulating process: its start and the SimGrid platform of the first `machines_built` machines of `cluster`
/// (default: all).
JobEstimate estimate_platform(const models::ClusterProfile& cluster, size_t machines_built = SIZE_MAX);
/// One ring allreduce (run_allreduce), platform included.
JobEstimate estimate_allreduce(const models::ClusterProfile& cluster, const AllreduceJob& job);
/// One transfer job (run_transfer_job), platform included.
JobEstimate estimate_transfer(const models::ClusterProfile& cluster, const TransferJob& job);
/// One training job (run_training_job), platform included.
JobEstimate estimate_training(const models::ClusterProfile& cluster, const training::TrainingModel& model,
                              const TrainingJob& job);
/// A perftest run (run_perftest_job), platform included.
JobEstimate estimate_perftest(const models::ClusterProfile& cluster, const PerftestJob& job);
/// The copy benchmarks (run_copy_jobs), platform included.
JobEstimate estimate_copies(const models::ClusterProfile& cluster, const std::vector<CopyJob>& jobs);

/// Vertices of the partitioned step graph of `model` under `layout` (counted, not built).
uint64_t step_graph_ops(const training::TrainingModel& model, const TrainingLayout& layout);

} // namespace tp::sim
