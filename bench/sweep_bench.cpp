// Sweep throughput: points per second for small scenarios (one 64 KiB-to-16 MiB transfer per point, every point in
// its own worker process), with 1 and 2 workers, against the same points run in this process one after the other
// without workers (the cost of isolation: fork, pipe, row) -- all measured in this run. Goal: >= 50 points/s on 2
// cores.
#include "apps/lib/spec_files.hpp"
#include "apps/lib/sweep.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace tp;

int main()
{
  const auto dir = std::filesystem::temp_directory_path() / ("tp-sweep-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string spec_path = (dir / "bench.json").string();
  std::ofstream(spec_path) << R"({"kind": "sweep", "name": "bench",
    "base": {"kind": "transfer", "hw": "connectx4-edr-ib", "transport": "grpc", "size": "64K", "steps": 2},
    "axes": {"hw": ["connectx3-40gbe-roce", "connectx4-edr-ib", "connectx5-100gbe-roce", "connectx6-200g-hdr"],
             "transport": ["grpc", "verbs_v1", "verbs_v2", "gdr", "mpi", "ar_grpc"],
             "size": ["64K", "1M", "4M", "16M"]}})";
  auto spec = frontend::load_sweep(spec_path);
  if (!spec.ok()) {
    std::fprintf(stderr, "%s\n", spec.error().message().c_str());
    return 1;
  }
  const auto points = frontend::sweep_points(spec.value());
  std::printf("Sweep throughput: %zu small transfer points (4 NICs x 6 transports x 4 sizes)\n\n", points.size());
  // Reference: each point's simulation alone, one child per point but no sweep machinery (rows, polling, files).
  std::fflush(stdout);
  auto t0 = std::chrono::steady_clock::now();
  for (const auto& p : points) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      auto job = frontend::parse_job_text(p.job, spec_path, "point");
      if (job.ok()) (void)frontend::run_job(job.value());
      ::_exit(0);
    }
    ::waitpid(pid, nullptr, 0);
  }
  const double ref =
      double(points.size()) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%-34s %10.1f points/s\n", "bare fork + simulate, sequential", ref);
  std::fflush(stdout);
  for (int j : {1, 2}) {
    frontend::SweepOptions o;
    o.out = (dir / ("rows" + std::to_string(j) + ".jsonl")).string();
    o.jobs = j;
    auto sum = frontend::run_sweep(spec.value(), o);
    if (!sum.ok()) {
      std::fprintf(stderr, "%s\n", sum.error().message().c_str());
      return 1;
    }
    const double rate = double(sum->ran) / sum->seconds;
    std::printf("tensorpath sweep -j %-14d %10.1f points/s   (x%.2f of the reference; %zu error rows)\n", j, rate,
                rate / ref, sum->errors);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
