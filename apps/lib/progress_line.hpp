// The progress line of a long command on stderr (`train`, `replay`, a large `allreduce`, `sweep` and `plan`): what is
// done of what total, a bar and an ETA, redrawn in place at most four times a second and cleared at the end. Only
// when stderr is a terminal (a log or a pipe gets none). The clock and the stream are injectable for tests.
// Tests: tests/apps/progress_line_test.cpp.
#pragma once

#include <cstdio>
#include <functional>
#include <string>

namespace tp::frontend {

class ProgressLine {
public:
  using Clock = std::function<double()>; ///< seconds, monotonic

  /// `enabled` false: nothing is ever written (stderr is not a terminal). `out`: stderr by default; `clock`: the
  /// steady clock by default.
  ProgressLine(std::string label, bool enabled, std::FILE* out = stderr, Clock clock = {});
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  /// Before anything is done the ETA is this estimate (shown as "~"), seconds.
  void set_estimate(double seconds) { estimate_ = seconds; }
  /// `fraction` of the whole command is done (0..1); `what` says what of what ("run 2/5 (gdr), step 1/3").
  /// Redraws at the first call and then at most every MIN_INTERVAL seconds.
  void update(double fraction, const std::string& what);
  /// Clear the line (if one was drawn); the destructor does it too.
  void finish();

  bool enabled() const { return enabled_; }
  /// How many times the line was drawn (tests).
  int draws() const { return draws_; }

  static constexpr double MIN_INTERVAL = 0.25;
  /// Whether stderr is a terminal: the commands' `enabled`.
  static bool stderr_is_terminal();

private:
  std::string label_;
  bool enabled_;
  std::FILE* out_;
  Clock clock_;
  double start_ = 0, last_ = -1, estimate_ = 0;
  double first_t_ = -1, first_f_ = 0; ///< the first update with something done
  size_t width_ = 0;                  ///< characters of the line on screen
  int draws_ = 0;
};

/// "12 s", "3 min 20 s", "2 h 5 min" for an ETA.
std::string eta_text(double seconds);

} // namespace tp::frontend
