// Cluster host enumeration.
#include "models/host_model.hpp"

#include <cassert>

namespace tp::models {

int HostProfile::nic_for_gpu(int gpu) const
{
  const int sw = gpus[size_t(gpu)].pcie_switch;
  if (sw >= 0) {
    std::vector<int> under;
    for (size_t n = 0; n < nics.size(); ++n)
      if (nics[n].pcie_switch == sw) under.push_back(int(n));
    int before = 0; // GPUs of the same switch ahead of this one
    for (int g = 0; g < gpu; ++g)
      before += gpus[size_t(g)].pcie_switch == sw ? 1 : 0;
    if (!under.empty()) return under[size_t(before) % under.size()];
  }
  for (size_t n = 0; n < nics.size(); ++n)
    if (nics[n].socket == gpus[size_t(gpu)].socket) return int(n);
  return 0;
}

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
