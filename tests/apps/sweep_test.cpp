// Sweeps: points from axes (product and zip), strict spec errors, one row per point appended as it finishes,
// resume after a torn write or a SIGKILL without losing or duplicating a row, shards, determinism.
#include "apps/lib/sweep.hpp"

#include "tests/test_time.hpp"

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

using namespace tp;

namespace {

std::string temp_file(const std::string& name, const std::string& text)
{
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tp-sweep-" + std::to_string(::getpid()) + "-" + name)).string();
  std::ofstream(path) << text;
  return path;
}

std::string small_sweep(const std::string& extra = "")
{
  return R"({"kind": "sweep", "name": "small",
    "base": {"kind": "transfer", "hw": "connectx4-edr-ib", "transport": "grpc", "size": "64K", "steps": 2},
    "axes": {"transport": ["grpc", "verbs_v2", "gdr"], "size": ["4K", "1M"]})" +
         extra + "}";
}

std::vector<std::string> lines_of(const std::string& path)
{
  std::ifstream f(path);
  std::vector<std::string> v;
  for (std::string l; std::getline(f, l);)
    v.push_back(l);
  return v;
}

} // namespace

TEST_CASE("sweep points: the product varies the last axis fastest, zip pairs the axes", "[sweep]")
{
  auto s = frontend::load_sweep(temp_file("p.json", small_sweep()));
  REQUIRE(s.ok());
  const auto pts = frontend::sweep_points(s.value());
  REQUIRE(pts.size() == 6);
  CHECK(pts[0].params[0].second == "\"grpc\"");
  CHECK(pts[0].params[1].second == "\"4K\"");
  CHECK(pts[1].params[1].second == "\"1M\"");
  CHECK(pts[2].params[0].second == "\"verbs_v2\"");
  CHECK(pts[5].job.find("\"transport\":\"gdr\"") != std::string::npos);
  auto z = frontend::load_sweep(temp_file("z.json", R"({"base": {"kind": "transfer", "hw": "connectx4-edr-ib"},
    "axes": {"transport": ["grpc", "gdr"], "size": ["4K", "1M"]}, "combine": "zip"})"));
  REQUIRE(z.ok());
  const auto zp = frontend::sweep_points(z.value());
  REQUIRE(zp.size() == 2);
  CHECK(zp[1].params[0].second == "\"gdr\"");
  CHECK(zp[1].params[1].second == "\"1M\"");
}

TEST_CASE("a bad sweep file is refused with the file, the field and the expectation", "[sweep]")
{
  struct Bad {
    std::string text, needle;
  } cases[] = {
      {R"({"base": {"kind": "transfer", "hw": "connectx4-edr-ib"}, "axes": {"size": ["4K"]}, "colour": 1})", "colour"},
      {R"({"base": {"kind": "transfer", "hw": "connectx4-edr-ib"}, "axes": {}})", "axes"},
      {R"({"base": {"kind": "transfer", "hw": "connectx4-edr-ib"}, "axes": {"size": ["4K", "1M"],
          "transport": ["grpc"]}, "combine": "zip"})",
       "axes.transport"},
      {R"({"base": {"kind": "transfer", "hw": "connectx4-edr-ib"}, "axes": {"transport": ["grpc", "pigeon"]}})",
       "point 1"},
      {R"({"base": {"kind": "transfer", "hw": "connectx4-edr-ib"}, "axes": {"size": ["4K"]}, "combine": "cross"})",
       "combine"},
      {R"([1, 2])", "an object"},
      {R"({"base": )", "JSON"},
      // A name or combine of the wrong type threw nlohmann's type_error out of load_sweep.
      {R"({"name": 3, "base": {"kind": "transfer", "hw": "connectx4-edr-ib"}, "axes": {"size": ["4K"]}})", "name"},
      {R"({"base": {"kind": "transfer", "hw": "connectx4-edr-ib"}, "axes": {"size": ["4K"]}, "combine": [1]})",
       "combine"},
      // 11^4 = 14,641 points: over the limit, refused before any point is expanded.
      {R"({"base": {"kind": "transfer", "hw": "connectx4-edr-ib"}, "axes": {"a": [0,1,2,3,4,5,6,7,8,9,10],
          "b": [0,1,2,3,4,5,6,7,8,9,10], "c": [0,1,2,3,4,5,6,7,8,9,10], "d": [0,1,2,3,4,5,6,7,8,9,10]}})",
       "at most 10000 points"},
  };
  for (const auto& c : cases) {
    const std::string path = temp_file("bad.json", c.text);
    auto s = frontend::load_sweep(path);
    INFO(c.text);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message().find(path) != std::string::npos);
    CHECK(s.error().message().find(c.needle) != std::string::npos);
  }
}

TEST_CASE("a sweep appends one row per point, resume runs only what is missing, even after a torn line", "[sweep]")
{
  auto s = frontend::load_sweep(temp_file("r.json", small_sweep()));
  REQUIRE(s.ok());
  const std::string out = temp_file("rows.jsonl", "");
  frontend::SweepOptions o;
  o.out = out;
  o.jobs = 2;
  auto sum = frontend::run_sweep(s.value(), o);
  REQUIRE(sum.ok());
  CHECK(sum->ran == 6);
  CHECK(sum->errors == 0);
  auto rows = lines_of(out);
  REQUIRE(rows.size() == 6);
  std::set<size_t> pts;
  for (size_t p : frontend::rows_in_file(out))
    pts.insert(p);
  CHECK(pts.size() == 6);
  for (const auto& r : rows)
    CHECK(r.find("\"bandwidth_MBps\"") != std::string::npos);
  // Kill-like damage: keep three rows and half of the fourth.
  {
    std::ofstream f(out, std::ios::trunc);
    for (int i = 0; i < 3; ++i)
      f << rows[size_t(i)] << "\n";
    f << rows[3].substr(0, rows[3].size() / 2);
  }
  o.resume = true;
  sum = frontend::run_sweep(s.value(), o);
  REQUIRE(sum.ok());
  CHECK(sum->skipped == 3);
  CHECK(sum->ran == 3);
  auto after = lines_of(out);
  REQUIRE(after.size() == 6);
  pts.clear();
  for (size_t p : frontend::rows_in_file(out))
    pts.insert(p);
  CHECK(pts.size() == 6);
  // Nothing left to do.
  sum = frontend::run_sweep(s.value(), o);
  REQUIRE(sum.ok());
  CHECK(sum->ran == 0);
  CHECK(lines_of(out).size() == 6);
}

TEST_CASE("the same sweep gives the same rows, shards split the points", "[sweep]")
{
  auto s = frontend::load_sweep(temp_file("d.json", small_sweep()));
  REQUIRE(s.ok());
  auto sorted_rows = [](const std::string& path) {
    auto v = lines_of(path);
    std::sort(v.begin(), v.end());
    return v;
  };
  frontend::SweepOptions a, b;
  a.out = temp_file("a.jsonl", "");
  a.jobs = 2;
  b.out = temp_file("b.jsonl", "");
  b.jobs = 1;
  REQUIRE(frontend::run_sweep(s.value(), a).ok());
  REQUIRE(frontend::run_sweep(s.value(), b).ok());
  CHECK(sorted_rows(a.out) == sorted_rows(b.out));
  std::vector<std::string> shards;
  for (int k = 0; k < 2; ++k) {
    frontend::SweepOptions o;
    o.out = temp_file("s" + std::to_string(k) + ".jsonl", "");
    o.shard = k;
    o.shards = 2;
    auto sum = frontend::run_sweep(s.value(), o);
    REQUIRE(sum.ok());
    CHECK(sum->total == 3);
    for (auto& l : lines_of(o.out))
      shards.push_back(l);
  }
  std::sort(shards.begin(), shards.end());
  CHECK(shards == sorted_rows(a.out));
}

TEST_CASE("a point that fails or runs out of time is an error row, not the end of the sweep", "[sweep]")
{
  auto s = frontend::load_sweep(temp_file("e.json", small_sweep(R"(, "point_timeout": 0.000001)")));
  REQUIRE(s.ok());
  frontend::SweepOptions o;
  o.out = temp_file("e.jsonl", "");
  auto sum = frontend::run_sweep(s.value(), o);
  REQUIRE(sum.ok());
  CHECK(sum->ran == 6);
  for (const auto& l : lines_of(o.out))
    if (l.find("\"error\"") != std::string::npos) CHECK(l.find("timed out") != std::string::npos);
}

TEST_CASE("a sweep killed with SIGKILL and resumed loses no row and writes none twice", "[sweep]")
{
  // Big enough to be killed half-way: 5 NICs x 6 transports x 4 sizes = 120 points.
  const std::string spec = temp_file("k.json", R"({"kind": "sweep", "name": "kill",
    "base": {"kind": "transfer", "hw": "connectx4-edr-ib", "transport": "grpc", "size": "64K", "steps": 3},
    "axes": {"hw": ["connectx3-40gbe-roce", "connectx3-56g-fdr-ib", "connectx4-edr-ib", "connectx5-100gbe-roce",
                    "connectx6-200g-hdr"],
             "transport": ["grpc", "verbs_v1", "verbs_v2", "gdr", "mpi", "ar_grpc"],
             "size": ["4K", "1M", "16M", "64M"]}})");
  const std::string out = temp_file("k.jsonl", "");
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::execl(TENSORPATH_BINARY, TENSORPATH_BINARY, "sweep", spec.c_str(), "--out", out.c_str(), "-j", "2", "-q",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Kill it once some rows are in (or after 2 s at most, scaled in slow builds).
  const auto t0 = std::chrono::steady_clock::now();
  while (frontend::rows_in_file(out).size() < 10 &&
         std::chrono::steady_clock::now() - t0 < std::chrono::duration<double>(tp::test::wall_seconds(2)))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  const size_t before = frontend::rows_in_file(out).size();
  auto s = frontend::load_sweep(spec);
  REQUIRE(s.ok());
  frontend::SweepOptions o;
  o.out = out;
  o.resume = true;
  o.jobs = 2;
  auto sum = frontend::run_sweep(s.value(), o);
  REQUIRE(sum.ok());
  CHECK(sum->skipped == before);
  const auto pts = frontend::rows_in_file(out);
  CHECK(pts.size() == 120);
  CHECK(std::set<size_t>(pts.begin(), pts.end()).size() == 120);
  CHECK(lines_of(out).size() == 120);
}

TEST_CASE("the MPI driver's rows equal a local sweep's (mpirun -np 3 on localhost)", "[sweep][mpi]")
{
  const std::string driver = (std::filesystem::path(TENSORPATH_BINARY).parent_path() / "tensorpath-mpi-sweep").string();
  if (!std::filesystem::exists(driver) || std::system("command -v mpirun > /dev/null 2>&1") != 0) {
    WARN("skipped: no MPI (mpirun or " + driver + " missing)");
    return;
  }
  const std::string spec = temp_file("mpi.json", small_sweep());
  const std::string out = temp_file("mpi.jsonl", "");
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1); // CI machines run as root
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  const std::string cmd = "mpirun --oversubscribe -np 3 " + std::string(TENSORPATH_BINARY) + " sweep " + spec +
                          " --out " + out + " --mpi > /dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  auto s = frontend::load_sweep(spec);
  REQUIRE(s.ok());
  frontend::SweepOptions o;
  o.out = temp_file("mpi-local.jsonl", "");
  REQUIRE(frontend::run_sweep(s.value(), o).ok());
  auto a = lines_of(out), b = lines_of(o.out);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  CHECK(a.size() == 6);
  CHECK(a == b);
}
