// The one rule every number read from a user's file obeys (hardware profiles, scenarios, sweeps, validation cases,
// SimGrid platforms, traces): it is finite, it lies in the field's range [lo, hi], and a field that cannot be
// negative refuses a negative sign, -0 included (it would print as "-0.000000"). Readers state each field's range
// and report a breach with the file and the field. Tests: tests/models/catalog_test.cpp (every profile field),
// tests/apps/spec_files_test.cpp, tests/traces/trace_parsers_test.cpp.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace tp {

/// "0.001", "1e+15", "-1.7976931348623157e+308": a number as a user would read it back.
inline std::string number_text(double v)
{
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "infinity" : "-infinity";
  char b[40];
  if (v == std::floor(v) && std::fabs(v) < 1e15) { // an integer as such: 3600, not 3.6e+03
    std::snprintf(b, sizeof b, "%.0f", v);
    return b;
  }
  for (int digits = 1; digits <= 17; ++digits) { // the shortest text that reads back as v
    std::snprintf(b, sizeof b, "%.*g", digits, v);
    if (std::strtod(b, nullptr) == v) break;
  }
  return b;
}

/// "a number in [0, 1e+15]" (`what` replaces "a number").
inline std::string range_text(double lo, double hi, const std::string& what = "a number")
{
  return what + " in [" + number_text(lo) + ", " + number_text(hi) + "]";
}

/// Whether v obeys the rule for a field with range [lo, hi].
inline bool number_ok(double v, double lo, double hi)
{
  if (!std::isfinite(v) || !(v >= lo && v <= hi)) return false;
  return !(lo >= 0 && std::signbit(v));
}

} // namespace tp
