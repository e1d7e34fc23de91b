// The network models a job can run on, registered in one place by name (issue 19; as SimGrid registers its
// `network/model` choices): what each captures, which jobs it honours, and why it refuses the others. The CLI's
// --network-model options, the scenario field `network_model` and docs/network-models.md read this table.
// To add a model: docs/adding-a-network-model.md.
#pragma once

#include "core/common/result.hpp"

#include <string>
#include <vector>

namespace tp::models {

struct NetworkModelInfo {
  std::string name;
  std::string summary;           ///< one line: what it computes
  std::string captures;          ///< the mechanisms it has
  std::string misses;            ///< the mechanisms it lacks (said next to its results)
  std::vector<std::string> jobs; ///< job kinds it honours ("transfer", "training", "allreduce", "incast", ...)
  std::string faults;            ///< which fault kinds it injects, or why none
  std::string unavailable;       ///< non-empty: the model is listed but cannot run in this build, and why
};

/// Every registered model, in the order `--help` lists them.
const std::vector<NetworkModelInfo>& network_models();

/// The model named `name` for a job of kind `job`: an error naming the known models (with a did-you-mean) when the
/// name is unknown, and saying why when the model cannot honour that job or cannot run in this build.
Result<const NetworkModelInfo*> network_model_for(const std::string& name, const std::string& job,
                                                  const std::string& field = "network_model");

/// "flow, analytical, tcp-incast, ns3": the names, for help texts.
std::string network_model_names();

} // namespace tp::models
