// Step replay over a recorded trace: the recorded compute kept, the communication events given new durations (from
// a simulation on another fabric), and the schedule rebuilt. Traces rarely record dependencies, so the recorded
// order stands for them: every event keeps its lanes (a compute op its device; a transfer its source and
// destination; a collective every device of the trace) and the idle gap it had after the previous event on each of
// them, and starts once all its lanes are there. With every duration as recorded, the replay reproduces the
// recorded span exactly; a faster transfer moves what follows on its lanes earlier, a slower one later.
// Tests: tests/traces/trace_parsers_test.cpp.
#pragma once

#include "traces/trace.hpp"

#include <vector>

namespace tp::traces {

struct ReplayResult {
  double recorded_span = 0; ///< seconds
  double replayed_span = 0;
  double recorded_communication = 0; ///< sum of the communication events' recorded durations
  double replayed_communication = 0;
};

/// `transfer_seconds[i]` and `collective_seconds[j]` replace the recorded durations (a negative value keeps the
/// recorded one); both vectors may be shorter than the trace's lists (the rest keep theirs).
ReplayResult replay_step(const Trace& trace, const std::vector<double>& transfer_seconds,
                         const std::vector<double>& collective_seconds);

} // namespace tp::traces
