// The catalog of hardware profiles: finds <dir>/<kind>/<name>.json by name on the search path (beside the file that
// names it, --models-dir, TENSORPATH_MODELS_DIR, the built-in models/hw) or takes a path, parses and checks it
// (units and ranges, required fields, unknown and repeated fields, a `source` for every number) and resolves the
// references a host or cluster profile makes to component profiles. JSON stays inside catalog.cpp.
// Tests: tests/models/catalog_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "models/host_model.hpp"

#include <string>
#include <vector>

namespace tp::models {

/// The shipped profiles: models/hw of the source tree.
std::string builtin_models_dir();

/// One directory of the profile search path and where it came from ("--models-dir", "TENSORPATH_MODELS_DIR",
/// "built-in"), for the messages that say where a profile was looked for.
struct ModelsDir {
  std::string path;
  std::string origin;
};

/// The directories given with --models-dir (in command-line order); set once by the command line (apps/main.cpp)
/// for every subcommand.
void set_models_dirs(const std::vector<std::string>& dirs);
/// The profile search path: the --models-dir directories, then TENSORPATH_MODELS_DIR (colon-separated, like PATH;
/// empty entries skipped), then the built-in models/hw. A directory is searched as <dir>/<kind>/<name>.json, then
/// <dir>/<name>.json (a flat directory of one's own profiles; such a file must say its "kind").
std::vector<ModelsDir> models_search_path();

/// A profile named by a scenario, validation case or sweep file (`referrer`), resolved beside that file: the path
/// of the first profile of one of `kinds` found as <dir>/<name>.json (its "kind" one of `kinds`),
/// <dir>/<kind>/<name>.json or <dir>/../<kind>/<name>.json (dir: the referrer's directory), or a relative path
/// found from that directory; `name` unchanged otherwise (left to the search path), and when `referrer` is not a
/// file. docs/adding-a-hardware-profile.md.
std::string profile_beside(const std::string& name, const std::string& referrer, const std::vector<std::string>& kinds);

class Catalog {
public:
  /// The search path (models_search_path()).
  Catalog();
  /// `root` alone: a directory with one sub-directory per kind (nic, pcie, cpu, gpu, socket_link, nvlink, switch,
  /// registration, tcp, topology, host, cluster).
  explicit Catalog(std::string root);
  explicit Catalog(std::vector<ModelsDir> dirs);

  /// `name_or_path`: a profile name ("connectx3-40gbe-roce") or a path to a .json file.
  Result<NicProfile> nic(const std::string& name_or_path) const;
  Result<PcieProfile> pcie(const std::string& name_or_path) const;
  Result<CpuProfile> cpu(const std::string& name_or_path) const;
  Result<GpuProfile> gpu(const std::string& name_or_path) const;
  Result<SocketLinkProfile> socket_link(const std::string& name_or_path) const;
  Result<NvlinkProfile> nvlink(const std::string& name_or_path) const;
  Result<SwitchProfile> network_switch(const std::string& name_or_path) const;
  Result<RegistrationProfile> registration(const std::string& name_or_path) const;
  Result<TcpProfile> tcp(const std::string& name_or_path) const;
  Result<TopologyProfile> topology(const std::string& name_or_path) const;
  Result<HostProfile> host(const std::string& name_or_path) const;
  Result<ClusterProfile> cluster(const std::string& name_or_path) const;

  /// The "kind" field of a profile file ("nic", "host", ...), to dispatch on a --hw argument.
  Result<std::string> kind_of(const std::string& name_or_path) const;
  /// Parse and check profile JSON text of any kind (its "kind" field) as the loaders do, resolving the profiles
  /// it names in this catalog; `file` names it in errors and is the base of a cluster's relative "network" path.
  /// The kind, or an Error naming the field.
  Result<std::string> check_text(const std::string& text, const std::string& file) const;
  /// Names of all profiles of a kind (sorted, each once), over the whole search path.
  std::vector<std::string> list(const std::string& kind) const;
  /// Resolve a name or path to a file path. A name is looked for beside `near` (the file that names it, if any; as
  /// profile_beside does), then in each directory of the catalog; a relative path from near's directory, then as
  /// given. Error naming the places searched.
  Result<std::string> locate(const std::string& kind, const std::string& name_or_path,
                             const std::string& near = {}) const;
  /// The catalog's directories, in search order.
  const std::vector<ModelsDir>& dirs() const { return dirs_; }
  /// The last directory searched: the built-in models/hw for the search path, or the one root given.
  const std::string& root() const { return dirs_.back().path; }

private:
  std::vector<ModelsDir> dirs_;
};

} // namespace tp::models
