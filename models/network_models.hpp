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
  /// The fault types (fault_type_names()) it injects, in that order; empty: none. check_faults_supported reads it.
  std::vector<std::string> fault_types;
  /// In words: how it injects them, or why it injects none and what to use instead (said in the refusal). It names
  /// no fault type itself: injected_faults_text puts the list from `fault_types` in front of it.
  std::string faults;
  std::string unavailable; ///< non-empty: the model is listed but cannot run in this build, and why
};

/// The fault types a job's `faults[i].type` may name (docs/faults.md), in the order the docs list them: link_down,
/// packet_loss, no_receive, qp_error, process_death, host_death.
const std::vector<std::string>& fault_type_names();

/// Every registered model, in the order `--help` lists them.
const std::vector<NetworkModelInfo>& network_models();

/// A comma-separated list of network models ("flow,roce") for a job of kind `job`: at least one, each known and
/// honouring the kind (network_model_for); the error names `field`.
Result<std::vector<std::string>> network_model_list(const std::string& list, const std::string& job,
                                                    const std::string& field);

/// The model named `name` for a job of kind `job`: an error naming the known models (with a did-you-mean) when the
/// name is unknown, and saying why when the model cannot honour that job or cannot run in this build.
Result<const NetworkModelInfo*> network_model_for(const std::string& name, const std::string& job,
                                                  const std::string& field = "network_model");

/// Whether model `model` injects every fault of `types` (a job's faults[i].type, in order) into a job of kind `job`:
/// ok, or an error at field "faults[i].type" (the first it cannot inject; the caller puts the job's path in front)
/// naming the model, the fault type, why the model injects none of it, and the models that would inject it into
/// that kind of job. A job never runs without a fault it names.
Status check_faults_supported(const std::string& model, const std::string& job, const std::vector<std::string>& types);

/// The model's faults in words, from the data: "link_down, packet_loss, ... (how)" or "none (why)".
std::string injected_faults_text(const NetworkModelInfo& m);

/// "flow, analytical, tcp-incast, ns3": the names, for help texts.
std::string network_model_names();

} // namespace tp::models
