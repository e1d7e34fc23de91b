// A number one simulation computes, taken from a child process (SimGrid allows one simulation per process) and
// printed exactly (%.17g), so that the parent compares it to the bit.
#pragma once

#include "core/common/isolated_run.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <functional>
#include <string>

namespace tp::test {

inline double number_in_child(const std::function<Result<double>()>& simulate)
{
  auto r = run_isolated([&]() -> Result<std::string> {
    auto x = simulate();
    if (!x.ok()) return x.error();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", x.value());
    return std::string(buf);
  });
  REQUIRE(r.ok());
  return std::stod(r.value());
}

} // namespace tp::test
