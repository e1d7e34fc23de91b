// The up-front memory check: estimates grow with what they count, TENSORPATH_MEMORY_LIMIT replaces what the
// machine reports, and a refusal names the job, the estimate with its parts, and what is available.
#include "core/common/resource_estimate.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>

using namespace tp;

namespace {
struct LimitGuard {
  explicit LimitGuard(const char* v) { setenv("TENSORPATH_MEMORY_LIMIT", v, 1); }
  ~LimitGuard() { unsetenv("TENSORPATH_MEMORY_LIMIT"); }
};
} // namespace

TEST_CASE("memory estimates grow with ops, processes, bytes and towers", "[quick]")
{
  CHECK(estimate_training(2000, 4).bytes > estimate_training(1000, 4).bytes);
  CHECK(estimate_training(1000, 40).bytes > estimate_training(1000, 4).bytes);
  CHECK(estimate_transfer(2ull << 30, 1).bytes > estimate_transfer(1ull << 30, 1).bytes);
  // Materialized bytes count several times (source, destination, a staging copy).
  CHECK(estimate_transfer(1ull << 30, 1).bytes - estimate_transfer(0, 1).bytes >= 2.0 * (1ull << 30));
  CHECK(estimate_emulated_training(1 << 20, 8, 9).bytes > estimate_emulated_training(1 << 20, 2, 3).bytes);
  CHECK(estimate_training(1000, 4).parts.find("1,000 step-graph ops") != std::string::npos);
}

TEST_CASE("TENSORPATH_MEMORY_LIMIT replaces the machine's figure, units K, M, G", "[quick]")
{
  {
    LimitGuard g("512M");
    CHECK(available_memory() == 512ull << 20);
  }
  {
    LimitGuard g("2G");
    CHECK(available_memory() == 2ull << 30);
  }
  {
    LimitGuard g("123456");
    CHECK(available_memory() == 123456);
  }
  // Without the variable: what the machine reports (this one has some memory).
  CHECK(available_memory() > 0);
}

TEST_CASE("check_memory refuses above 90 % of the limit, naming job, estimate, parts and advice", "[quick]")
{
  LimitGuard g("100M");
  MemoryEstimate small{50e6, "small parts"};
  CHECK(check_memory(small, "job A", "do less").ok());
  MemoryEstimate big{95e6, "big parts"};
  auto st = check_memory(big, "job B", "do less");
  REQUIRE_FALSE(st.ok());
  const std::string m = st.error().message();
  CHECK(m.find("job B") != std::string::npos);
  CHECK(m.find("95 MB") != std::string::npos);
  CHECK(m.find("big parts") != std::string::npos);
  CHECK(m.find("105 MB") != std::string::npos); // 100 MiB available
  CHECK(m.find("TENSORPATH_MEMORY_LIMIT") != std::string::npos);
  CHECK(m.find("do less") != std::string::npos);
}
