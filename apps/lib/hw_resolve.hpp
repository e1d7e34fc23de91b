// Turn a --hw argument (a NIC, host or cluster profile, by name or path) into a cluster to simulate:
// a NIC goes into the reference host (models/hw/host/perftest-reference.json), a host is replicated.
#pragma once

#include "core/common/result.hpp"
#include "models/catalog.hpp"

#include <string>

namespace tp::frontend {

/// `min_hosts`: how many machines the job needs. `switch_name`: empty keeps the profile's or back-to-back.
Result<models::ClusterProfile> cluster_for(const models::Catalog& cat, const std::string& hw, int min_hosts,
                                           const std::string& switch_name = {});

} // namespace tp::frontend
