// The median of a list of samples (the mean of the middle two for an even count; 0 for none), one definition for the
// reports that summarize repeated measurements (the simulator-vs-emulator comparison, replay's per-step summary).
// Tests: tests/apps/sim_vs_emu_test.cpp (odd and even counts), tests/traces/trace_steps_test.cpp.
#pragma once

#include <algorithm>
#include <vector>

namespace tp {

inline double median(std::vector<double> v)
{
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

} // namespace tp
