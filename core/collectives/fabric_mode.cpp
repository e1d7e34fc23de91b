// The words of the fabric modes (see fabric_mode.hpp).
#include "core/collectives/fabric_mode.hpp"

namespace tp::collectives {

Result<FabricMode> parse_fabric_mode(const std::string& s)
{
  for (const FabricMode m : {FabricMode::PROTOCOL, FabricMode::FLOW, FabricMode::ANALYTICAL})
    if (s == to_string(m)) return m;
  return Error::at("", "mode", "protocol, flow or analytical", "\"" + s + "\"");
}

Result<FabricMode> parse_collective_mode(const std::string& s)
{
  for (const FabricMode m : {FabricMode::PROTOCOL, FabricMode::ANALYTICAL})
    if (s == to_string(m)) return m;
  return Error::at("", "collective_mode", "protocol or analytical", "\"" + s + "\"");
}

const char* to_string(FabricMode m)
{
  switch (m) {
  case FabricMode::PROTOCOL:
    return "protocol";
  case FabricMode::FLOW:
    return "flow";
  case FabricMode::ANALYTICAL:
    return "analytical";
  }
  return "?";
}

} // namespace tp::collectives
