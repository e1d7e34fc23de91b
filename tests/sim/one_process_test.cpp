// A test binary asked for several test cases that each start a simulation (SimGrid allows one per process) runs
// each in a process of its own and sums up (tests/catch_main.cpp), instead of failing the second one with
// "std::get: wrong index for variant". The two cases tagged [one-process-pair] are the pair it runs.
#include "sim/simulation.hpp"
#include "test_cluster.hpp"

#include "tests/run_command.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

using namespace tp;

TEST_CASE("one of a pair of cases that simulate", "[quick][one-process-pair]")
{
  auto s = sim::Simulation::create(test::test_cluster(2));
  REQUIRE(s.ok());
  s.value()->run();
}

TEST_CASE("the other of a pair of cases that simulate", "[quick][one-process-pair]")
{
  auto s = sim::Simulation::create(test::test_cluster(2));
  REQUIRE(s.ok());
  s.value()->run();
}

TEST_CASE("a test binary runs several cases that simulate, each in a process of its own", "[quick]")
{
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  REQUIRE(n > 0);
  self[n] = 0;
  const auto [status, out] = test::run_command(std::string(self) + " \"[one-process-pair]\"");
  INFO(out);
  CHECK(status == 0);
  CHECK(out.find("2 test cases, each in a process of its own") != std::string::npos);
  CHECK(out.find("2 passed, 0 failed") != std::string::npos);
  CHECK(out.find("wrong index for variant") == std::string::npos);
}
