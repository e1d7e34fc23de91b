// Large pages for large simulations (sim/large_pages.hpp): asked for from the threshold up, only of mimalloc 2.0,
// and the process's memory still works with them.
#include "sim/large_pages.hpp"

#include <catch2/catch.hpp>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#if __has_include(<mimalloc.h>)
#include <mimalloc.h>
#if MI_MALLOC_VERSION >= 200 && MI_MALLOC_VERSION < 210
static_assert(mi_option_large_os_pages == 6, "sim/large_pages.cpp sets option 6 as mimalloc 2.0's large OS pages");
#endif
#endif

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

/// What the kernel offers, read here on its own: reserved huge pages, or transparent ones always or on request.
bool kernel_offers_huge_pages()
{
  long reserved = 0;
  if (FILE* f = std::fopen("/proc/sys/vm/nr_hugepages", "r")) {
    if (std::fscanf(f, "%ld", &reserved) != 1) reserved = 0;
    std::fclose(f);
  }
  char modes[256] = {};
  if (FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r")) {
    if (!std::fgets(modes, sizeof modes, f)) modes[0] = 0;
    std::fclose(f);
  }
  return reserved > 0 || std::strstr(modes, "[always]") || std::strstr(modes, "[madvise]");
}

} // namespace

TEST_CASE("Large pages: a job below the threshold keeps the allocator as it is")
{
  unsetenv("TENSORPATH_LARGE_PAGES"); // this test case's own process (catch_main.cpp)
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
  // Asked exactly where the executable runs on mimalloc 2.0 and the kernel has huge pages to give.
  CHECK(asked == (before >= 0 && kernel_offers_huge_pages()));
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
