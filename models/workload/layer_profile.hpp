// Measured per-layer profiles (PipeDream's graph.txt: one line per layer with forward/backward milliseconds,
// activation and parameter bytes; edges between layer ids). Parsed into layers in topological order.
// Data: models/workloads/pipedream/ (msr-fiddle/pipedream, MIT). Tests: tests/models/workload_test.cpp.
#pragma once

#include "core/common/result.hpp"

#include <string>
#include <vector>

namespace tp::models {

struct ProfiledLayer {
  std::string id;     ///< "node12"
  std::string module; ///< "Conv2d(128, 256, kernel_size=(3, 3), ...)"
  double forward_seconds = 0;
  double backward_seconds = 0;
  double activation_bytes = 0;
  double parameter_bytes = 0;
};

struct LayerProfile {
  std::string file;
  std::vector<ProfiledLayer> layers; ///< topological order (ties broken by node number)
  double compute_seconds() const;    ///< forward + backward over all layers
  double parameter_bytes() const;
};

/// Parse a PipeDream graph.txt; errors name the file, line and what was expected. Cycles are an error.
Result<LayerProfile> parse_pipedream_profile(const std::string& path);

} // namespace tp::models
