// Cluster host enumeration.
#include "models/host_model.hpp"

#include <cassert>

namespace tp::models {

std::vector<std::string> ClusterProfile::host_names() const
{
  std::vector<std::string> names;
  for (const auto& g : groups)
    for (int i = 0; i < g.count; ++i)
      names.push_back(g.prefix + std::to_string(i));
  return names;
}

size_t ClusterProfile::host_count() const
{
  size_t n = 0;
  for (const auto& g : groups)
    n += size_t(g.count);
  return n;
}

const HostProfile& ClusterProfile::host(size_t i) const
{
  for (const auto& g : groups) {
    if (i < size_t(g.count)) return g.host;
    i -= size_t(g.count);
  }
  assert(false && "host index out of range");
  return groups.front().host;
}

ClusterProfile make_cluster(const HostProfile& host, int count, const SwitchProfile& sw, const std::string& prefix)
{
  ClusterProfile c;
  c.name = host.name + "-x" + std::to_string(count);
  c.groups.push_back(HostGroup{prefix, count, host});
  c.network_switch = sw;
  return c;
}

} // namespace tp::models
