// Child-process isolation: results come back, errors come back, crashes become errors.
#include "core/common/isolated_run.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace tp;

TEST_CASE("run_isolated returns the child's value and error", "[quick]")
{
  auto ok = run_isolated([]() -> Result<std::string> { return std::string(100000, 'x'); });
  REQUIRE(ok.ok());
  CHECK(ok.value().size() == 100000);
  auto err = run_isolated([]() -> Result<std::string> { return Error::at("f.json", "a.b", "x", "y"); });
  REQUIRE_FALSE(err.ok());
  CHECK(err.error().message() == "f.json: a.b: expected x, got y");
}

TEST_CASE("A crashing child becomes an error naming the signal", "[quick]")
{
  auto r = run_isolated([]() -> Result<std::string> {
    std::signal(SIGSEGV, SIG_DFL); // the default action even where a handler is installed (ASan's, for one)
    std::raise(SIGSEGV);
    return std::string("unreachable");
  });
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("signal 11") != std::string::npos);
}

TEST_CASE("A hanging child is killed after its timeout", "[quick]")
{
  auto r = run_isolated(
      []() -> Result<std::string> {
        std::this_thread::sleep_for(std::chrono::seconds(30));
        return std::string();
      },
      0.3);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("timed out") != std::string::npos);
}

TEST_CASE("a child's progress reports reach the parent's listener, the last one always", "[quick]")
{
  std::vector<std::pair<double, double>> seen;
  auto r = run_isolated(
      []() -> Result<std::string> {
        for (int i = 1; i <= 1000; ++i)
          report_progress(i, 1000); // most are dropped (50 ms apart at most), the first and the last are not
        return std::string("done");
      },
      0, [&seen](double done, double total) { seen.emplace_back(done, total); });
  REQUIRE(r.ok());
  CHECK(r.value() == "done");
  REQUIRE_FALSE(seen.empty());
  CHECK(seen.size() < 1000);
  CHECK(seen.front().second == 1000);
  CHECK(seen.back().first == 1000);
}

TEST_CASE("without a listener the child reports to no one, not to the parent's listener", "[quick]")
{
  // The parent's listener writes into a pipe that the child inherits: had the child kept the listener, its reports
  // would land there (a progress line drawn by the child).
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  const int w = fds[1];
  set_progress_listener([w](double, double) { [[maybe_unused]] auto n = ::write(w, "x", 1); });
  auto r = run_isolated([]() -> Result<std::string> {
    report_progress(1, 2);
    report_progress(2, 2);
    return std::string("ok");
  });
  set_progress_listener({});
  REQUIRE(r.ok());
  char c;
  CHECK(::read(fds[0], &c, 1) < 0); // nothing was written
  ::close(fds[0]);
  ::close(fds[1]);
}

namespace {

/// A process is gone: no /proc entry, or a zombie (state Z) waiting for whoever reaps orphans.
bool gone(pid_t pid)
{
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return true;
  int p = 0;
  char comm[256] = {0}, state = 0;
  const int n = std::fscanf(f, "%d %255s %c", &p, comm, &state);
  std::fclose(f);
  return n == 3 && (state == 'Z' || state == 'X');
}

} // namespace

TEST_CASE("the child of a killed parent dies with it (a SIGKILLed sweep leaves no point running)", "[quick]")
{
  // parent (this test) -> middle (calls run_isolated) -> child (sleeps). Killing the middle must end the child: a
  // child left running held the killed sweep's lock file (inherited flock) and its resume was refused.
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t middle = ::fork();
  REQUIRE(middle >= 0);
  if (middle == 0) {
    ::close(fds[0]);
    const int w = fds[1];
    (void)run_isolated([w]() -> Result<std::string> {
      const pid_t me = ::getpid();
      [[maybe_unused]] auto n = ::write(w, &me, sizeof me);
      ::sleep(30);
      return std::string("slept");
    });
    ::_exit(0);
  }
  ::close(fds[1]);
  pid_t child = 0;
  REQUIRE(::read(fds[0], &child, sizeof child) == sizeof child);
  ::close(fds[0]);
  ::kill(middle, SIGKILL);
  ::waitpid(middle, nullptr, 0);
  bool ended = false;
  for (int i = 0; i < 500 && !ended; ++i) { // 5 s at most; it takes milliseconds
    ended = gone(child);
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!ended) ::kill(child, SIGKILL);
  CHECK(ended);
}
