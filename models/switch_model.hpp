// Network switch model: port-to-port (cut-through) latency; the fabric is non-blocking.
// Profiles: models/hw/switch/*.json.
#pragma once

#include <string>

namespace tp::models {

struct SwitchProfile {
  std::string name;
  double latency = 0; ///< port-to-port latency, seconds
};

} // namespace tp::models
