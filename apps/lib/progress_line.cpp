// The progress line (see progress_line.hpp).
#include "apps/lib/progress_line.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace tp::frontend {

namespace {

double steady_seconds()
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // namespace

std::string eta_text(double s)
{
  if (!(s >= 0) || std::isinf(s)) return "?";
  const long t = long(std::lround(s));
  if (t < 60) return std::to_string(t) + " s";
  if (t < 3600) return std::to_string(t / 60) + " min " + std::to_string(t % 60) + " s";
  if (t < 100 * 3600) return std::to_string(t / 3600) + " h " + std::to_string((t % 3600) / 60) + " min";
  return std::to_string(t / 86400) + " d";
}

ProgressLine::ProgressLine(std::string label, bool enabled, std::FILE* out, Clock clock)
    : label_(std::move(label)), enabled_(enabled), out_(out), clock_(clock ? std::move(clock) : Clock(steady_seconds))
{
  start_ = clock_();
}

ProgressLine::~ProgressLine()
{
  finish();
}

bool ProgressLine::stderr_is_terminal()
{
  return ::isatty(STDERR_FILENO) == 1;
}

void ProgressLine::update(double fraction, const std::string& what)
{
  if (!enabled_) return;
  const double now = clock_();
  if (last_ >= 0 && now - last_ < MIN_INTERVAL) return;
  last_ = now;
  fraction = std::clamp(fraction, 0.0, 1.0);
  const double elapsed = now - start_;
  // The rate since the first report that had something done: phases whose share of the whole is only estimated
  // (set-up before the first message) do not skew it.
  if (first_t_ < 0 && fraction > 0) {
    first_t_ = now;
    first_f_ = fraction;
  }
  std::string eta;
  if (first_t_ >= 0 && fraction > first_f_ && now > first_t_)
    eta = eta_text((now - first_t_) * (1 - fraction) / (fraction - first_f_));
  else if (estimate_ > 0)
    eta = "~" + eta_text(std::max(0.0, estimate_ - elapsed));
  else
    eta = "?";
  const int bar = 20, filled = int(fraction * bar);
  std::string line = label_ + ": " + what + " [" + std::string(size_t(filled), '#') +
                     std::string(size_t(bar - filled), ' ') + "] " + std::to_string(int(fraction * 100)) + " %  ETA " +
                     eta;
  const size_t width = line.size();
  if (width < width_) line += std::string(width_ - width, ' '); // cover the longer line before
  std::fprintf(out_, "\r%s", line.c_str());
  std::fflush(out_);
  width_ = std::max(width_, width);
  ++draws_;
}

void ProgressLine::finish()
{
  if (!enabled_ || width_ == 0) return;
  std::fprintf(out_, "\r%s\r", std::string(width_, ' ').c_str());
  std::fflush(out_);
  width_ = 0;
  last_ = -1;
}

} // namespace tp::frontend
