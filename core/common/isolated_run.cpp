// fork + pipe + waitpid. The child writes one status byte ('O' ok, 'E' error) followed by the payload.
#include "core/common/isolated_run.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tp {

namespace {

bool write_all(int fd, const std::string& s)
{
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += size_t(n);
  }
  return true;
}

} // namespace

void die_with_parent(int parent_pid)
{
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent_pid) ::_exit(1); // the parent died before prctl took effect
}

Result<std::string> run_isolated(const std::function<Result<std::string>()>& fn, double timeout_s,
                                 const ProgressListener& on_progress)
{
  int fds[2];
  if (::pipe(fds) != 0) return Error::msg(std::string("pipe failed: ") + std::strerror(errno));
  // Progress records: two doubles (done, total), written whole (16 bytes < PIPE_BUF) or dropped when the pipe is full.
  int pfd[2] = {-1, -1};
  if (on_progress && ::pipe(pfd) != 0) pfd[0] = pfd[1] = -1;
  ::fflush(nullptr);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {fds[0], fds[1], pfd[0], pfd[1]})
      if (fd >= 0) ::close(fd);
    return Error::msg(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    die_with_parent(parent);
    ::close(fds[0]);
    if (pfd[0] >= 0) {
      ::close(pfd[0]);
      ::fcntl(pfd[1], F_SETFL, ::fcntl(pfd[1], F_GETFL) | O_NONBLOCK);
      const int w = pfd[1];
      set_progress_listener([w](double done, double total) {
        const double rec[2] = {done, total};
        [[maybe_unused]] ssize_t n = ::write(w, rec, sizeof rec);
      });
    } else {
      set_progress_listener({}); // the parent's listener (its progress line) is not the child's
    }
    // A crash in the child is the child's: default dispositions, so that a handler inherited from the parent
    // (a test framework's, a debugger's) does not report it as the parent's failure or keep the child alive.
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
      ::signal(sig, SIG_DFL);
    std::string out;
    try {
      Result<std::string> r = fn();
      out = r.ok() ? "O" + r.value() : "E" + r.error().message();
    } catch (const std::exception& e) {
      out = std::string("E") + "uncaught exception: " + e.what();
    } catch (...) {
      out = "Euncaught exception";
    }
    write_all(fds[1], out);
    ::close(fds[1]);
    if (pfd[1] >= 0) ::close(pfd[1]);
    ::fflush(nullptr);
    ::_exit(0);
  }
  ::close(fds[1]);
  if (pfd[1] >= 0) ::close(pfd[1]);
  std::string data, progress;
  char buf[65536];
  const auto start = std::chrono::steady_clock::now();
  bool timed_out = false;
  for (;;) {
    int wait_ms = -1;
    if (timeout_s > 0) {
      double left = timeout_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (left <= 0) {
        timed_out = true;
        ::kill(pid, SIGKILL);
        break;
      }
      wait_ms = int(left * 1000) + 1;
    }
    pollfd p[2] = {{fds[0], POLLIN, 0}, {pfd[0], POLLIN, 0}};
    int pr = ::poll(p, pfd[0] >= 0 ? 2 : 1, wait_ms);
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) continue;
    if (pfd[0] >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t k = ::read(pfd[0], buf, sizeof buf);
      if (k > 0) {
        progress.append(buf, size_t(k));
        size_t whole = progress.size() / (2 * sizeof(double)) * (2 * sizeof(double));
        if (whole > 0) {
          double rec[2];
          std::memcpy(rec, progress.data() + whole - sizeof rec, sizeof rec); // the latest record
          progress.erase(0, whole);
          on_progress(rec[0], rec[1]);
        }
      } else if (k == 0 || errno != EINTR) {
        ::close(pfd[0]);
        pfd[0] = -1;
      }
    }
    if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, size_t(n));
  }
  ::close(fds[0]);
  if (pfd[0] >= 0) ::close(pfd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return Error::msg("child process timed out after " + std::to_string(timeout_s) + " s");
  if (WIFSIGNALED(status))
    return Error::msg(std::string("child process crashed: signal ") + std::to_string(WTERMSIG(status)) + " (" +
                      ::strsignal(WTERMSIG(status)) + ")");
  if (data.empty())
    return Error::msg("child process exited (status " + std::to_string(WEXITSTATUS(status)) + ") without a result");
  if (data[0] == 'O') return data.substr(1);
  return Error::msg(data.substr(1));
}

} // namespace tp
