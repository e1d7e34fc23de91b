// `tensorpath profiles [KIND] [NAME]`: list the hardware profiles, or show one with its derived figures.
#include "apps/commands.hpp"
#include "core/common/suggest.hpp"
#include "models/catalog.hpp"

#include <algorithm>
#include <iterator>

#include <cstdio>

namespace tp::cli {

namespace {

const char* const KINDS[] = {"nic",    "pcie",         "cpu", "gpu",  "socket_link", "nvlink",
                             "switch", "registration", "tcp", "host", "cluster",     "topology"};

int show(const models::Catalog& cat, const std::string& kind, const std::string& name)
{
  if (kind == "nic") {
    auto n = cat.nic(name);
    if (!n.ok()) {
      return report_error(n.error());
    }
    std::printf("%s: %s\n  link layer %s, line rate %.2f Gb/s, MTU %u, %.0f B headers per packet\n"
                "  wire goodput %.3f Gb/s (%.1f %% of line rate), PCIe %s\n",
                n->name.c_str(), n->description.c_str(), models::to_string(n->link_layer), n->line_rate * 8e-9, n->mtu,
                n->packet_overhead, n->wire_goodput() * 8e-9, n->payload_efficiency() * 100, n->pcie.c_str());
  } else if (kind == "pcie") {
    auto p = cat.pcie(name);
    if (!p.ok()) {
      return report_error(p.error());
    }
    std::printf("%s: %d lanes at %.0f GT/s: raw %.3f GB/s, TLP layer %.3f GB/s, posted writes %.3f GB/s,\n"
                "  read completions %.3f GB/s (64 B) / %.3f GB/s (128 B) per direction\n",
                p->name.c_str(), p->lanes, p->transfer_rate * 1e-9, p->raw_bandwidth() * 1e-9,
                p->tlp_bandwidth() * 1e-9, p->posted_write_bandwidth() * 1e-9, p->read_completion_bandwidth(64) * 1e-9,
                p->read_completion_bandwidth(128) * 1e-9);
  } else if (kind == "nvlink") {
    auto v = cat.nvlink(name);
    if (!v.ok()) {
      return report_error(v.error());
    }
    std::printf("%s: %d links x %.1f GB/s per direction = %.1f GB/s line rate per GPU and direction,\n"
                "  %.1f GB/s of data (payload efficiency %.3f), %.2f us one way through the switch\n",
                v->name.c_str(), v->links, v->link_bandwidth * 1e-9, v->bandwidth() * 1e-9, v->goodput() * 1e-9,
                v->payload_efficiency, v->latency * 1e6);
  } else if (kind == "host") {
    auto h = cat.host(name);
    if (!h.ok()) {
      return report_error(h.error());
    }
    std::printf("%s: %zu socket(s)", h->name.c_str(), h->sockets.size());
    for (size_t s = 0; s < h->sockets.size(); ++s)
      std::printf("%s %s", s ? "," : "", h->sockets[s].cpu.name.c_str());
    std::printf("\n");
    auto behind = [&](int sw) { return sw < 0 ? std::string() : ", behind PCIe switch " + std::to_string(sw); };
    for (size_t w = 0; w < h->pcie_switches.size(); ++w)
      std::printf("  pcie switch %zu on socket %d, uplink %s\n", w, h->pcie_switches[w].socket,
                  h->pcie_switches[w].uplink.name.c_str());
    for (size_t g = 0; g < h->gpus.size(); ++g)
      std::printf("  gpu%zu %s on socket %d (%s%s)\n", g, h->gpus[g].gpu.name.c_str(), h->gpus[g].socket,
                  h->gpus[g].pcie.name.c_str(), behind(h->gpus[g].pcie_switch).c_str());
    for (size_t n = 0; n < h->nics.size(); ++n)
      std::printf("  nic%zu %s on socket %d (%s%s)\n", n, h->nics[n].nic.name.c_str(), h->nics[n].socket,
                  h->nics[n].pcie.name.c_str(), behind(h->nics[n].pcie_switch).c_str());
    if (h->nvlink)
      std::printf("  GPUs on %s: %d links x %.1f GB/s per direction, %.1f GB/s of data per GPU and direction\n",
                  h->nvlink->name.c_str(), h->nvlink->links, h->nvlink->link_bandwidth * 1e-9,
                  h->nvlink->goodput() * 1e-9);
  } else if (kind == "topology") {
    auto t = cat.topology(name);
    if (!t.ok()) return report_error(t.error());
    std::printf("%s (%s)\n", t->name.c_str(), t->file.c_str());
    std::printf("  %d tier%s", t->tiers, t->tiers == 1 ? ": one non-blocking switch" : "s");
    if (t->tiers > 1) {
      std::printf(", %d NIC ports per leaf", t->leaf_ports);
      if (t->tiers == 3) std::printf(", %d leaves per pod", t->pod_leaves);
      std::printf(", oversubscription");
      for (double r : t->oversubscription)
        std::printf(" %g:1", r);
      std::printf(", %s, ECMP %s", models::to_string(t->wiring), models::to_string(t->ecmp));
      if (t->uplink_line_rate > 0) std::printf(", uplinks %.0f Gb/s", t->uplink_line_rate * 8e-9);
      if (t->spine_uplink_line_rate > 0) std::printf(", spine uplinks %.0f Gb/s", t->spine_uplink_line_rate * 8e-9);
    }
    std::printf("\n  %s %s: %.0f ns\n", t->tiers > 1 ? "leaves" : "switch", t->switch_model.name.c_str(),
                t->switch_model.latency * 1e9);
    if (t->tiers > 1) std::printf("  spines %s: %.0f ns\n", t->spine().name.c_str(), t->spine().latency * 1e9);
    if (t->tiers == 3) std::printf("  cores %s: %.0f ns\n", t->core().name.c_str(), t->core().latency * 1e9);
  } else if (kind == "switch") {
    auto sw = cat.network_switch(name);
    if (!sw.ok()) return report_error(sw.error());
    auto path = cat.locate(kind, name);
    if (!path.ok()) return report_error(path.error());
    std::printf("%s (%s): %.0f ns port to port\n", sw->name.c_str(), path.value().c_str(), sw->latency * 1e9);
    if (!sw->buffer) {
      std::printf("  no buffer given (tcp-incast and roce need the port's or the fabric's bytes from the job)\n");
    } else {
      const auto& b = *sw->buffer;
      if (b.memory > 0) std::printf("  packet memory %.2f MB\n", double(b.memory) * 1e-6);
      std::printf("  lossy pool %.3f MB, alpha %g: one hot egress port holds %.3f MB, each of 4 at once %.3f MB\n",
                  double(b.lossy_pool) * 1e-6, b.lossy_alpha,
                  double(models::dynamic_threshold_share(b.lossy_pool, b.lossy_alpha, 1)) * 1e-6,
                  double(models::dynamic_threshold_share(b.lossy_pool, b.lossy_alpha, 4)) * 1e-6);
      if (b.lossless_pool > 0)
        std::printf("  lossless pool %.3f MB, alpha %g: PFC pauses an ingress priority group above alpha x the "
                    "pool's free bytes\n",
                    double(b.lossless_pool) * 1e-6, b.lossless_alpha);
      if (!b.pfc.empty()) {
        std::printf("  PFC per lossless priority group (%s cable), speed: headroom (XOFF_TH) / XON_TH bytes:",
                    b.pfc_cable.c_str());
        for (const auto& row : b.pfc)
          std::printf(" %gG: %llu / %llu", row.rate * 1e-9, (unsigned long long)row.xoff, (unsigned long long)row.xon);
        std::printf("; XON_OFFSET_TH %llu\n", (unsigned long long)b.xon_offset);
      }
    }
  } else {
    auto path = cat.locate(kind, name);
    if (!path.ok()) {
      return report_error(path.error());
    }
    // Load and check it too: a profile that does not load is an error, not a path printed as if it were fine.
    auto loaded = [&]() -> Status {
      auto st = ok_status();
      auto keep = [&](const auto& r) {
        if (!r.ok()) st = r.error();
      };
      if (kind == "cpu") keep(cat.cpu(name));
      if (kind == "gpu") keep(cat.gpu(name));
      if (kind == "socket_link") keep(cat.socket_link(name));
      if (kind == "switch") keep(cat.network_switch(name));
      if (kind == "registration") keep(cat.registration(name));
      if (kind == "tcp") keep(cat.tcp(name));
      if (kind == "cluster") keep(cat.cluster(name));
      return st;
    }();
    if (!loaded.ok()) return report_error(loaded.error());
    std::printf("%s\n", path.value().c_str());
  }
  return exit_code::OK;
}

int run_profiles(const frontend::ParsedArgs& a)
{
  models::Catalog cat; // the search path (--models-dir, TENSORPATH_MODELS_DIR, the built-in models/hw)
  const auto& pos = a.positional();
  const std::vector<std::string> kinds(std::begin(KINDS), std::end(KINDS));
  if (pos.size() > 2)
    return report_error(Error::at("", "tensorpath profiles", "at most KIND and NAME", pos[2] + " (one too many)"));
  if (!pos.empty() && std::find(kinds.begin(), kinds.end(), pos[0]) == kinds.end())
    return report_error(
        Error::at("", "tensorpath profiles KIND", one_of_names(pos[0], kinds), unknown_name(pos[0], kinds)));
  if (pos.size() == 2) return show(cat, pos[0], pos[1]);
  for (const char* kind : KINDS) {
    if (!pos.empty() && pos[0] != kind) continue;
    std::printf("%s:\n", kind);
    for (const auto& n : cat.list(kind))
      std::printf("  %s\n", n.c_str());
  }
  return 0;
}

} // namespace

Command profiles_command()
{
  frontend::CommandSpec s;
  s.max_positionals = 2;
  s.name = "profiles";
  s.summary = "list the hardware profiles (the search path: --models-dir, TENSORPATH_MODELS_DIR, models/hw), or show "
              "one: profiles KIND NAME";
  s.usage = "[KIND [NAME]] [--models-dir DIR]...";
  s.details = "KIND is one of nic, pcie, cpu, gpu, socket_link, nvlink, switch, registration, tcp, host, cluster, "
              "topology.";
  return {s, &run_profiles};
}

} // namespace tp::cli
