// --hw resolution.
#include "apps/lib/hw_resolve.hpp"

namespace tp::frontend {

Result<models::ClusterProfile> cluster_for(const models::Catalog& cat, const std::string& hw, int min_hosts,
                                           const std::string& switch_name)
{
  auto kind = cat.kind_of(hw);
  if (!kind.ok()) return kind.error();
  auto sw = cat.network_switch(switch_name.empty() ? "back-to-back" : switch_name);
  if (!sw.ok()) return sw.error();
  const int n = std::max(min_hosts, 2);
  if (*kind == "nic") {
    auto nic = cat.nic(hw);
    if (!nic.ok()) return nic.error();
    auto host = cat.host("perftest-reference");
    if (!host.ok()) return host.error();
    auto pcie = cat.pcie(nic->pcie);
    if (!pcie.ok()) return pcie.error();
    models::HostProfile h = host.value();
    h.name = "perftest-reference+" + nic->name;
    h.nics.clear();
    h.nics.push_back(models::NicSpec{nic.value(), 0, pcie.value()});
    return models::make_cluster(h, n, sw.value(), "node");
  }
  if (*kind == "host") {
    auto host = cat.host(hw);
    if (!host.ok()) return host.error();
    return models::make_cluster(host.value(), n, sw.value(), "node");
  }
  if (*kind == "cluster") {
    auto c = cat.cluster(hw);
    if (!c.ok()) return c.error();
    if (int(c->host_count()) < min_hosts)
      return Error::at(hw, "hosts", "at least " + std::to_string(min_hosts) + " hosts",
                       std::to_string(c->host_count()));
    if (!switch_name.empty()) c->network_switch = sw.value();
    return c;
  }
  return Error::at(hw, "kind", "a nic, host or cluster profile", "\"" + *kind + "\"");
}

} // namespace tp::frontend
