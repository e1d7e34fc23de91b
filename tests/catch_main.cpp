// The Catch2 main, compiled once (at -O0) and linked into every test binary. SimGrid allows one simulation per
// process, so a test binary asked to run several test cases (no arguments, a tag, two names) runs each case in a
// process of its own, one after the other, and sums up; one case (what ctest runs) and the listings run here.
// A passing case's console output is kept back (a failing one's is shown); other reporters, -s and -o write
// through (one report per case). Test: tests/sim/one_process_test.cpp.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

/// A test name as a Catch2 test spec that matches it alone (backslash before every character the spec parser
/// treats specially).
std::string exact_spec(const std::string& name)
{
  std::string out;
  for (char c : name) {
    if (c == '\\' || c == ',' || c == '[' || c == ']' || c == '"' || c == '~' || c == '*') out += '\\';
    out += c;
  }
  return out;
}

/// Run the one test case `spec` of `session` in a child process; its exit status (or 128 + signal) and, when
/// `capture`, what it printed.
int run_one(Catch::Session& session, const std::string& spec, bool capture, std::string& output)
{
  int fds[2] = {-1, -1};
  if (capture && ::pipe(fds) != 0) capture = false;
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    if (capture) {
      ::close(fds[0]);
      ::dup2(fds[1], STDOUT_FILENO);
      ::dup2(fds[1], STDERR_FILENO);
      ::close(fds[1]);
    }
    Catch::ConfigData data = session.configData();
    data.testsOrTags = {spec};
    session.useConfigData(data);
    const int rc = session.run();
    std::fflush(nullptr);
    ::_exit(rc);
  }
  if (capture) {
    ::close(fds[1]);
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(fds[0], buf, sizeof buf);
      if (n > 0) {
        output.append(buf, size_t(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      break;
    }
    ::close(fds[0]);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

} // namespace

int main(int argc, char** argv)
{
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  const Catch::ConfigData& data = session.configData();
  if (data.showHelp || data.listTests || data.listTags || data.listReporters || data.listTestNamesOnly)
    return session.run();
  const Catch::Config& config = session.config();
  const auto tests = Catch::filterTests(Catch::getAllTestCasesSorted(config), config.testSpec(), config);
  if (tests.size() <= 1) return session.run();

  // Several cases: one process each (SimGrid allows one simulation per process).
  const std::string self = argc > 0 ? argv[0] : "the test binary";
  const bool capture = data.reporterName == "console" && !data.showSuccessfulTests && data.outputFilename.empty();
  std::vector<std::string> failed;
  for (const auto& t : tests) {
    std::string output;
    const int rc = run_one(session, exact_spec(t.name), capture, output);
    if (rc != 0) {
      failed.push_back(t.name);
      std::fputs(output.c_str(), stdout);
      if (rc > 128) std::printf("%s: \"%s\" was killed by signal %d\n", self.c_str(), t.name.c_str(), rc - 128);
    }
  }
  std::printf("%s: %zu test cases, each in a process of its own (SimGrid allows one simulation per process): %zu "
              "passed, %zu failed\n",
              self.c_str(), tests.size(), tests.size() - failed.size(), failed.size());
  for (const auto& f : failed)
    std::printf("  failed: %s\n", f.c_str());
  if (!failed.empty())
    std::printf("Rerun one: %s \"%s\"; all of them in parallel: ctest --test-dir build -j2\n", self.c_str(),
                exact_spec(failed.front()).c_str());
  std::fflush(stdout);
  return failed.size() > 255 ? 255 : int(failed.size());
}
