// Kineto reading speed and memory: PyTorch profiler traces of 10, 50 and 100 MB (and the 50 MB one gzip'd), made at
// run time from the real fixture tests/traces/fixtures/real/hta_nccl_data_slice.json by repeating its events with
// shifted timestamps, correlation ids, External ids and step numbers, read by `read_trace` (read, inflate, the
// streaming Kineto reader, steps) against two references measured in the same run: reading the file alone (the floor
// for memory: the text is held) and nlohmann's json::parse of the same text (a whole document, the reference for
// speed). Each measurement runs in a fresh process (this program run again with --child) so that its peak resident
// memory (getrusage's ru_maxrss) is its own; the peak includes the process's start (about a few MB, the "start" row).
// Goal (issue 18): 50 MB in a few seconds, peak memory below 3x the file size.
#include "core/common/file_io.hpp"
#include "core/common/gzip_input.hpp"
#include "traces/trace.hpp"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace tp;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t CAP = 4ull << 30;

/// The child: do `mode` on `path`, print "seconds peak_kB items".
int child(const std::string& mode, const std::string& path)
{
  const auto t0 = std::chrono::steady_clock::now();
  size_t items = 0;
  if (mode == "read") {
    auto text = io::read_maybe_gzipped(path, "trace file", CAP);
    if (!text.ok()) return std::fprintf(stderr, "%s\n", text.error().message().c_str()), 1;
    items = text->size();
  } else if (mode == "json_parse") {
    auto text = io::read_maybe_gzipped(path, "trace file", CAP);
    if (!text.ok()) return 1;
    items = json::parse(text.value())["traceEvents"].size();
  } else if (mode == "read_trace") {
    auto t = traces::read_trace(path);
    if (!t.ok()) return std::fprintf(stderr, "%s\n", t.error().message().c_str()), 1;
    items = t->ops.size() + t->collectives.size();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("%.6f %ld %zu\n", s, ru.ru_maxrss, items);
  return 0;
}

struct Run {
  double seconds = 0, peak_mb = 0;
  size_t items = 0;
};

/// Run this program again as a child doing `mode` on `path`.
Run measure(const std::string& self, const std::string& mode, const std::string& path)
{
  int fd[2];
  if (pipe(fd) != 0) std::exit(2);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    execl(self.c_str(), self.c_str(), "--child", mode.c_str(), path.c_str(), (char*)nullptr);
    _exit(127);
  }
  close(fd[1]);
  std::string out;
  char buf[256];
  for (ssize_t n; (n = read(fd[0], buf, sizeof buf)) > 0;)
    out.append(buf, size_t(n));
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  Run r;
  long kb = 0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      std::sscanf(out.c_str(), "%lf %ld %zu", &r.seconds, &kb, &r.items) != 3) {
    std::fprintf(stderr, "child %s %s failed\n", mode.c_str(), path.c_str());
    std::exit(1);
  }
  r.peak_mb = double(kb) * 1024 / 1e6;
  return r;
}

/// A Kineto trace of about `target` bytes: the fixture's top-level keys, then its events repeated, each copy shifted
/// past the previous one in time, correlation id, External id and ProfilerStep number. Returns the events written.
size_t make_trace(const json& fixture, size_t target, const std::string& path)
{
  const json& events = fixture["traceEvents"];
  double lo = 1e300, hi = 0;
  int64_t max_corr = 0, max_ext = 0, max_step = 0;
  for (const auto& e : events) {
    if (e.contains("ts") && e["ts"].is_number() && e.value("ph", "") == "X") {
      lo = std::min(lo, e["ts"].get<double>());
      hi = std::max(hi, e["ts"].get<double>() + e.value("dur", 0.0));
    }
    if (e.contains("args") && e["args"].is_object()) {
      const json& a = e["args"];
      if (a.contains("correlation") && a["correlation"].is_number_integer())
        max_corr = std::max(max_corr, a["correlation"].get<int64_t>());
      if (a.contains("External id") && a["External id"].is_number_integer())
        max_ext = std::max(max_ext, a["External id"].get<int64_t>());
    }
    const std::string name = e.value("name", "");
    if (name.rfind("ProfilerStep#", 0) == 0) max_step = std::max(max_step, int64_t(std::stoll(name.substr(13))));
  }
  std::ofstream f(path, std::ios::binary);
  json head = fixture;
  head.erase("traceEvents");
  std::string h = head.dump();
  h.pop_back(); // '}'
  f << h << ", \"traceEvents\": [";
  size_t written = 0, n = 0;
  for (int64_t copy = 0; written < target; ++copy) {
    for (json e : events) {
      if (copy > 0 && e.value("ph", "") == "M") continue; // process and thread names: once
      if (e.contains("ts") && e["ts"].is_number()) e["ts"] = e["ts"].get<double>() + double(copy) * (hi - lo + 1000);
      if (e.contains("args") && e["args"].is_object()) {
        json& a = e["args"];
        if (a.contains("correlation") && a["correlation"].is_number_integer())
          a["correlation"] = a["correlation"].get<int64_t>() + copy * (max_corr + 1);
        if (a.contains("External id") && a["External id"].is_number_integer())
          a["External id"] = a["External id"].get<int64_t>() + copy * (max_ext + 1);
      }
      const std::string name = e.value("name", "");
      if (name.rfind("ProfilerStep#", 0) == 0)
        e["name"] = "ProfilerStep#" + std::to_string(std::stoll(name.substr(13)) + copy * (max_step + 1));
      const std::string s = (n++ ? ", " : "") + e.dump();
      f << s;
      written += s.size();
    }
  }
  f << "]}";
  return n;
}

bool gzip_file(const std::string& from, const std::string& to)
{
  std::ifstream in(from, std::ios::binary);
  gzFile out = gzopen(to.c_str(), "wb6");
  if (!out) return false;
  std::vector<char> buf(1 << 20);
  while (in.read(buf.data(), std::streamsize(buf.size())) || in.gcount() > 0)
    if (gzwrite(out, buf.data(), unsigned(in.gcount())) <= 0) return false;
  return gzclose(out) == Z_OK;
}

} // namespace

int main(int argc, char** argv)
{
  if (argc == 4 && std::string(argv[1]) == "--child") return child(argv[2], argv[3]);
  const std::string self = fs::canonical("/proc/self/exe").string();
  std::ifstream in(TENSORPATH_KINETO_FIXTURE);
  std::stringstream ss;
  ss << in.rdbuf();
  const json fixture = json::parse(ss.str());
  const fs::path dir = fs::temp_directory_path() / ("tp_kineto_bench_" + std::to_string(getpid()));
  fs::create_directories(dir);
  struct File {
    std::string path, label;
    double mb; ///< the text's size (inflated, for the gzip'd one)
    size_t events;
  };
  std::vector<File> files;
  for (size_t mb : {10, 50, 100}) {
    const std::string p = (dir / ("kineto_" + std::to_string(mb) + "MB.json")).string();
    const size_t n = make_trace(fixture, mb * 1000000, p);
    files.push_back({p, std::to_string(mb) + " MB", double(fs::file_size(p)) / 1e6, n});
    if (mb == 50 && gzip_file(p, p + ".gz"))
      files.push_back(
          {p + ".gz", "50 MB .gz (" + std::to_string(fs::file_size(p + ".gz") / 1000000) + " MB)", files.back().mb, n});
  }
  const Run start = measure(self, "none", files[0].path);
  std::printf(
      "Kineto reading: the events of %s repeated (ts, correlation, External id and step shifted); each row\n"
      "a fresh process; peak = its maximum resident memory (getrusage), %.1f MB for a process that does "
      "nothing.\nMemory x = peak / the text's size (inflated size for .gz: the text is held while parsing).\n\n",
      fs::path(TENSORPATH_KINETO_FIXTURE).filename().c_str(), start.peak_mb);
  std::printf("%-22s %-12s %8s %9s %10s %9s %9s\n", "trace", "what", "seconds", "MB/s", "time x", "peak MB",
              "memory x");
  int bad = 0;
  for (const File& f : files) {
    const Run read = measure(self, "read", f.path);
    const Run dom = measure(self, "json_parse", f.path);
    const Run reader = measure(self, "read_trace", f.path);
    if (dom.items != f.events || reader.items == 0) {
      std::fprintf(stderr, "%s: %zu events parsed, %zu written; %zu ops and collectives read\n", f.label.c_str(),
                   dom.items, f.events, reader.items);
      bad = 1;
    }
    auto row = [&](const char* what, const Run& r, const char* note) {
      std::printf("%-22s %-12s %8.2f %9.1f %9.2fx %9.1f %8.2fx%s\n", f.label.c_str(), what, r.seconds, f.mb / r.seconds,
                  r.seconds / dom.seconds, r.peak_mb, r.peak_mb / f.mb, note);
    };
    row("read only", read, "");
    row("json::parse", dom, "  (reference)");
    row("read_trace", reader, "");
    std::printf("\n");
  }
  std::printf("%zu events in the 50 MB trace. Goal: read_trace of 50 MB in a few seconds, memory x below 3.\n",
              files[1].events);
  fs::remove_all(dir);
  return bad;
}
