// Step replay over a recorded trace: the recorded compute kept, the communication events given new durations (from
// a simulation on another fabric), and the schedule rebuilt. Traces rarely record dependencies, so the recorded
// order stands for them: every event keeps its lanes (a compute op its device; a transfer its source and
// destination; a collective every device of the trace) and the idle gap it had after the previous event on each of
// them, and starts once all its lanes are there (in traces of several ranks merged, a collective's lanes are its
// rank's devices). With every duration as recorded, the replay reproduces the
// recorded span exactly; a faster transfer moves what follows on its lanes earlier, a slower one later.
// Tests: tests/traces/trace_parsers_test.cpp.
#pragma once

#include "traces/trace.hpp"

#include <string>
#include <vector>

namespace tp::traces {

struct ReplayResult {
  double recorded_span = 0; ///< seconds
  double replayed_span = 0;
  double recorded_communication = 0; ///< sum of the communication events' recorded durations
  double replayed_communication = 0;
  /// When each event starts in the replay, seconds, in the trace's lists' order (its end: start + new duration).
  std::vector<double> op_start, transfer_start, collective_start;
  std::vector<double> transfer_duration, collective_duration; ///< as replayed
};

/// One step, recorded and replayed. Its time is from its first event's start to its last event's end (for a trace of
/// several ranks: the longest rank's, each measured on its own file's clock); compute and communication are the
/// lengths of the union of their events' intervals, overlap the length of their intersection, exposed communication
/// what is not overlapped. All in seconds.
struct StepTimes {
  double time = 0, compute = 0, communication = 0, overlap = 0;
  double exposed() const { return communication - overlap; }
};
struct StepReport {
  std::string name;
  bool partial = false;
  std::string why;
  double marked = 0; ///< the step mark's own length (end - start)
  size_t events = 0;
  StepTimes recorded, replayed;
};

/// A report per step of the trace (Trace::steps, in order; steps without events are left out).
std::vector<StepReport> step_reports(const Trace& trace, const ReplayResult& replay);

struct StepSummary {
  size_t steps = 0; ///< whole steps summarized (partial ones are not)
  double recorded_median = 0, replayed_median = 0, recorded_mean = 0, replayed_mean = 0;
};
StepSummary summarize_steps(const std::vector<StepReport>& reports);

/// `transfer_seconds[i]` and `collective_seconds[j]` replace the recorded durations (a negative value keeps the
/// recorded one); both vectors may be shorter than the trace's lists (the rest keep theirs).
ReplayResult replay_step(const Trace& trace, const std::vector<double>& transfer_seconds,
                         const std::vector<double>& collective_seconds);

} // namespace tp::traces
