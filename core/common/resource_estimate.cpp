// Job estimates and the up-front budget check (see resource_estimate.hpp).
#include "core/common/resource_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace tp {

namespace {

/// A job is refused above this share of the memory available (the estimate errs high, but the page cache, the
/// parent process and other jobs need some too).
constexpr double MEMORY_SHARE = 0.9;

/// "600", "90s", "10m", "2h", "1d", "0", "none", "unlimited" -> seconds (0: no limit); negative if unreadable.
double parse_seconds(const std::string& s)
{
  if (s == "none" || s == "unlimited" || s == "inf") return 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !(v >= 0) || std::isinf(v)) return -1;
  const std::string unit(end);
  if (unit.empty() || unit == "s") return v;
  if (unit == "ms") return v * 1e-3;
  if (unit == "m" || unit == "min") return v * 60;
  if (unit == "h") return v * 3600;
  if (unit == "d") return v * 86400;
  return -1;
}

/// A value for the variable that lets the job through: 1.5 x the estimate, rounded up.
std::string memory_override(double bytes)
{
  const double g = std::ceil(bytes * 1.5 / double(1ull << 30));
  return g >= 1024 ? std::to_string(int64_t(std::ceil(g / 1024))) + "T" : std::to_string(int64_t(g)) + "G";
}

std::string time_override(double seconds)
{
  const double s = seconds * 1.5;
  if (s > 365 * 86400) return "0 (no limit)";
  if (s > 2 * 86400) return std::to_string(int64_t(std::ceil(s / 86400))) + "d";
  if (s > 3600) return std::to_string(int64_t(std::ceil(s / 3600))) + "h";
  return std::to_string(int64_t(std::ceil(s / 60))) + "m";
}

std::string term_text(const CostTerm& t, bool by_memory)
{
  const std::string amount = by_memory ? human_bytes(t.bytes) : human_seconds(t.seconds);
  if (t.parameter.empty()) return t.what + " (" + amount + ")"; // a fixed cost (starting a process)
  return t.parameter + " (" + t.what + " = " + amount + ")";
}

} // namespace

void JobEstimate::add(std::string what, std::string parameter, double b, double s)
{
  terms.push_back({std::move(what), std::move(parameter), b, s});
  bytes += b;
  seconds += s;
}

void JobEstimate::then(const JobEstimate& next)
{
  for (auto t : next.terms) {
    if (!next.job.empty()) t.what = next.job + ": " + t.what;
    terms.push_back(std::move(t));
  }
  bytes = std::max(bytes, next.bytes);
  seconds += next.seconds;
}

const CostTerm* JobEstimate::driver(bool by_memory) const
{
  const CostTerm* best = nullptr;
  for (const auto& t : terms)
    if (!best || (by_memory ? t.bytes > best->bytes : t.seconds > best->seconds)) best = &t;
  return best;
}

void JobEstimate::rename_parameter(const std::string& from, const std::string& to)
{
  for (auto& t : terms)
    if (t.parameter.rfind(from, 0) == 0) t.parameter = to + t.parameter.substr(from.size());
}

namespace {

struct TimeLimit {
  double seconds = 0; ///< 0: none
  std::string source; ///< "(default)", "(TENSORPATH_TIME_LIMIT)", "(the sweep's point_timeout)"
};

TimeLimit& job_timeout()
{
  static TimeLimit t;
  return t;
}

Result<TimeLimit> current_time_limit()
{
  const char* env = std::getenv("TENSORPATH_TIME_LIMIT");
  TimeLimit out{DEFAULT_TIME_LIMIT, "(default)"};
  if (env && *env) {
    const double s = parse_seconds(env);
    if (s < 0)
      return Error::at("", "TENSORPATH_TIME_LIMIT", "seconds, or 500ms, 90s, 10m, 2h, 1d; 0 or none for no limit",
                       "\"" + std::string(env) + "\"");
    out = {s, "(TENSORPATH_TIME_LIMIT)"};
  }
  const TimeLimit& job = job_timeout();
  if (job.seconds > 0 && (!(env && *env) || out.seconds == 0 || job.seconds < out.seconds)) out = job;
  return out;
}

} // namespace

void set_job_timeout(double seconds, const std::string& source)
{
  job_timeout() = {seconds, "(" + source + ")"};
}

Result<double> time_limit()
{
  auto t = current_time_limit();
  if (!t.ok()) return t.error();
  return t->seconds;
}

Status check_budget_against(const JobEstimate& e, const MemoryBudget& memory, const std::string& advice)
{
  auto limit = current_time_limit();
  if (!limit.ok()) return limit.error();
  const uint64_t avail = memory.bytes;
  const bool over_memory = avail > 0 && e.bytes > MEMORY_SHARE * double(avail);
  const bool over_time = limit->seconds > 0 && e.seconds > limit->seconds;
  if (!over_memory && !over_time) return ok_status();

  std::string allowed = "a job within the budget (memory: ";
  allowed += avail ? human_bytes(double(avail)) + (memory.set_by_user ? " (TENSORPATH_MEMORY_LIMIT)" : " available")
                   : std::string("not known");
  allowed += "; time: " +
             (limit->seconds > 0 ? human_seconds(limit->seconds) + " " + limit->source : std::string("no limit")) + ")";
  std::string got = "an estimated " + human_bytes(e.bytes) + " of memory and " + human_seconds(e.seconds);
  std::string overrides;
  auto also = [&overrides](const std::string& s) { overrides += (overrides.empty() ? "" : " and ") + s; };
  if (over_time) {
    if (const CostTerm* d = e.driver(false)) got += "; the time is driven by " + term_text(*d, false);
    if (limit->source == "(default)" || limit->source == "(TENSORPATH_TIME_LIMIT)")
      also("set TENSORPATH_TIME_LIMIT=" + time_override(e.seconds));
    else
      also("raise " + limit->source.substr(1, limit->source.size() - 2));
  }
  if (over_memory) {
    if (const CostTerm* d = e.driver(true)) got += "; the memory is driven by " + term_text(*d, true);
    also("set TENSORPATH_MEMORY_LIMIT=" + memory_override(e.bytes) +
         " (a job that needs more memory than is free may be killed)");
  }
  if (!advice.empty()) got += "; " + advice;
  got += "; to run it anyway " + overrides;
  return Error::at("", e.job.empty() ? std::string("job") : e.job, allowed, got);
}

std::string human_bytes(double bytes)
{
  char b[32];
  if (bytes >= 1e12)
    std::snprintf(b, sizeof b, "%.1f TB", bytes / 1e12);
  else if (bytes >= 1e9)
    std::snprintf(b, sizeof b, "%.1f GB", bytes / 1e9);
  else if (bytes >= 1e7)
    std::snprintf(b, sizeof b, "%.0f MB", bytes / 1e6);
  else if (bytes >= 1e5)
    std::snprintf(b, sizeof b, "%.1f MB", bytes / 1e6);
  else if (bytes >= 1e4)
    std::snprintf(b, sizeof b, "%.0f KB", bytes / 1e3);
  else
    std::snprintf(b, sizeof b, "%.0f B", bytes);
  return b;
}

std::string human_seconds(double s)
{
  char b[48];
  if (s >= 1e4 * 365 * 86400)
    std::snprintf(b, sizeof b, "%.1e years", s / (365 * 86400));
  else if (s >= 365 * 86400)
    std::snprintf(b, sizeof b, "%.0f years", s / (365 * 86400));
  else if (s >= 2 * 86400)
    std::snprintf(b, sizeof b, "%.1f d", s / 86400);
  else if (s >= 2 * 3600)
    std::snprintf(b, sizeof b, "%.1f h", s / 3600);
  else if (s >= 120)
    std::snprintf(b, sizeof b, "%.1f min", s / 60);
  else if (s >= 1)
    std::snprintf(b, sizeof b, "%.1f s", s);
  else if (s >= 1e-3)
    std::snprintf(b, sizeof b, "%.1f ms", s * 1e3);
  else if (s >= 1e-5)
    std::snprintf(b, sizeof b, "%.0f us", s * 1e6);
  else
    std::snprintf(b, sizeof b, "%.2g us", s * 1e6);
  return b;
}

std::string human_count(double n)
{
  if (!(n < 1e15)) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2g", n);
    return b;
  }
  std::string s = std::to_string(uint64_t(std::max(0.0, std::round(n))));
  for (int i = int(s.size()) - 3; i > 0; i -= 3)
    s.insert(size_t(i), ",");
  return s;
}

} // namespace tp
