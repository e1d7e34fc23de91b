// Builds the SimGrid platform from a ClusterProfile and answers the latency questions of the model.
// Per machine: a "local" zone (CPU sockets, GPUs; QPI/UPI and PCIe links) for copies and compute, and one
// zone per NIC whose endpoints are "memory/GPU as seen by that NIC" so that a DMA's route is unique:
// endpoint -> [QPI] -> PCIe -> NIC. NIC zones hang off a star (the switch): port TX, then port RX; with a multi-tier
// topology (models/topology_model) off a full zone instead, with one route per pair of NIC zones through the Clos:
// port TX, the leaf's uplink and the spine's (placed by the topology's ECMP rule; "spread" as one bundle link per
// leaf and per pod carrying all their uplinks' capacity), then port RX.
// Links carry goodput bandwidths; latencies are applied by the device model, not by SimGrid
// (network/latency-factor is 0), see docs/model.md. Tests: tests/sim/platform_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "core/memory/location.hpp"
#include "models/host_model.hpp"

#include <simgrid/forward.h>

#include <optional>
#include <string>
#include <vector>

namespace tp::sim {

class Platform {
public:
  /// Build zones, hosts and links. Precondition: the SimGrid engine exists and is not running, and check_cluster
  /// accepted the cluster.
  explicit Platform(const models::ClusterProfile& cluster);
  /// Error when the platform cannot be built: a multi-tier topology that cannot hold the hosts, hosts with different
  /// NIC counts on one, or more NIC ports than its routes (one per pair of ports) can hold in memory.
  static Status check_cluster(const models::ClusterProfile& cluster);

  size_t machine_count() const { return machines_.size(); }
  const std::string& machine_name(size_t m) const { return machines_[m].name; }
  const models::HostProfile& machine(size_t m) const { return *machines_[m].profile; }
  /// Index of a machine by name, or -1.
  int find_machine(const std::string& name) const;
  const models::ClusterProfile& cluster() const { return cluster_; }

  /// Error if `loc` does not exist on machine m (no such NUMA node or GPU).
  Status check_location(size_t m, Location loc) const;
  /// CPU socket a location hangs off (NUMA node for host memory, PCIe root socket for a GPU).
  int socket_of(size_t m, Location loc) const;

  /// Compute/copy endpoints in the machine's local zone.
  simgrid::s4u::Host* cpu_host(size_t m, int socket) const { return machines_[m].cpus[size_t(socket)]; }
  simgrid::s4u::Host* gpu_host(size_t m, int gpu) const { return machines_[m].gpus[size_t(gpu)]; }
  simgrid::s4u::Host* local_host(size_t m, Location loc) const;
  /// DMA endpoint: location `loc` as reached through NIC `nic` of machine m. Every location has a source
  /// view (data leaving it) and a destination view (data arriving), so that a NIC loopback from a buffer
  /// to another buffer on the same NUMA node is still a route (through the NIC) rather than a self-loop.
  simgrid::s4u::Host* nic_endpoint(size_t m, int nic, Location loc, bool destination) const;

  /// Round trip of a DMA read issued by NIC `nic` to `loc` (root complex + inter-socket hops).
  double dma_read_latency(size_t m, int nic, Location loc) const;
  /// One-way latency of a NIC posted write to `loc` becoming visible.
  double dma_write_latency(size_t m, int nic, Location loc) const;
  /// One-way latency of a CPU MMIO write (doorbell) from socket `socket` to NIC `nic`.
  double doorbell_latency(size_t m, int nic, int socket) const;
  /// NIC-to-NIC one-way latency of a packet: TX pipeline, ports, switch, RX pipeline (no serialization).
  double wire_latency(size_t ma, int nic_a, size_t mb, int nic_b) const;
  /// Latency of a DMA by a GPU copy engine between `a` and `b` on machine m (one way, inter-socket included).
  double local_copy_latency(size_t m, Location a, Location b) const;

  const models::NicSpec& nic(size_t m, int j) const { return machines_[m].profile->nics[size_t(j)]; }
  int nic_count(size_t m) const { return int(machines_[m].profile->nics.size()); }
  /// Whether a SimGrid route between the two endpoints crosses `link_name` (tests).
  static std::vector<std::string> route_links(simgrid::s4u::Host* from, simgrid::s4u::Host* to);

private:
  struct Machine {
    std::string name;
    const models::HostProfile* profile = nullptr;
    std::vector<simgrid::s4u::Host*> cpus;
    std::vector<simgrid::s4u::Host*> gpus;
    /// nic_endpoints[nic][2*k + (destination ? 1 : 0)]: k < sockets -> host memory of socket k, else GPU k - sockets
    std::vector<std::vector<simgrid::s4u::Host*>> nic_endpoints;
  };
  void build_machine(simgrid::s4u::NetZone* root, size_t m);
  struct MachineLinks;
  void build_nic_zone(simgrid::s4u::NetZone* root, size_t m, size_t nic, const MachineLinks& links);
  /// The Clos between the NIC zones: its links and a route for every ordered pair of NIC zones.
  void build_fabric(simgrid::s4u::NetZone* root);

  models::ClusterProfile cluster_;
  std::vector<Machine> machines_;
  /// A NIC zone as the fabric sees it: its netpoint, its gateway and its port links.
  struct NicPort {
    simgrid::s4u::NetZone* zone = nullptr;
    simgrid::kernel::routing::NetPoint* gateway = nullptr;
    simgrid::s4u::Link* tx = nullptr;
    simgrid::s4u::Link* rx = nullptr;
  };
  std::vector<std::vector<NicPort>> ports_;  ///< [machine][nic], with a multi-tier topology
  std::optional<models::Topology> topology_; ///< a multi-tier topology between the hosts
};

} // namespace tp::sim
