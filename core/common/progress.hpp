// Progress of a long job, reported where the work happens (a simulation's step loop, a ring schedule) and shown
// by whoever listens: the command line's progress line, through run_isolated's progress pipe when the work runs in
// a child process. Without a listener a report costs a function call. Tests: tests/core/isolated_run_test.cpp.
#pragma once

#include <functional>

namespace tp {

/// Called with the units done and the units in all of the job being reported on (steps, messages, events).
using ProgressListener = std::function<void(double done, double total)>;

/// This process's listener (empty: none). run_isolated's child gets a listener that writes into the parent's
/// progress pipe, or none.
void set_progress_listener(ProgressListener listener);

/// Report that `done` of `total` units are finished. Reports closer than 50 ms to the last one are dropped
/// (except the last unit), so that a loop may report every unit.
void report_progress(double done, double total);

} // namespace tp
