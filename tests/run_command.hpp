// Run a shell command from a test and keep what it printed: the exit status (-1 when a signal ended it) and its
// stdout and stderr together. `run_cli` runs the `tensorpath` binary under test (TENSORPATH_BINARY).
#pragma once

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace tp::test {

struct CommandRun {
  int status;
  std::string out;
};

inline CommandRun run_command(const std::string& command)
{
  const std::string cmd = command + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0)
    out.append(buf.data(), n);
  const int st = ::pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

#ifdef TENSORPATH_BINARY
/// `tensorpath ARGS`, with `env` (e.g. "TENSORPATH_TIME_LIMIT=1s") before it.
inline CommandRun run_cli(const std::string& args, const std::string& env = "")
{
  return run_command(env + " " + std::string(TENSORPATH_BINARY) + " " + args);
}
#endif

} // namespace tp::test
