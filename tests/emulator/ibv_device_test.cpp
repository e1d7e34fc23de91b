// The libibverbs device: where this machine has no RDMA device (these CI kernels have none) it says so with an
// "Unavailable" error and the test stops there, with that message; with a device (hardware or rxe) a WRITE
// between two QPs of one device lands and every transport moves real bytes over it.
#include "core/rendezvous/rendezvous_key.hpp"
#include "core/transports/transport.hpp"
#include "emulator/emulation.hpp"
#include "emulator/ibv_device.hpp"
#include "emulator/transfer_job.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>

using namespace tp;
using namespace tp::emu;

TEST_CASE("libibverbs device opens or says plainly that there is no RDMA device", "[ibv]")
{
  HostMemory mem;
  LoopRuntime rt("probe", mem);
  auto d = IbvDevice::open(rt);
  if (!d.ok()) {
    CHECK(d.error().code == "Unavailable");
    CHECK(d.error().message().find("no RDMA device") != std::string::npos);
    WARN("skipped: " << d.error().message());
    return;
  }
  const auto attr = d.value()->query();
  CHECK_FALSE(attr.name.empty());
}

TEST_CASE("libibverbs device: every transport moves real bytes when a device exists", "[ibv]")
{
  auto devs = IbvDevice::list();
  if (!devs.ok()) {
    WARN("skipped: " << devs.error().message());
    return;
  }
  for (const std::string& t : transports::transport_names()) { // every registered transport
    EmuTransferJob j;
    j.transport = t;
    j.device = "ibv";
    j.sizes = {4096, 1 << 20};
    j.steps = 2;
    auto r = run_emulated_transfer(j);
    INFO(t);
    REQUIRE(r.ok());
    for (const auto& p : r->points)
      CHECK(p.bytes_ok);
  }
}
