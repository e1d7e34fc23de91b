// Replay speed at 128 ranks (issue 18): `tensorpath replay` of the real 128-rank PyTorch trace
// (tests/traces/fixtures/real/hta_sampled_rank-0.json.gz, 1144 kernels, 10 collectives of which 4 allreduces are
// re-simulated as 128-rank rings) against a reference run in the same program: `tensorpath allreduce` of one
// 128-rank analytical ring of the trace's largest allreduce (107.8 MB). Both are whole processes of the built CLI
// (replay simulates each distinct collective in a child process of its own), timed on the wall clock, median of
// five runs each; the ratio says how many single-ring runs one replay costs (reading the trace, four ring
// simulations, the report). Goal: a 128-rank trace's collectives replayed in seconds.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace {

/// Wall seconds of `argv` run to completion with its output discarded; negative if it failed.
double run_quiet(const std::vector<std::string>& argv)
{
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(126);
    std::vector<char*> args;
    for (const auto& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median_of(const std::vector<std::string>& argv, int runs)
{
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const double s = run_quiet(argv);
    if (s < 0) return -1;
    t.push_back(s);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

} // namespace

int main()
{
  const std::string tp = TENSORPATH_BINARY;
  const std::vector<std::string> replay = {tp, "replay", TENSORPATH_REPLAY_FIXTURE, "--hw", "connectx4-edr-ib"};
  const std::vector<std::string> ring = {tp,          "allreduce", "--ranks",    "128",  "--size",
                                         "107822144", "--mode",    "analytical", "--hw", "connectx4-edr-ib"};
  const int runs = 5;
  const double t_ring = median_of(ring, runs);
  const double t_replay = median_of(replay, runs);
  if (t_ring <= 0 || t_replay <= 0) {
    std::fprintf(stderr, "replay_bench: a run failed (ring %.3f s, replay %.3f s)\n", t_ring, t_replay);
    return 1;
  }
  std::printf("128-rank replay (the real HTA trace, 4 allreduces re-simulated) against one 128-rank analytical ring\n");
  std::printf("%-58s %10s %8s\n", "run (median of 5, whole process)", "wall [s]", "ratio");
  std::printf("%-58s %10.3f %8.2f\n", "reference: tensorpath allreduce, 128 ranks, 107.8 MB", t_ring, 1.0);
  std::printf("%-58s %10.3f %8.2f\n", "tensorpath replay hta_sampled_rank-0.json.gz", t_replay, t_replay / t_ring);
  return 0;
}
