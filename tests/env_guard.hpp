// An environment variable set for one scope of a test (the budget variables TENSORPATH_MEMORY_LIMIT and
// TENSORPATH_TIME_LIMIT), and a substring check for the messages that name them. Used by
// tests/core/resource_estimate_test.cpp and tests/models/host_facts_test.cpp.
#pragma once

#include <cstdlib>
#include <string>

namespace tp::test {

struct EnvGuard {
  EnvGuard(const char* name, const char* v) : name_(name) { setenv(name, v, 1); }
  ~EnvGuard() { unsetenv(name_); }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;
  const char* name_;
};

inline bool has(const std::string& s, const std::string& part)
{
  return s.find(part) != std::string::npos;
}

} // namespace tp::test
