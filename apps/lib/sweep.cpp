// Design-space sweeps (see sweep.hpp).
#include "apps/lib/sweep.hpp"
#include "core/common/isolated_run.hpp"

#include "apps/lib/progress_line.hpp"
#include "apps/lib/spec_files.hpp"
#include "core/common/file_io.hpp"
#include "core/common/resource_estimate.hpp"
#include "models/json_reader.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace tp::frontend {

using json = nlohmann::json;

namespace {

std::string row_json(const SweepSpec& spec, const SweepPoint& p, const std::map<std::string, double>* metrics,
                     const std::string& error, const std::string& bottleneck = {})
{
  json row;
  row["point"] = p.index;
  row["spec"] = spec.hash;
  json params = json::object();
  for (const auto& [k, v] : p.params)
    params[k] = json::parse(v);
  row["params"] = params;
  if (metrics) {
    json m = json::object();
    for (const auto& [k, v] : *metrics)
      if (spec.keep.empty() || std::find(spec.keep.begin(), spec.keep.end(), k) != spec.keep.end()) m[k] = v;
    row["metrics"] = m;
    if (!bottleneck.empty()) row["bottleneck"] = bottleneck;
  } else {
    row["error"] = error;
  }
  return row.dump();
}

/// In a worker process: run the point, return its row.
std::string compute_row(const SweepSpec& spec, const SweepPoint& p)
{
  // A point that would outlast its timeout is refused up front with its estimate (an error row saying why).
  set_job_timeout(spec.point_timeout, "the sweep's point_timeout");
  auto job = parse_job_text(p.job, spec.file, "point " + std::to_string(p.index));
  if (!job.ok()) return row_json(spec, p, nullptr, job.error().message());
  auto out = run_job(job.value());
  if (!out.ok()) return row_json(spec, p, nullptr, out.error().message());
  return row_json(spec, p, &out->metrics, "", out->bottleneck);
}

struct Worker {
  pid_t pid = -1;
  int fd = -1;
  size_t point = 0;
  std::string data;
  std::chrono::steady_clock::time_point started;
};

Worker spawn(const SweepSpec& spec, const SweepPoint& p)
{
  int fds[2];
  Worker w;
  w.point = p.index;
  if (::pipe2(fds, O_CLOEXEC) != 0) return w;
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    die_with_parent(parent); // a killed sweep's points die with it (they share its lock file's flock)
    ::close(fds[0]);
    std::string row;
    try {
      row = compute_row(spec, p);
    } catch (const std::exception& e) {
      row = row_json(spec, p, nullptr, std::string("uncaught exception: ") + e.what());
    }
    size_t off = 0;
    while (off < row.size()) {
      const ssize_t n = ::write(fds[1], row.data() + off, row.size() - off);
      if (n <= 0) break;
      off += size_t(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  if (pid < 0) {
    ::close(fds[0]);
    return w;
  }
  w.pid = pid;
  w.fd = fds[0];
  w.started = std::chrono::steady_clock::now();
  return w;
}

std::string describe_status(int status)
{
  if (WIFSIGNALED(status)) return "worker killed by signal " + std::to_string(WTERMSIG(status));
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) return "worker exited with " + std::to_string(WEXITSTATUS(status));
  return "worker returned no row";
}

} // namespace

std::string point_row_here(const SweepSpec& spec, const SweepPoint& p)
{
  return compute_row(spec, p);
}

std::string run_point_row(const SweepSpec& spec, const SweepPoint& p)
{
  Worker w = spawn(spec, p);
  if (w.pid < 0) return row_json(spec, p, nullptr, "cannot start a worker process");
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(w.fd, buf, sizeof buf);
    if (n > 0) {
      w.data.append(buf, size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  ::close(w.fd);
  int status = 0;
  ::waitpid(w.pid, &status, 0);
  return w.data.empty() ? row_json(spec, p, nullptr, describe_status(status)) : w.data;
}

Result<SweepSummary> run_sweep(const SweepSpec& spec, const SweepOptions& o)
{
  if (o.shards < 1 || o.shard < 0 || o.shard >= o.shards)
    return Error::at("", "--shard", "K/N with 0 <= K < N", std::to_string(o.shard) + "/" + std::to_string(o.shards));
  if (o.jobs < 1) return Error::at("", "-j", "at least 1", std::to_string(o.jobs));
  const auto t0 = std::chrono::steady_clock::now();
  if (io::same_file(o.out, spec.file))
    return Error::at(o.out, "--out", "a rows file other than the sweep file", "the sweep file itself");
  std::set<size_t> done;
  auto opened = open_rows_file(o.out, o.resume, spec.hash, done);
  if (!opened.ok()) return opened.error();
  RowsFile& rows_file = *opened.value();
  std::vector<SweepPoint> todo;
  SweepSummary sum;
  for (auto& p : sweep_points(spec)) {
    if (p.index % size_t(o.shards) != size_t(o.shard)) continue;
    ++sum.total;
    if (done.count(p.index)) {
      ++sum.skipped;
      continue;
    }
    todo.push_back(std::move(p));
  }
  Status write_error = ok_status();
  auto append = [&](const std::string& row) {
    if (!write_error.ok()) return; // the first lost row stops the sweep (below); its rows so far are kept
    write_error = rows_file.append(row);
  };
  ProgressLine line(spec.name.empty() ? "sweep" : spec.name, o.progress);
  auto show = [&] {
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const size_t fin = sum.ran + sum.skipped;
    char what[96];
    std::snprintf(what, sizeof what, "%zu/%zu points, %.1f points/s, %zu error(s)", fin, sum.total,
                  el > 0 ? double(sum.ran) / el : 0.0, sum.errors);
    line.update(sum.total ? double(fin) / double(sum.total) : 1.0, what);
  };
  std::vector<Worker> running;
  size_t next = 0;
  char buf[65536];
  show();
  while (next < todo.size() || !running.empty()) {
    if (!write_error.ok()) { // stop: no point runs for a row that cannot be kept
      for (auto& w : running) {
        ::kill(w.pid, SIGKILL);
        ::close(w.fd);
        ::waitpid(w.pid, nullptr, 0);
      }
      running.clear();
      break;
    }
    while (next < todo.size() && int(running.size()) < o.jobs) {
      Worker w = spawn(spec, todo[next]);
      if (w.pid < 0) {
        append(row_json(spec, todo[next], nullptr, "cannot start a worker process"));
        ++sum.ran, ++sum.errors;
      } else {
        running.push_back(std::move(w));
      }
      ++next;
    }
    std::vector<pollfd> pfs;
    for (auto& w : running)
      pfs.push_back({w.fd, POLLIN, 0});
    ::poll(pfs.data(), pfs.size(), 200);
    for (size_t k = running.size(); k-- > 0;) {
      Worker& w = running[k];
      bool finished = false;
      if (pfs[k].revents & (POLLIN | POLLHUP | POLLERR)) {
        const ssize_t n = ::read(w.fd, buf, sizeof buf);
        if (n > 0)
          w.data.append(buf, size_t(n));
        else if (n == 0 || errno != EINTR)
          finished = true;
      }
      const double age = std::chrono::duration<double>(std::chrono::steady_clock::now() - w.started).count();
      std::string err;
      if (!finished && age > spec.point_timeout) {
        ::kill(w.pid, SIGKILL);
        err = "timed out after " + std::to_string(int(spec.point_timeout)) + " s";
        finished = true;
        w.data.clear();
      }
      if (!finished) continue;
      ::close(w.fd);
      int status = 0;
      ::waitpid(w.pid, &status, 0);
      const SweepPoint& p =
          *std::find_if(todo.begin(), todo.end(), [&](const SweepPoint& q) { return q.index == w.point; });
      std::string row = w.data;
      bool ok_row = false;
      try {
        ok_row = !row.empty() && json::parse(row).contains("point");
      } catch (const std::exception&) {
      }
      if (!ok_row) row = row_json(spec, p, nullptr, err.empty() ? describe_status(status) : err);
      if (is_error_row(row)) ++sum.errors;
      append(row);
      ++sum.ran;
      running.erase(running.begin() + long(k));
      show();
    }
  }
  line.finish();
  if (auto st = rows_file.close(); write_error.ok() && !st.ok()) write_error = st;
  if (!write_error.ok()) sum.lost = write_error.error().message();
  sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sum;
}

Status rows_to_csv(const std::string& jsonl, const std::string& csv)
{
  if (io::same_file(jsonl, csv)) return Error::at(csv, "--csv", "a file other than the rows file", "the rows file");
  auto text = io::read_file_capped(jsonl, "rows file", io::input_cap(io::ROWS_INPUT_CAP));
  if (!text.ok()) return text.error();
  std::istringstream f(text.value());
  std::vector<json> rows;
  std::vector<std::string> params, metrics;
  std::set<std::string> seen_m;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const std::exception& e) {
      return Error::at(jsonl, "row " + std::to_string(rows.size() + 1), "a JSON object", e.what());
    }
    if (params.empty() && j.contains("params"))
      for (const auto& [k, v] : j["params"].items())
        params.push_back(k);
    if (j.contains("metrics"))
      for (const auto& [k, v] : j["metrics"].items())
        if (seen_m.insert(k).second) metrics.push_back(k);
    rows.push_back(std::move(j));
  }
  std::sort(rows.begin(), rows.end(), [](const json& a, const json& b) { return a["point"] < b["point"]; });
  std::ostringstream out;
  auto quote = [](std::string s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s)
      q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  out << "point";
  for (const auto& p : params)
    out << "," << quote(p);
  for (const auto& m : metrics)
    out << "," << quote(m);
  out << ",error\n";
  for (const auto& r : rows) {
    out << r["point"].get<size_t>();
    for (const auto& p : params) {
      const json& v = r["params"].contains(p) ? r["params"][p] : json();
      out << "," << quote(v.is_string() ? v.get<std::string>() : v.dump());
    }
    for (const auto& m : metrics) {
      out << ",";
      if (r.contains("metrics") && r["metrics"].contains(m)) out << r["metrics"][m].dump();
    }
    out << "," << quote(r.value("error", "")) << "\n";
  }
  return io::write_file_atomically(csv, out.str());
}

} // namespace tp::frontend
