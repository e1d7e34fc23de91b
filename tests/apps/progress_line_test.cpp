// The progress line: drawn at the first update, then at most four times a second (an injected clock), with what is
// done of what, a bar and an ETA, and cleared at the end; nothing at all when disabled. End to end, `tensorpath
// train`, `replay` and a large `allreduce` draw it under a pseudo-terminal and never into a pipe.
#include "apps/lib/progress_line.hpp"

#include "tests/run_command.hpp"

#include <catch2/catch.hpp>

#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace tp;

namespace {

struct Captured {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* f = nullptr;
  Captured() { f = ::open_memstream(&buf, &size); }
  ~Captured()
  {
    if (f) std::fclose(f);
    std::free(buf);
  }
  std::string text()
  {
    std::fflush(f);
    return std::string(buf, size);
  }
};

/// Run the tensorpath binary with `args` on a pseudo-terminal (stdout and stderr both); what it wrote and its status.
std::pair<int, std::string> run_on_terminal(const std::vector<std::string>& args)
{
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::vector<char*> argv;
    std::string bin = TENSORPATH_BINARY;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  std::string out;
  std::array<char, 4096> buf{};
  for (;;) {
    const ssize_t n = ::read(master, buf.data(), buf.size());
    if (n > 0) {
      out.append(buf.data(), size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break; // EIO: the child closed the terminal
  }
  ::close(master);
  int st = 0;
  ::waitpid(pid, &st, 0);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

std::pair<int, std::string> run_into_pipe(const std::string& args)
{
  auto r = tp::test::run_cli(args);
  return {r.status, r.out};
}

size_t count(const std::string& s, const std::string& part)
{
  size_t n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1))
    ++n;
  return n;
}

} // namespace

TEST_CASE("the progress line is drawn at most four times a second and cleared at the end", "[quick]")
{
  Captured c;
  double now = 100;
  {
    frontend::ProgressLine line("job", true, c.f, [&now] { return now; });
    line.set_estimate(60);
    line.update(0, "step 0/128");
    CHECK(line.draws() == 1); // the first update draws
    for (int i = 1; i <= 128; ++i) {
      now += 1.0 / 64; // 128 updates in two seconds
      line.update(i / 128.0, "step " + std::to_string(i) + "/128");
    }
    CHECK(line.draws() == 9); // then one every 0.25 s: after 16, 32, ..., 128 updates
    line.finish();
  }
  const std::string t = c.text();
  CHECK(t.find("\rjob: step 0/128 [") == 0);
  CHECK(t.find("ETA ~1 min 0 s") != std::string::npos); // nothing done yet: the estimate
  CHECK(t.find("step 16/128") != std::string::npos);    // 0.25 s after the first
  CHECK(t.find("step 15/128") == std::string::npos);
  // Cleared: a carriage return, blanks over the widest line, a carriage return.
  const size_t last_cr = t.rfind('\r', t.size() - 2);
  REQUIRE(t.back() == '\r');
  CHECK(t.substr(last_cr + 1, t.size() - last_cr - 2).find_first_not_of(' ') == std::string::npos);
}

TEST_CASE("the progress line's ETA follows the rate since something was first done", "[quick]")
{
  Captured c;
  double now = 0;
  frontend::ProgressLine line("job", true, c.f, [&now] { return now; });
  line.update(0.5, "set-up done"); // a phase whose share was only estimated
  now = 10;
  line.update(0.6, "10 % more in 10 s");
  line.finish();
  CHECK(c.text().find("ETA 40 s") != std::string::npos); // 40 % left at 1 % a second
  CHECK(frontend::eta_text(3725) == "1 h 2 min");
  CHECK(frontend::eta_text(-1) == "?");
}

TEST_CASE("a disabled progress line writes nothing", "[quick]")
{
  Captured c;
  {
    frontend::ProgressLine line("job", false, c.f);
    line.update(0.5, "half");
    line.finish();
    CHECK(line.draws() == 0);
  }
  CHECK(c.text().empty());
}

TEST_CASE("train shows its progress line on a terminal, cleared before the table, and none into a pipe", "[quick]")
{
  const std::vector<std::string> args = {"train", "--model", "vgg16", "--transport", "grpc,verbs_v2", "--steps", "2"};
  auto [status, raw] = run_on_terminal(args);
  std::string out; // the terminal turns each \n into \r\n: back to \n, so that a \r is the line's own
  for (size_t i = 0; i < raw.size(); ++i)
    if (!(raw[i] == '\r' && i + 1 < raw.size() && raw[i + 1] == '\n')) out += raw[i];
  INFO(out);
  CHECK(status == 0);
  CHECK(out.find("\rtrain: grpc (1/3) [") != std::string::npos); // the first update always draws
  CHECK(out.find("ETA") != std::string::npos);
  CHECK(out.find("images/s") != std::string::npos); // the report follows
  // The line was cleared before the report: the last carriage return before it ends a run of blanks.
  const size_t report = out.find("compute per GPU");
  REQUIRE(report != std::string::npos);
  const size_t cr = out.rfind('\r', report);
  REQUIRE(cr != std::string::npos);
  const size_t prev = out.rfind('\r', cr - 1);
  CHECK(out.substr(prev + 1, cr - prev - 1).find_first_not_of(' ') == std::string::npos);

  auto [pstatus, pout] = run_into_pipe("train --model vgg16 --transport grpc --steps 2");
  CHECK(pstatus == 0);
  CHECK(pout.find("ETA") == std::string::npos);
  CHECK(count(pout, "\r") == 0);
}

TEST_CASE("replay and a large allreduce show their progress lines on a terminal", "[quick]")
{
  auto [rs, rout] =
      run_on_terminal({"replay", std::string(TENSORPATH_SOURCE_DIR) + "/tests/traces/fixtures/kineto.json", "--hw",
                       "connectx4-edr-ib", "--collectives", "ring"}); // rings: simulations, with progress
  INFO(rout);
  CHECK(rs == 0);
  CHECK(rout.find("\rreplay: event 1/2 (allreduce nccl:all_reduce)") != std::string::npos);
  // An allreduce estimated at a second or more (every one of 1500 hosts built) shows one; a small one does not.
  auto [as, aout] = run_on_terminal({"allreduce", "--ranks", "1500", "--size", "4K", "--every-host"});
  INFO(aout);
  CHECK(as == 0);
  CHECK(aout.find("\rallreduce: analytical mode") != std::string::npos);
  auto [ss, sout] = run_on_terminal({"allreduce", "--ranks", "8"});
  CHECK(ss == 0);
  CHECK(sout.find("\rallreduce:") == std::string::npos);
}
