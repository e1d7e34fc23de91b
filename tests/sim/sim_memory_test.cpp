// Simulated address spaces: capacity, lookup, materialized bytes.
#include "sim/sim_memory.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace tp;

TEST_CASE("Allocations are address ranges with a location, capacity is enforced", "[quick]")
{
  sim::SimMemory m("p", {{Location::host(0), 1e6}, {Location::gpu(0), 1e9}}, false);
  AllocAttr a;
  a.location = Location::host(0);
  auto b1 = m.allocate(600000, a);
  REQUIRE(b1.ok());
  CHECK_FALSE(b1->materialized());
  auto b2 = m.allocate(600000, a);
  REQUIRE_FALSE(b2.ok());
  CHECK(b2.error().message().find("host:0") != std::string::npos);
  a.location = Location::gpu(1);
  CHECK_FALSE(m.allocate(10, a).ok());
  a.location = Location::gpu(0);
  auto g = m.allocate(1 << 20, a);
  REQUIRE(g.ok());
  CHECK(g->location == Location::gpu(0));
  CHECK(m.find(g->addr + 100)->addr == g->addr);
  CHECK_FALSE(m.find(g->addr + (1 << 20)).has_value());
  m.free(b1.value());
  CHECK(m.allocate(600000, AllocAttr::at(Location::host(0))).ok());
}

TEST_CASE("Materialized buffers carry zeroed bytes that resolve() exposes", "[quick]")
{
  sim::SimMemory m("p", {{Location::host(0), 1e9}}, true);
  auto b = m.allocate(100, AllocAttr::at(Location::host(0)));
  REQUIRE(b.ok());
  REQUIRE(b->materialized());
  CHECK(b->data[99] == 0);
  CHECK(m.resolve(b->addr + 10, 90) == b->data + 10);
  CHECK(m.resolve(b->addr + 10, 91) == nullptr);
  AllocAttr v = AllocAttr::at(Location::host(0));
  v.materialize = false;
  auto w = m.allocate(100, v);
  CHECK(m.resolve(w->addr, 1) == nullptr);
}

TEST_CASE("A buffer can back only its first bytes (a header in front of a simulated payload)", "[quick]")
{
  sim::SimMemory m("p", {{Location::host(0), 1e12}}, false);
  AllocAttr a = AllocAttr::at(Location::host(0));
  a.materialize_prefix = 600;
  auto b = m.allocate(100ull << 20, a);
  REQUIRE(b.ok());
  CHECK(m.backed_length(b->addr, 1000) == 600);
  CHECK(m.backed_length(b->addr + 100, 1000) == 500);
  CHECK(m.backed_length(b->addr + 600, 10) == 0);
  CHECK(m.resolve(b->addr, 600) != nullptr);
  CHECK(m.resolve(b->addr, 601) == nullptr);
}

TEST_CASE("Look-ups after a free: the allocations found last are forgotten with it", "[quick]")
{
  // SimMemory keeps the last few allocations it found (a transfer asks about one buffer piece after piece); a freed one
  // must not be found again, nor its bytes resolved, while the others still are.
  sim::SimMemory m("p", {{Location::host(0), 1e9}}, true);
  std::vector<Buffer> bufs;
  for (int i = 0; i < 6; ++i) {
    auto b = m.allocate(1000, AllocAttr::at(Location::host(0)));
    REQUIRE(b.ok());
    bufs.push_back(*b);
  }
  for (const Buffer& b : bufs) { // every one found, so that the kept entries hold the last of them
    REQUIRE(m.find(b.addr + 999).has_value());
    CHECK(m.backed_length(b.addr, 2000) == 1000);
  }
  const Buffer gone = bufs[4];
  m.free(gone);
  CHECK_FALSE(m.find(gone.addr).has_value());
  CHECK_FALSE(m.find(gone.addr + 500).has_value());
  CHECK(m.backed_length(gone.addr, 10) == 0);
  CHECK(m.resolve(gone.addr, 10) == nullptr);
  for (size_t i : {0, 1, 2, 3, 5}) {
    INFO("buffer " << i);
    CHECK(m.find(bufs[i].addr + 1)->addr == bufs[i].addr);
    CHECK(m.resolve(bufs[i].addr, 1000) == bufs[i].data);
  }
  // An allocation made after the free is found as itself.
  auto again = m.allocate(1000, AllocAttr::at(Location::host(0)));
  REQUIRE(again.ok());
  CHECK(m.find(again->addr)->addr == again->addr);
  CHECK(m.find(again->addr)->size == 1000);
}
