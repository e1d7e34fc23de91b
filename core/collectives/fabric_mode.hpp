// How a collective is timed: through the transports (protocol), as plain flows on the fabric (flow), or on the
// analytical fabric (analytical). The enum and its words live here, free of any backend, so that the scenario
// parser (apps/lib, built without the simulator for the fuzz targets) can read them; the modes themselves are run by
// sim/fabric_modes.hpp. Tests: tests/sim/fabric_modes_test.cpp.
#pragma once

#include "core/common/result.hpp"

#include <string>

namespace tp::collectives {

enum class FabricMode { PROTOCOL, FLOW, ANALYTICAL };
/// "protocol", "flow" or "analytical"; an error names the field "mode".
Result<FabricMode> parse_fabric_mode(const std::string& s);
const char* to_string(FabricMode m);
/// A training job's collective_mode: protocol or analytical (FLOW is not offered there); an error names the field
/// "collective_mode".
Result<FabricMode> parse_collective_mode(const std::string& s);

} // namespace tp::collectives
