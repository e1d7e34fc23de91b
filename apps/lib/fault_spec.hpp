// Reads the "faults" list (and "seed", "stall_timeout") of a training job in a scenario or sweep file into a
// sim::FaultPlan, with errors that name the file and field. Format: docs/faults.md and docs/formats.md.
#pragma once

#include "sim/fault_plan.hpp"

#include <string>
#include <vector>

namespace tp::json_input {
class Object;
}

namespace tp::frontend {

/// Read `faults` (a list of objects) and `seed` from a job object. Throws json_input::LoadError on bad input.
sim::FaultPlan read_fault_plan(json_input::Object& job);

} // namespace tp::frontend
