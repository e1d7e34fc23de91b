// Child-process isolation: results come back, errors come back, crashes become errors.
#include "core/common/isolated_run.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <thread>

using namespace tp;

TEST_CASE("run_isolated returns the child's value and error", "[quick]")
{
  auto ok = run_isolated([]() -> Result<std::string> { return std::string(100000, 'x'); });
  REQUIRE(ok.ok());
  CHECK(ok.value().size() == 100000);
  auto err = run_isolated([]() -> Result<std::string> { return Error::at("f.json", "a.b", "x", "y"); });
  REQUIRE_FALSE(err.ok());
  CHECK(err.error().message() == "f.json: a.b: expected x, got y");
}

TEST_CASE("A crashing child becomes an error naming the signal", "[quick]")
{
  auto r = run_isolated([]() -> Result<std::string> {
    std::signal(SIGSEGV, SIG_DFL); // the default action even where a handler is installed (ASan's, for one)
    std::raise(SIGSEGV);
    return std::string("unreachable");
  });
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("signal 11") != std::string::npos);
}

TEST_CASE("A hanging child is killed after its timeout", "[quick]")
{
  auto r = run_isolated(
      []() -> Result<std::string> {
        std::this_thread::sleep_for(std::chrono::seconds(30));
        return std::string();
      },
      0.3);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("timed out") != std::string::npos);
}
