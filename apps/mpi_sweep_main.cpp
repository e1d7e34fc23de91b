// tensorpath-mpi-sweep: the MPI driver of `tensorpath sweep --mpi` (which execs this program with its arguments).
// Rank 0 reads the sweep's points (`tensorpath sweep SPEC --list`), skips those already in the rows file (--resume),
// hands the others out one at a time to ranks 1..N-1 and appends the rows they send back; each of those ranks runs
// its point as `tensorpath sweep SPEC --point I` (a process of its own: one simulation per process). The rows are
// the same as a local sweep's. A separate program because SimGrid (SMPI) exports the MPI symbols too.
#include "apps/lib/rows_file.hpp"

#include <mpi.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define TP_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TP_LSAN 1
#endif
#endif
#ifdef TP_LSAN
/// No leak check at exit in this program (AddressSanitizer builds, scripts/sanitize.sh): OpenMPI does not free
/// what MPI_Init allocated, and most of it comes from MCA/PMIx components that MPI_Finalize has already unloaded,
/// so LeakSanitizer sees "<unknown module>" frames that no suppression can name. This program's own code is one
/// loop over MPI messages (plus rows_file.cpp, which the tensorpath tests check under LeakSanitizer); its memory
/// errors are still caught by AddressSanitizer. docs/sanitizers.md.
extern "C" int __lsan_is_turned_off()
{
  return 1;
}
#endif

namespace {

constexpr int TAG_POINT = 1, TAG_ROW = 2;
constexpr long STOP = -1;

std::string quote(const std::string& s)
{
  std::string q = "'";
  for (char c : s)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// Run a command, return its standard output (empty on failure).
std::string capture(const std::string& cmd, int* status)
{
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  *status = ::pclose(p);
  return out;
}

int fail(const std::string& msg)
{
  std::fprintf(stderr, "tensorpath sweep --mpi: %s\n", msg.c_str());
  MPI_Abort(MPI_COMM_WORLD, 2);
  return 2;
}

} // namespace

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Arguments: as `tensorpath sweep`: SPEC --out FILE [--resume] [--shard K/N] [-j/-q/--csv are ignored here].
  std::string spec, out, shard_arg;
  bool resume = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "sweep" || a == "--mpi" || a == "-q" || a == "--quiet") continue;
    if ((a == "--out" || a == "-o") && i + 1 < argc) {
      out = argv[++i];
    } else if (a == "--shard" && i + 1 < argc) {
      shard_arg = argv[++i];
    } else if ((a == "-j" || a == "--jobs" || a == "--csv") && i + 1 < argc) {
      ++i;
    } else if (a == "--resume") {
      resume = true;
    } else if (!a.empty() && a[0] != '-' && spec.empty()) {
      spec = a;
    } else {
      return fail("unexpected argument \"" + a + "\"");
    }
  }
  if (spec.empty() || out.empty()) return fail("usage: mpirun -np N tensorpath sweep SPEC --out FILE --mpi");
  int shard = 0, shards = 1;
  if (!shard_arg.empty() && std::sscanf(shard_arg.c_str(), "%d/%d", &shard, &shards) != 2)
    return fail("--shard: expected K/N, got \"" + shard_arg + "\"");
  const std::string tensorpath = (std::filesystem::canonical("/proc/self/exe").parent_path() / "tensorpath").string();
  const std::string base = quote(tensorpath) + " sweep " + quote(spec);
  if (rank != 0) {
    for (;;) {
      long idx = STOP;
      MPI_Recv(&idx, 1, MPI_LONG, 0, TAG_POINT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (idx == STOP) break;
      int status = 0;
      std::string row = capture(base + " --point " + std::to_string(idx), &status);
      while (!row.empty() && (row.back() == '\n' || row.back() == '\r'))
        row.pop_back();
      if (row.empty() || row.find('\n') != std::string::npos)
        row = "{\"error\":\"the point's worker printed no row (status " + std::to_string(status) +
              ")\",\"point\":" + std::to_string(idx) + "}";
      MPI_Send(row.data(), int(row.size()), MPI_CHAR, 0, TAG_ROW, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
  }
  // Rank 0.
  int status = 0;
  const std::string list = capture(base + " --list", &status);
  if (status != 0) return fail("cannot list the points of " + spec + " (tensorpath sweep --list failed)");
  size_t total = 0;
  for (char c : list)
    total += c == '\n';
  std::string hash = capture(base + " --spec-hash", &status);
  while (!hash.empty() && (hash.back() == '\n' || hash.back() == '\r'))
    hash.pop_back();
  if (status != 0 || hash.empty()) return fail("cannot hash " + spec + " (tensorpath sweep --spec-hash failed)");
  std::set<size_t> done;
  auto opened = tp::frontend::open_rows_file(out, resume, hash, done);
  if (!opened.ok()) return fail(opened.error().message());
  tp::frontend::RowsFile& rows = *opened.value();
  std::vector<long> todo;
  size_t in_shard = 0;
  for (size_t i = 0; i < total; ++i) {
    if (i % size_t(shards) != size_t(shard)) continue;
    ++in_shard;
    if (!done.count(i)) todo.push_back(long(i));
  }
  size_t next = 0, outstanding = 0, ran = 0, errors = 0;
  if (size == 1) return fail("needs at least 2 ranks (rank 0 hands out points, the others run them)");
  for (int w = 1; w < size; ++w) {
    const long idx = next < todo.size() ? todo[next++] : STOP;
    MPI_Send(&idx, 1, MPI_LONG, w, TAG_POINT, MPI_COMM_WORLD);
    outstanding += idx != STOP;
  }
  std::vector<char> buf;
  while (outstanding > 0) {
    MPI_Status st;
    MPI_Probe(MPI_ANY_SOURCE, TAG_ROW, MPI_COMM_WORLD, &st);
    int n = 0;
    MPI_Get_count(&st, MPI_CHAR, &n);
    buf.resize(size_t(n) + 1);
    MPI_Recv(buf.data(), n, MPI_CHAR, st.MPI_SOURCE, TAG_ROW, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    --outstanding;
    std::string line(buf.data(), size_t(n));
    errors += tp::frontend::is_error_row(line);
    if (auto st = rows.append(line); !st.ok()) return fail(st.error().message());
    ++ran;
    const long idx = next < todo.size() ? todo[next++] : STOP;
    MPI_Send(&idx, 1, MPI_LONG, st.MPI_SOURCE, TAG_POINT, MPI_COMM_WORLD);
    outstanding += idx != STOP;
  }
  if (auto st = rows.close(); !st.ok()) return fail(st.error().message());
  std::printf("%s: %zu point(s), %zu run now on %d rank(s) (%zu error rows), %zu already in %s\n", spec.c_str(),
              in_shard, ran, size - 1, errors, done.size(), out.c_str());
  MPI_Finalize();
  return 0;
}
