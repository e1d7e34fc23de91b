// The links between host memory, GPUs and NICs (models/host_paths): which links a path crosses on today's nodes and
// on the older two-socket hosts, and the rates the profiles give them.
#include "models/catalog.hpp"
#include "models/host_paths.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using namespace tp;
using namespace tp::models;

namespace {

HostProfile host(const std::string& name)
{
  Catalog cat;
  auto h = cat.host(name);
  REQUIRE(h.ok());
  return h.value();
}

bool crosses(const HostPath& p, HostLink::Kind k)
{
  return std::any_of(p.begin(), p.end(), [k](const HostLink& l) { return l.kind == k; });
}

} // namespace

TEST_CASE("a GPU and the NIC behind its own PCIe switch meet inside the switch, in both directions")
{
  const auto h = host("hgx-h100-8gpu");
  REQUIRE(h.same_pcie_switch(3, 3));
  CHECK(nic_reads(h, 3, Location::gpu(3)) == HostPath{{HostLink::GPU_UP, 3}, {HostLink::NIC_DOWN, 3}});
  CHECK(nic_writes(h, 3, Location::gpu(3)) == HostPath{{HostLink::NIC_UP, 3}, {HostLink::GPU_DOWN, 3}});
  // Another GPU's memory is reached through both switches' uplinks and the root complex, at the peer-read limit.
  const auto far = nic_reads(h, 3, Location::gpu(2));
  CHECK(crosses(far, HostLink::SWITCH_UP));
  CHECK(crosses(far, HostLink::SWITCH_DOWN));
  CHECK(crosses(far, HostLink::GPU_P2P_READ));
}

TEST_CASE("GPUs on an NVLink fabric reach each other over NVLink only, at its goodput")
{
  const auto h = host("dgx-a100-8gpu");
  const auto p = gpu_to_gpu(h, 0, 7);
  CHECK(p == HostPath{{HostLink::NVLINK_TX, 0}, {HostLink::NVLINK_RX, 7}});
  CHECK(slowest_rate(h, p) == h.nvlink->goodput());
}

TEST_CASE("across sockets a GPU peer path takes the socket link's peer limit and the link itself")
{
  const auto h = host("hkust-k40m-cx3");
  int a = -1, b = -1;
  for (int g = 0; g < int(h.gpus.size()); ++g)
    (h.gpus[size_t(g)].socket == 0 ? a : b) = g;
  REQUIRE(a >= 0);
  REQUIRE(b >= 0);
  const auto p = gpu_to_gpu(h, a, b);
  CHECK(p.front() == HostLink{HostLink::GPU_UP, a});
  CHECK(p.back() == HostLink{HostLink::GPU_DOWN, b});
  CHECK(crosses(p, HostLink::SOCKET_P2P));
  CHECK(slowest_rate(h, p) <= h.socket_link.gpu_p2p_bandwidth);
  // Host memory of the GPU's own socket: the GPU's link alone; of the other socket: the socket link too.
  CHECK(host_to_gpu(h, 0, a) == HostPath{{HostLink::GPU_DOWN, a}});
  CHECK(host_to_gpu(h, 1, a) == HostPath{{HostLink::SOCKET, 1, 0}, {HostLink::GPU_DOWN, a}});
}

TEST_CASE("link rates: posted writes going up, the root's read completions coming down")
{
  const auto h = host("hgx-h100-8gpu");
  const auto& g = h.gpus[0];
  const double completion = h.sockets[size_t(g.socket)].cpu.read_completion_size;
  CHECK(link_rate(h, {HostLink::GPU_UP, 0}) == g.pcie.posted_write_bandwidth());
  CHECK(link_rate(h, {HostLink::GPU_DOWN, 0}) == g.pcie.read_completion_bandwidth(completion));
  CHECK(link_rate(h, {HostLink::GPU_P2P_READ, 0}) == g.gpu.p2p_read_bandwidth);
  CHECK(std::isinf(slowest_rate(h, {})));
}
