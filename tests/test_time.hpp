// Wall-clock bounds in tests, scaled for slow builds: TENSORPATH_TIME_SCALE (a number >= 1, default 1) multiplies
// every bound a test puts on elapsed real time. scripts/sanitize.sh sets it (ASan and TSan run several times
// slower); a normal build leaves it unset, so the bounds the tests state are the ones checked there.
#pragma once

#include <cstdlib>

namespace tp::test {

inline double time_scale()
{
  static const double scale = [] {
    const char* s = std::getenv("TENSORPATH_TIME_SCALE");
    const double v = s ? std::strtod(s, nullptr) : 1.0;
    return v >= 1.0 ? v : 1.0;
  }();
  return scale;
}

/// A bound of `seconds` of wall-clock time, scaled by TENSORPATH_TIME_SCALE.
inline double wall_seconds(double seconds)
{
  return seconds * time_scale();
}

} // namespace tp::test
