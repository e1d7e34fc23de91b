// Memory-region keys and the local/remote access checks.
#include "core/device/mr_table.hpp"

#include <catch2/catch.hpp>

using namespace tp::verbs;

TEST_CASE("Remote checks: rkey, bounds and access flags", "[quick]")
{
  MrTable t;
  auto ro = t.add(0x10000, 4096, Access::LOCAL_WRITE | Access::REMOTE_READ);
  auto rw = t.add(0x20000, 4096, Access::LOCAL_WRITE | Access::REMOTE_WRITE);
  CHECK(t.check_remote(rw.rkey, 0x20000, 4096, Access::REMOTE_WRITE) == WcStatus::SUCCESS);
  CHECK(t.check_remote(rw.rkey, 0x20001, 4096, Access::REMOTE_WRITE) == WcStatus::REM_ACCESS_ERR); // one byte past
  CHECK(t.check_remote(rw.rkey, 0x1FFFF, 2, Access::REMOTE_WRITE) == WcStatus::REM_ACCESS_ERR);    // starts before
  CHECK(t.check_remote(ro.rkey, 0x10000, 8, Access::REMOTE_WRITE) == WcStatus::REM_ACCESS_ERR);    // no permission
  CHECK(t.check_remote(ro.rkey, 0x10000, 8, Access::REMOTE_READ) == WcStatus::SUCCESS);
  CHECK(t.check_remote(rw.rkey ^ 0x5A5A00, 0x20000, 8, Access::REMOTE_WRITE) == WcStatus::REM_ACCESS_ERR); // bad key
  CHECK(t.check_remote(0xDEAD, 0, 0, Access::REMOTE_WRITE) == WcStatus::SUCCESS); // zero length is not checked
  CHECK(t.check_remote(rw.rkey, 0x20000, ~0ull, Access::REMOTE_WRITE) == WcStatus::REM_ACCESS_ERR); // no overflow
}

TEST_CASE("Local checks: lkey, bounds, LOCAL_WRITE for receive buffers", "[quick]")
{
  MrTable t;
  auto ro = t.add(0x10000, 100, Access::REMOTE_READ);
  CHECK(t.check_local(Sge{0x10000, 100, ro.lkey}, false) == WcStatus::SUCCESS);
  CHECK(t.check_local(Sge{0x10000, 101, ro.lkey}, false) == WcStatus::LOC_PROT_ERR);
  CHECK(t.check_local(Sge{0x10000, 10, ro.lkey}, true) == WcStatus::LOC_PROT_ERR);
  CHECK(t.check_local(Sge{0x10000, 10, ro.lkey + 1}, false) == WcStatus::LOC_PROT_ERR);
  REQUIRE(t.remove(ro.lkey));
  CHECK(t.check_local(Sge{0x10000, 10, ro.lkey}, false) == WcStatus::LOC_PROT_ERR);
  CHECK_FALSE(t.remove(ro.lkey));
}

TEST_CASE("Keys of different tables (devices) do not collide", "[quick]")
{
  MrTable a(0x1000), b(0x2000);
  auto ka = a.add(0, 10, Access::LOCAL_WRITE);
  auto kb = b.add(0, 10, Access::LOCAL_WRITE);
  CHECK(ka.lkey != kb.lkey);
}
