// The up-front budget check: estimates add up as processes run (time adds, memory is the largest process),
// TENSORPATH_MEMORY_LIMIT and TENSORPATH_TIME_LIMIT replace the machine's figure and the default, a job's own
// timeout bounds it, and a refusal names the job, what it needs, what is allowed, the parameter that drives it and
// how to run it anyway. Unreadable budget variables are errors, not silently ignored.
#include "core/common/resource_estimate.hpp"

#include "tests/env_guard.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>

using namespace tp;

using test::EnvGuard;
using test::has;

TEST_CASE("estimates: terms add within a process, processes in turn add time and keep the largest memory", "[quick]")
{
  JobEstimate a;
  a.add("ops", "workers = 4", 100, 2);
  a.add("platform", "hosts = 8", 50, 3);
  CHECK(a.bytes == 150);
  CHECK(a.seconds == 5);
  CHECK(a.driver(false)->parameter == "hosts = 8");
  CHECK(a.driver(true)->parameter == "workers = 4");
  JobEstimate b;
  b.job = "second";
  b.add("rings", "ranks = 64", 400, 1);
  a.then(b);
  CHECK(a.bytes == 400); // the largest process
  CHECK(a.seconds == 6); // one after the other
  CHECK(a.terms.back().what == "second: rings");
  a.rename_parameter("ranks =", "--ranks");
  CHECK(a.terms.back().parameter == "--ranks 64");
}

TEST_CASE("TENSORPATH_TIME_LIMIT: seconds or s/m/h/d, 0 or none for no limit, the default otherwise", "[quick]")
{
  CHECK(time_limit().value() == DEFAULT_TIME_LIMIT);
  const std::pair<const char*, double> cases[] = {{"90", 90},    {"90s", 90}, {"10m", 600}, {"2h", 7200},
                                                  {"1d", 86400}, {"0", 0},    {"none", 0}};
  for (const auto& [text, seconds] : cases) {
    EnvGuard g("TENSORPATH_TIME_LIMIT", text);
    INFO(text);
    REQUIRE(time_limit().ok());
    CHECK(time_limit().value() == seconds);
  }
}

TEST_CASE("an unreadable TENSORPATH_TIME_LIMIT is an error naming the variable, not a silent no-limit", "[quick]")
{
  JobEstimate e;
  e.add("x", "p", 1, 1);
  EnvGuard g("TENSORPATH_TIME_LIMIT", "ten minutes");
  auto st = check_budget_against(e, {});
  REQUIRE_FALSE(st.ok());
  CHECK(has(st.error().message(), "TENSORPATH_TIME_LIMIT"));
  CHECK(has(st.error().message(), "ten minutes"));
}

TEST_CASE("check_budget refuses above 90 % of the memory, naming job, estimate, driver, advice and override", "[quick]")
{
  const MemoryBudget memory{100ull << 20, true}; // as TENSORPATH_MEMORY_LIMIT=100M gives it
  JobEstimate small;
  small.job = "job A";
  small.add("a little", "n = 1", 50e6, 1);
  CHECK(check_budget_against(small, memory, "do less").ok());
  JobEstimate big;
  big.job = "job B";
  big.add("the simulator", "", 5e6, 1);
  big.add("1,000 things x 90 KB", "things = 1000", 90e6, 1);
  CHECK(check_budget_against(big, {}, "do less").ok()); // memory not known: no memory check
  CHECK(has(check_budget_against(big, {100ull << 20, false}).error().message(), "105 MB available"));
  auto st = check_budget_against(big, memory, "do less");
  REQUIRE_FALSE(st.ok());
  const std::string m = st.error().message();
  INFO(m);
  CHECK(has(m, "job B"));
  CHECK(has(m, "95 MB"));                             // what it needs
  CHECK(has(m, "105 MB"));                            // what is available (100 MiB)
  CHECK(has(m, "TENSORPATH_MEMORY_LIMIT"));           // where that figure comes from
  CHECK(has(m, "memory is driven by things = 1000")); // the driving parameter
  CHECK(has(m, "1,000 things x 90 KB"));
  CHECK(has(m, "do less"));
  CHECK(has(m, "TENSORPATH_MEMORY_LIMIT=1G"));   // how to run it anyway (1.5 x, rounded up)
  CHECK_FALSE(has(m, "TENSORPATH_TIME_LIMIT=")); // time is within its budget
}

TEST_CASE("check_budget refuses beyond the time limit, naming the term that drives it", "[quick]")
{
  JobEstimate e;
  e.job = "allreduce";
  e.add("start", "", 1e6, 0.3);
  e.add("2,000,000 ring messages x 0.5 us", "ranks = 1000", 1e6, 1.0);
  {
    EnvGuard g("TENSORPATH_TIME_LIMIT", "2");
    CHECK(check_budget_against(e, {}).ok());
  }
  EnvGuard g("TENSORPATH_TIME_LIMIT", "1");
  auto st = check_budget_against(e, {}, "use fewer ranks");
  REQUIRE_FALSE(st.ok());
  const std::string m = st.error().message();
  INFO(m);
  CHECK(has(m, "allreduce"));
  CHECK(has(m, "1.3 s"));                          // the estimate
  CHECK(has(m, "1.0 s (TENSORPATH_TIME_LIMIT)"));  // the budget and where it comes from
  CHECK(has(m, "time is driven by ranks = 1000")); // the parameter
  CHECK(has(m, "TENSORPATH_TIME_LIMIT=1m"));       // how to run it anyway
  CHECK(has(m, "use fewer ranks"));
}

TEST_CASE("a job's own timeout replaces the default time limit, a lower TENSORPATH_TIME_LIMIT still applies", "[quick]")
{
  JobEstimate e;
  e.job = "point";
  e.add("steps", "steps = 9", 1, 900);
  CHECK_FALSE(check_budget_against(e, {}).ok()); // 900 s > the 600 s default
  set_job_timeout(3600, "the sweep's point_timeout");
  CHECK(time_limit().value() == 3600);
  CHECK(check_budget_against(e, {}).ok());
  set_job_timeout(100, "the sweep's point_timeout");
  auto st = check_budget_against(e, {});
  REQUIRE_FALSE(st.ok());
  CHECK(has(st.error().message(), "(the sweep's point_timeout)"));
  CHECK(has(st.error().message(), "to run it anyway raise the sweep's point_timeout"));
  {
    EnvGuard g("TENSORPATH_TIME_LIMIT", "50");
    CHECK(time_limit().value() == 50);
  }
  set_job_timeout(0, "");
  CHECK(time_limit().value() == DEFAULT_TIME_LIMIT);
}

TEST_CASE("human units for the messages", "[quick]")
{
  CHECK(human_bytes(95e6) == "95 MB");
  CHECK(human_bytes(2.2e12) == "2.2 TB");
  CHECK(human_seconds(0.5e-6) == "0.5 us");
  CHECK(human_seconds(31.1 * 60) == "31.1 min");
  CHECK(human_seconds(3 * 86400) == "3.0 d");
  CHECK(human_count(2199021158400.0) == "2,199,021,158,400");
  CHECK(human_count(1e20) == "1e+20");
}
