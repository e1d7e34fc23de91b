// The catalog of hardware profiles: finds models/hw/<kind>/<name>.json by name (or takes a path), parses
// and checks it (units, required fields, unknown fields, a `source` for every number) and resolves the
// references a host or cluster profile makes to component profiles. JSON stays inside catalog.cpp.
// Tests: tests/models/catalog_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "models/host_model.hpp"

#include <string>
#include <vector>

namespace tp::models {

/// Directory holding the shipped profiles (models/hw of the source tree, or TENSORPATH_MODELS_DIR).
std::string default_models_dir();

class Catalog {
public:
  /// `root` is a directory with one sub-directory per kind (nic, pcie, cpu, gpu, socket_link, switch,
  /// registration, tcp, host, cluster).
  explicit Catalog(std::string root = default_models_dir());

  /// `name_or_path`: a profile name ("connectx3-40gbe-roce") or a path to a .json file.
  Result<NicProfile> nic(const std::string& name_or_path) const;
  Result<PcieProfile> pcie(const std::string& name_or_path) const;
  Result<CpuProfile> cpu(const std::string& name_or_path) const;
  Result<GpuProfile> gpu(const std::string& name_or_path) const;
  Result<SocketLinkProfile> socket_link(const std::string& name_or_path) const;
  Result<SwitchProfile> network_switch(const std::string& name_or_path) const;
  Result<RegistrationProfile> registration(const std::string& name_or_path) const;
  Result<TcpProfile> tcp(const std::string& name_or_path) const;
  Result<HostProfile> host(const std::string& name_or_path) const;
  Result<ClusterProfile> cluster(const std::string& name_or_path) const;

  /// The "kind" field of a profile file ("nic", "host", ...), to dispatch on a --hw argument.
  Result<std::string> kind_of(const std::string& name_or_path) const;
  /// Parse and check profile JSON text of any kind (its "kind" field) as the loaders do, resolving the profiles
  /// it names in this catalog; `file` names it in errors and is the base of a cluster's relative "network" path.
  /// The kind, or an Error naming the field.
  Result<std::string> check_text(const std::string& text, const std::string& file) const;
  /// Names of all profiles of a kind (sorted).
  std::vector<std::string> list(const std::string& kind) const;
  /// Resolve a name or path to a file path; Error naming the places searched.
  Result<std::string> locate(const std::string& kind, const std::string& name_or_path) const;
  const std::string& root() const { return root_; }

private:
  std::string root_;
};

} // namespace tp::models
