// Turn a --hw argument (a NIC, host or cluster profile, by name or path) into a cluster to simulate:
// a NIC goes into the reference host (models/hw/host/perftest-reference.json), a host is replicated.
#pragma once

#include "core/common/result.hpp"
#include "models/catalog.hpp"
#include "models/nccl/collective_model.hpp"

#include <string>

namespace tp::frontend {

/// `min_hosts`: how many machines the job needs. `switch_name`: empty keeps the profile's or back-to-back.
Result<models::ClusterProfile> cluster_for(const models::Catalog& cat, const std::string& hw, int min_hosts,
                                           const std::string& switch_name = {});

/// What a collective job asks for beyond the setup's own fields: the network between its nodes and overrides of it.
struct CollectiveNetwork {
  std::string topology;                 ///< a topology profile; empty: the --hw cluster's, else one switch
  std::vector<double> oversubscription; ///< replaces the topology's ratios (empty: keep them)
  std::optional<models::EcmpPlacement> ecmp;
  std::string nic; ///< a NIC profile for every NIC of the host (their socket and PCIe attachment stay); empty: keep
  /// a PCIe profile for every GPU's and NIC's link and every PCIe switch's uplink (Gen4 against Gen5); empty: keep
  std::string pcie;
};

/// The metric of a fabric tier's busiest-link utilisation: "leaf>spine" -> "util_leaf_to_spine" (a name a CSV column
/// and a sweep take as is).
std::string utilisation_metric(const std::string& tier);
/// The utilisation metrics a collective or data_parallel job reports on `setup`: "util_max" and one per tier of its
/// topology, none without a multi-tier topology or with one node.
std::vector<std::string> utilisation_metrics(const models::nccl::CollectiveSetup& setup);

/// The collective setup `setup` on the host of `hw` (its first host) with the network `net`, defaults filled in and
/// checked (models::nccl::complete_setup). Errors name the job's field: "topology", "oversubscription", "ecmp", "nic",
/// or the setup's own ("gpus_per_node", ...); a profile that does not load keeps its file and field.
Result<models::nccl::CollectiveSetup> collective_setup_for(const models::Catalog& cat, const std::string& hw,
                                                           const std::string& switch_name,
                                                           models::nccl::CollectiveSetup setup,
                                                           const CollectiveNetwork& net);

} // namespace tp::frontend
