// Run a function in a forked child process and bring back its text result. SimGrid allows one simulation
// per process, and a crashing simulation must not take a validation run or a sweep down with it: the
// crash becomes an Error naming the signal. Tests: tests/core/isolated_run_test.cpp.
#pragma once

#include "core/common/progress.hpp"
#include "core/common/result.hpp"

#include <functional>
#include <string>

namespace tp {

/// Fork; in the child run `fn` and send its result (or Error) back through a pipe; in the parent wait.
/// `timeout_s` > 0 kills the child after that many seconds (Error "timed out"). `on_progress`: called in the parent
/// with what the child reports (report_progress, through a second pipe); without it the child reports to no one.
Result<std::string> run_isolated(const std::function<Result<std::string>()>& fn, double timeout_s = 0,
                                 const ProgressListener& on_progress = {});

/// Call first thing in a forked child: the child is killed when `parent` (the process that forked it) dies, so
/// that a SIGKILLed sweep or run leaves no simulation running on, holding the lock or pipes it inherited.
void die_with_parent(int parent_pid);

} // namespace tp
