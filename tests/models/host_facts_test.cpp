// This machine's memory (models/host_facts.hpp): TENSORPATH_MEMORY_LIMIT replaces what /proc and the cgroup say, an
// unreadable value is an error naming the variable, and check_budget() refuses a job beyond 90 % of that memory,
// saying where the figure comes from.
#include "models/host_facts.hpp"

#include "tests/env_guard.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>

using namespace tp;

using test::EnvGuard;
using test::has;

TEST_CASE("TENSORPATH_MEMORY_LIMIT replaces the machine's figure, units K, M, G", "[quick]")
{
  {
    EnvGuard g("TENSORPATH_MEMORY_LIMIT", "512M");
    CHECK(models::available_memory() == 512ull << 20);
    REQUIRE(models::memory_budget().ok());
    CHECK(models::memory_budget()->set_by_user);
  }
  {
    EnvGuard g("TENSORPATH_MEMORY_LIMIT", "2G");
    CHECK(models::available_memory() == 2ull << 30);
  }
  {
    EnvGuard g("TENSORPATH_MEMORY_LIMIT", "123456");
    CHECK(models::available_memory() == 123456);
  }
  // Without the variable: what the machine reports (this one has some memory).
  CHECK(models::available_memory() > 0);
  REQUIRE(models::memory_budget().ok());
  CHECK_FALSE(models::memory_budget()->set_by_user);
}

TEST_CASE("unreadable budget variables are errors naming the variable, not a silent no-limit", "[quick]")
{
  JobEstimate e;
  e.add("x", "p", 1, 1);
  {
    EnvGuard g("TENSORPATH_TIME_LIMIT", "ten minutes");
    auto st = check_budget(e);
    REQUIRE_FALSE(st.ok());
    CHECK(has(st.error().message(), "TENSORPATH_TIME_LIMIT"));
    CHECK(has(st.error().message(), "ten minutes"));
  }
  {
    EnvGuard g("TENSORPATH_MEMORY_LIMIT", "lots");
    auto st = check_budget(e);
    REQUIRE_FALSE(st.ok());
    CHECK(has(st.error().message(), "TENSORPATH_MEMORY_LIMIT"));
    CHECK_FALSE(models::memory_budget().ok());
  }
}

TEST_CASE("check_budget refuses above 90 % of the memory TENSORPATH_MEMORY_LIMIT gives, naming where it comes from",
          "[quick]")
{
  EnvGuard g("TENSORPATH_MEMORY_LIMIT", "100M");
  JobEstimate small;
  small.job = "job A";
  small.add("a little", "n = 1", 50e6, 1);
  CHECK(check_budget(small, "do less").ok());
  JobEstimate big;
  big.job = "job B";
  big.add("1,000 things x 90 KB", "things = 1000", 95e6, 1);
  auto st = check_budget(big, "do less");
  REQUIRE_FALSE(st.ok());
  const std::string m = st.error().message();
  INFO(m);
  CHECK(has(m, "105 MB (TENSORPATH_MEMORY_LIMIT)")); // what is available (100 MiB), and where that figure comes from
  CHECK(has(m, "do less"));
}
