// This machine's memory and the budget check against it (see host_facts.hpp).
#include "models/host_facts.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>

namespace tp {
namespace models {

namespace {

/// "123", "512M", "8G", "1.5G" -> bytes; 0 if unreadable.
uint64_t parse_bytes(const std::string& s)
{
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !(v > 0) || std::isinf(v)) return 0;
  double mult = 1;
  switch (std::toupper(static_cast<unsigned char>(*end))) {
  case 'K':
    mult = 1024.0;
    break;
  case 'M':
    mult = 1024.0 * 1024;
    break;
  case 'G':
    mult = 1024.0 * 1024 * 1024;
    break;
  case 'T':
    mult = 1024.0 * 1024 * 1024 * 1024;
    break;
  case '\0':
    break;
  default:
    return 0;
  }
  if (*end && end[1] && !(std::toupper(static_cast<unsigned char>(end[1])) == 'B' && !end[2])) return 0;
  return uint64_t(std::min(v * mult, 1.8e19));
}

uint64_t read_number_file(const std::string& path)
{
  std::ifstream in(path);
  std::string s;
  if (!(in >> s) || s == "max") return 0;
  return parse_bytes(s);
}

} // namespace

uint64_t available_memory()
{
  if (const char* env = std::getenv("TENSORPATH_MEMORY_LIMIT"); env && *env) return parse_bytes(env);
  uint64_t avail = 0;
  {
    std::ifstream in("/proc/meminfo");
    std::string key, unit;
    uint64_t kb = 0;
    while (in >> key >> kb) {
      std::getline(in, unit);
      if (key == "MemAvailable:") {
        avail = kb * 1024;
        break;
      }
    }
  }
  // A cgroup limit (containers, systemd slices): what is left under memory.max.
  if (const uint64_t max = read_number_file("/sys/fs/cgroup/memory.max"); max > 0) {
    const uint64_t used = read_number_file("/sys/fs/cgroup/memory.current");
    const uint64_t left = max > used ? max - used : 0;
    avail = avail ? std::min(avail, left) : left;
  }
  struct rlimit rl {};
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    avail = avail ? std::min<uint64_t>(avail, rl.rlim_cur) : rl.rlim_cur;
  return avail;
}

Result<MemoryBudget> memory_budget()
{
  const char* env = std::getenv("TENSORPATH_MEMORY_LIMIT");
  const bool set_by_user = env && *env;
  if (set_by_user && parse_bytes(env) == 0)
    return Error::at("", "TENSORPATH_MEMORY_LIMIT", "bytes, or 512M, 8G, 1T", "\"" + std::string(env) + "\"");
  return MemoryBudget{available_memory(), set_by_user};
}

} // namespace models

Status check_budget(const JobEstimate& e, const std::string& advice)
{
  auto memory = models::memory_budget();
  if (!memory.ok()) return memory.error();
  return check_budget_against(e, memory.value(), advice);
}

} // namespace tp
