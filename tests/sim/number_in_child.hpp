// The numbers one simulation computes, taken from a child process (SimGrid allows one simulation per process) and
// printed exactly (%.17g), so that the parent compares them to the bit.
#pragma once

#include "core/common/isolated_run.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace tp::test {

inline std::vector<double> numbers_in_child(const std::function<Result<std::vector<double>>()>& simulate)
{
  auto r = run_isolated([&]() -> Result<std::string> {
    auto x = simulate();
    if (!x.ok()) return x.error();
    std::string out;
    for (double v : x.value()) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g ", v);
      out += buf;
    }
    return out;
  });
  INFO((r.ok() ? std::string() : r.error().message()));
  REQUIRE(r.ok());
  std::istringstream in(r.value());
  std::vector<double> v;
  for (double x; in >> x;)
    v.push_back(x);
  return v;
}

inline double number_in_child(const std::function<Result<double>()>& simulate)
{
  const std::vector<double> v = numbers_in_child([&]() -> Result<std::vector<double>> {
    auto x = simulate();
    if (!x.ok()) return x.error();
    return std::vector<double>{x.value()};
  });
  REQUIRE(v.size() == 1);
  return v[0];
}

} // namespace tp::test
