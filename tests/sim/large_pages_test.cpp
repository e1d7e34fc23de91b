// Large pages for large simulations (sim/large_pages.hpp): asked for from the threshold up, only of mimalloc 2.0,
// and the process's memory still works with them.
#include "sim/large_pages.hpp"

#include <catch2/catch.hpp>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <memory>

namespace {

/// mimalloc 2.0's option 6 (large OS pages) as the allocator reports it; -1 where the executable runs on another
/// malloc.
int large_os_pages_option()
{
  auto version = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "mi_version"));
  auto is_enabled = reinterpret_cast<bool (*)(int)>(dlsym(RTLD_DEFAULT, "mi_option_is_enabled"));
  if (!version || !is_enabled || version() < 200 || version() >= 210) return -1;
  return is_enabled(6) ? 1 : 0;
}

} // namespace

TEST_CASE("Large pages: a job below the threshold keeps the allocator as it is")
{
  const int before = large_os_pages_option();
  CHECK_FALSE(tp::sim::use_large_pages_for(tp::sim::LARGE_PAGES_FROM_BYTES * 0.99).value());
  CHECK_FALSE(tp::sim::use_large_pages_for(0).value());
  CHECK(large_os_pages_option() == before);
}

TEST_CASE("Large pages: TENSORPATH_LARGE_PAGES=0 keeps the allocator as it is")
{
  const int before = large_os_pages_option();
  setenv("TENSORPATH_LARGE_PAGES", "0", 1); // this test case's own process (catch_main.cpp)
  CHECK_FALSE(tp::sim::use_large_pages_for(tp::sim::LARGE_PAGES_FROM_BYTES * 4).value());
  CHECK(large_os_pages_option() == before);
}

TEST_CASE("Large pages: a job from the threshold up asks mimalloc 2.0 for them, and memory still works")
{
  unsetenv("TENSORPATH_LARGE_PAGES");
  const int before = large_os_pages_option();
  const bool asked = tp::sim::use_large_pages_for(tp::sim::LARGE_PAGES_FROM_BYTES).value();
  CHECK(asked == (before >= 0)); // asked exactly where the executable runs on mimalloc 2.0
  if (asked) CHECK(large_os_pages_option() == 1);
  // Allocations of every size after it: written and read back.
  for (size_t bytes : {size_t(24), size_t(100) << 10, size_t(8) << 20, size_t(64) << 20}) {
    std::unique_ptr<char[]> p(new char[bytes]);
    std::memset(p.get(), 0x5a, bytes);
    CHECK(p[0] == 0x5a);
    CHECK(p[bytes - 1] == 0x5a);
  }
}

TEST_CASE("Large pages: an unreadable TENSORPATH_LARGE_PAGES is an error naming it, whatever the job's size")
{
  const int before = large_os_pages_option();
  setenv("TENSORPATH_LARGE_PAGES", "off", 1); // this test case's own process (catch_main.cpp)
  for (double bytes : {0.0, tp::sim::LARGE_PAGES_FROM_BYTES * 4}) {
    auto r = tp::sim::use_large_pages_for(bytes);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message(), Catch::Contains("TENSORPATH_LARGE_PAGES") && Catch::Contains("'off'"));
  }
  CHECK(large_os_pages_option() == before);
}
