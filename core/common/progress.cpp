// Progress reports (see progress.hpp).
#include "core/common/progress.hpp"

#include <chrono>

namespace tp {

namespace {

constexpr double MIN_INTERVAL = 0.05; // seconds between two reports that reach the listener

ProgressListener& listener()
{
  static ProgressListener l;
  return l;
}

double& last_report()
{
  static double t = -1;
  return t;
}

} // namespace

void set_progress_listener(ProgressListener l)
{
  listener() = std::move(l);
  last_report() = -1;
}

void report_progress(double done, double total)
{
  auto& l = listener();
  if (!l) return;
  const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (done < total && last_report() >= 0 && now - last_report() < MIN_INTERVAL) return;
  last_report() = now;
  l(done, total);
}

} // namespace tp
