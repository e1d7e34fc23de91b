// What an emulator job will cost on this machine (peak memory, wall time) before it starts: real bytes in every
// copy a transport keeps, real memcpy and thread hand-offs, real sleeps for the scaled GPU compute. The per-unit
// costs are measured on this code (emulator/job_estimate.cpp; docs/resource-bounds.md). The job runners check
// their estimate before they start anything. Tests: tests/emulator/emulated_training_test.cpp.
#pragma once

#include "core/training/training_model.hpp"
#include "emulator/training_job.hpp"
#include "emulator/transfer_job.hpp"
#include "models/host_facts.hpp"

namespace tp::emu {

/// One emulated transfer job (run_emulated_transfer).
JobEstimate estimate_emulated_transfer(const EmuTransferJob& job);
/// Emulated training of `scaled` (the model after scale_model) for `job` (run_emulated_training).
JobEstimate estimate_emulated_training(const training::TrainingModel& scaled, const EmuTrainingJob& job);

} // namespace tp::emu
