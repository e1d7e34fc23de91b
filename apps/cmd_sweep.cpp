// `tensorpath sweep`: run every point of a sweep file (a base job and axes of values), each in its own worker
// process, appending one JSON row per finished point; --resume after a kill, --shard K/N for job arrays.
#include "apps/commands.hpp"
#include "apps/lib/sweep.hpp"
#include "core/common/file_io.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tp::cli {

namespace {

int run_sweep_command(const frontend::ParsedArgs& a)
{
  if (a.positional().size() != 1)
    return report_error(Error::at("", "tensorpath sweep", "one sweep file", std::to_string(a.positional().size())));
  if (a.has("mpi")) {
    // The MPI driver is its own program (SimGrid exports the MPI symbols too): become it, same arguments.
    char self[4096];
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    const std::string dir =
        n > 0 ? std::string(self, size_t(n)).substr(0, std::string(self, size_t(n)).rfind('/')) : std::string(".");
    const std::string driver = dir + "/tensorpath-mpi-sweep";
    std::vector<std::string> args{driver, "sweep", a.positional()[0], "--out", a.get("out")};
    if (a.has("resume")) args.push_back("--resume");
    if (a.has("shard")) args.insert(args.end(), {"--shard", a.get("shard")});
    std::vector<char*> argv;
    for (auto& s : args)
      argv.push_back(s.data());
    argv.push_back(nullptr);
    ::execv(driver.c_str(), argv.data());
    return report_error(
        Error::at(driver, "--mpi", "the MPI driver built next to tensorpath (libopenmpi-dev)", std::strerror(errno)));
  }
  auto spec = frontend::load_sweep(a.positional()[0]);
  if (!spec.ok()) return report_error(spec.error());
  if (a.has("point")) {
    auto idx = a.get_int("point", 0, 0, 1L << 40);
    if (!idx.ok()) return report_error(idx.error());
    const auto pts = frontend::sweep_points(spec.value());
    if (size_t(idx.value()) >= pts.size())
      return report_error(
          Error::at("", "--point", "an index below " + std::to_string(pts.size()), std::to_string(idx.value())));
    std::printf("%s\n", frontend::point_row_here(spec.value(), pts[size_t(idx.value())]).c_str());
    return 0;
  }
  if (a.has("spec-hash")) {
    std::printf("%s\n", spec->hash.c_str());
    return 0;
  }
  if (a.has("list")) {
    for (const auto& p : frontend::sweep_points(spec.value()))
      std::printf("%zu %s\n", p.index, p.job.c_str());
    return 0;
  }
  frontend::SweepOptions o;
  o.out = a.get("out");
  if (o.out.empty()) return report_error(Error::at("", "--out", "a rows file (JSON lines)", "none"));
  if (a.has("csv") && (io::same_file(a.get("csv"), a.positional()[0]) || a.get("csv") == o.out))
    return report_error(Error::at(a.get("csv"), "--csv", "a file other than the sweep file and --out", "the same"));
  auto jobs = a.get_int("jobs", 1, 1, 1024);
  if (!jobs.ok()) return report_error(jobs.error());
  o.jobs = int(jobs.value());
  o.resume = a.has("resume");
  if (a.has("shard")) {
    const std::string s = a.get("shard");
    const auto slash = s.find('/');
    char *e1 = nullptr, *e2 = nullptr;
    const long k = slash == std::string::npos ? -1 : std::strtol(s.c_str(), &e1, 10);
    const long n = slash == std::string::npos ? -1 : std::strtol(s.c_str() + slash + 1, &e2, 10);
    if (slash == std::string::npos || e1 != s.c_str() + slash || *e2 || n < 1 || k < 0 || k >= n)
      return report_error(Error::at("", "--shard", "K/N with 0 <= K < N (e.g. $SLURM_ARRAY_TASK_ID/16)", s));
    o.shard = int(k);
    o.shards = int(n);
  }
  o.progress = !a.has("quiet") && ::isatty(2);
  auto sum = frontend::run_sweep(spec.value(), o);
  if (!sum.ok()) return report_error(sum.error());
  if (!sum->lost.empty())
    return report_io_error(Error::msg(sum->lost + " (the sweep stopped; " + std::to_string(sum->ran) +
                                      " point(s) ran, the rows written before the error are in the file)"));
  std::printf("%s: %zu point(s)%s, %zu run now (%zu error rows), %zu already in %s; %.1f s, %.1f points/s\n",
              spec->name.c_str(), sum->total, o.shards > 1 ? (" in shard " + a.get("shard")).c_str() : "", sum->ran,
              sum->errors, sum->skipped, o.out.c_str(), sum->seconds,
              sum->seconds > 0 ? double(sum->ran) / sum->seconds : 0.0);
  if (a.has("csv"))
    if (auto st = frontend::rows_to_csv(o.out, a.get("csv")); !st.ok()) return report_io_error(st.error());
  if (sum->errors > 0) {
    std::fprintf(stderr, "tensorpath sweep: %zu point(s) failed (their rows hold \"error\")\n", sum->errors);
    return exit_code::FAILED;
  }
  return exit_code::OK;
}

} // namespace

Command sweep_command()
{
  frontend::CommandSpec s;
  s.max_positionals = 1;
  s.name = "sweep";
  s.summary = "run a design-space sweep: every point in its own process, one JSON row per point as it finishes";
  s.usage = "SWEEP.json --out ROWS.jsonl [-j N] [--resume] [--shard K/N] [--csv FILE] [--list]";
  s.options = {
      {"out", 'o', true, "FILE", "rows file (JSON lines: point, params, metrics or error)"},
      {"jobs", 'j', true, "N", "worker processes at a time (default 1)"},
      {"resume", 0, false, "", "keep the rows already in --out and run only the missing points"},
      {"shard", 0, true, "K/N", "run only the points whose index mod N is K (job arrays: SLURM and the like)"},
      {"csv", 0, true, "FILE", "also write the rows as CSV (sorted by point) when the sweep ends"},
      {"list", 0, false, "", "print the points (index and job) and exit"},
      {"spec-hash", 0, false, "", "print the hash of the spec that every row carries (what --resume checks) and exit"},
      {"point", 0, true, "I", "run point I in this process and print its row (what the MPI driver's ranks run)"},
      {"mpi", 0, false, "",
       "under mpirun: rank 0 hands out points and writes the rows, ranks 1..N-1 run them (mpirun -np N tensorpath "
       "sweep SPEC --out FILE --mpi)"},
      {"quiet", 'q', false, "", "no progress line (it is shown only on a terminal anyway)"},
  };
  s.details = "Sweep file: {\"kind\": \"sweep\", \"base\": {a job as in a scenario, with \"hw\"}, \"axes\": "
              "{\"field\": [values],\n"
              "...}, \"combine\": \"product\"|\"zip\", \"metrics\": [names to keep], \"point_timeout\": seconds}.\n"
              "A point that crashes or times out becomes a row with \"error\". Format: docs/formats.md#sweeps.";
  return {s, &run_sweep_command};
}

} // namespace tp::cli
