// --hw resolution.
#include "apps/lib/hw_resolve.hpp"

#include <fmt/format.h>

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
    if (!switch_name.empty()) {
      c->network_switch = sw.value();
      // A fabric of several switches takes the override as its leaves' model (and every tier's without its own).
      if (c->topology) c->topology->switch_model = sw.value();
    }
    return c;
  }
  return Error::at(hw, "kind", "a nic, host or cluster profile", "\"" + *kind + "\"");
}

std::string utilisation_metric(const std::string& tier)
{
  std::string name = tier;
  if (const auto gt = name.find('>'); gt != std::string::npos) name.replace(gt, 1, "_to_");
  return "util_" + name;
}

std::vector<std::string> utilisation_metrics(const models::nccl::CollectiveSetup& setup)
{
  if (setup.nodes < 2 || !setup.topology || setup.topology->tiers < 2) return {};
  std::vector<std::string> out{"util_max"};
  const int tiers = setup.topology->tiers == 3 ? models::FabricLink::TIERS : models::FabricLink::SPINE_UP;
  for (int t = 0; t < tiers; ++t)
    out.push_back(utilisation_metric(models::to_string(models::FabricLink::Tier(t))));
  return out;
}

Result<models::nccl::CollectiveSetup> collective_setup_for(const models::Catalog& cat, const std::string& hw,
                                                           const std::string& switch_name,
                                                           models::nccl::CollectiveSetup setup,
                                                           const CollectiveNetwork& net)
{
  auto cluster = cluster_for(cat, hw, 1, switch_name);
  if (!cluster.ok()) return cluster.error();
  models::HostProfile host = cluster->host(0);
  if (!net.nic.empty()) {
    auto nic = cat.nic(net.nic);
    if (!nic.ok()) return Error::at("", "nic", nic.error().expected, nic.error().got);
    for (auto& n : host.nics)
      n.nic = nic.value();
  }
  if (!net.pcie.empty()) {
    auto pcie = cat.pcie(net.pcie);
    if (!pcie.ok()) return Error::at("", "pcie", pcie.error().expected, pcie.error().got);
    for (auto& g : host.gpus)
      g.pcie = pcie.value();
    for (auto& n : host.nics)
      n.pcie = pcie.value();
    for (auto& w : host.pcie_switches)
      w.uplink = pcie.value();
  }
  if (!net.topology.empty()) {
    auto t = cat.topology(net.topology);
    if (!t.ok()) {
      Error e = t.error();
      if (e.file.empty()) e.field = "topology"; // a name not found; a file that does not load keeps its file
      return e;
    }
    setup.topology = t.value();
  } else {
    setup.topology = cluster->topology;
  }
  const bool multi_tier = setup.topology && setup.topology->tiers > 1;
  if (!net.oversubscription.empty()) {
    if (!multi_tier)
      return Error::at("", "oversubscription", "a multi-tier topology to apply to (a job's \"topology\", --topology)",
                       "one switch between the nodes");
    if (net.oversubscription.size() != setup.topology->oversubscription.size())
      return Error::at("", "oversubscription",
                       fmt::format("{} ratio(s) for {} ({} tiers: one per tier below the top)",
                                   setup.topology->oversubscription.size(), setup.topology->name,
                                   setup.topology->tiers),
                       fmt::format("{}", net.oversubscription.size()));
    setup.topology->oversubscription = net.oversubscription;
  }
  if (net.ecmp) {
    if (!multi_tier)
      return Error::at("", "ecmp", "a multi-tier topology to apply to (a job's \"topology\", --topology)",
                       "one switch between the nodes");
    setup.topology->ecmp = *net.ecmp;
  }
  return models::nccl::complete_setup(std::move(setup), host);
}

} // namespace tp::frontend
