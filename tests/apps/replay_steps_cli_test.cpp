// `tensorpath replay` per step and per job (issue 18, deliverable 2): the per-step table and its summary, partial
// steps named and left out, the rank count from the trace and the options that override it, the warning that asks
// for --ranks, and several rank files of one job (files, or their directory) replayed together or refused.
#include "tests/run_command.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace fs = std::filesystem;

namespace {

using Run = tp::test::CommandRun;

Run run(const std::string& args)
{
  return tp::test::run_cli(args);
}

bool has(const std::string& s, const std::string& part)
{
  return s.find(part) != std::string::npos;
}

std::string fixture(const std::string& name)
{
  std::string path = TENSORPATH_SOURCE_DIR; // appended, not added: GCC 12 warns falsely on the sum (-Warray-bounds)
  return path.append("/tests/traces/fixtures/").append(name);
}

fs::path temp_dir(const std::string& tag)
{
  const fs::path d = fs::temp_directory_path() / ("tp_replay_steps_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

/// tests/traces/fixtures/kineto.json as rank `rank` of `world`.
std::string kineto_rank(int rank, int world)
{
  std::ifstream in(fixture("kineto.json"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string from = R"("rank": 0, "world_size": 4)";
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), R"("rank": )" + std::to_string(rank) + R"(, "world_size": )" + std::to_string(world));
  return text;
}

} // namespace

TEST_CASE("replay of the real Kineto trace reports each ProfilerStep recorded and replayed, and their median",
          "[quick]")
{
  Run r = run("replay " + fixture("real/hta_sampled_rank-0.json.gz") + " --hw connectx4-edr-ib");
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "job: 128 rank(s) (from distributedInfo.world_size); assumed one rank per node"));
  CHECK(has(r.out, "2 step(s) with events (ProfilerStep# annotations"));
  CHECK(has(r.out, "ProfilerStep#551"));
  CHECK(has(r.out, "ProfilerStep#552"));
  CHECK(has(r.out, "over 2 whole step(s): recorded median 607.801 ms")); // (600.030 + 615.572) / 2, by hand
  CHECK(has(r.out, "replayed median"));
  CHECK_FALSE(has(r.out, "partial"));
}

TEST_CASE(
    "replay names a partial first cycle and leaves it out of the summary and without a rank count asks for --ranks",
    "[quick]")
{
  const fs::path d = temp_dir("cycles");
  std::ofstream(d / "hvd.json") << R"([
{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "grad"}},
{"name": "ALLREDUCE", "ph": "B", "ts": 500, "pid": 1},
{"ph": "E", "ts": 700, "pid": 1, "args": {"dtype": "float32", "shape": "[256]"}},
{"name": "CYCLE_START", "ph": "i", "ts": 1000, "s": "g"},
{"name": "ALLREDUCE", "ph": "B", "ts": 1200, "pid": 1},
{"ph": "E", "ts": 1500, "pid": 1, "args": {"dtype": "float32", "shape": "[256]"}},
{"name": "CYCLE_START", "ph": "i", "ts": 2000, "s": "g"},
{"name": "ALLREDUCE", "ph": "B", "ts": 2100, "pid": 1},
{"ph": "E", "ts": 2500, "pid": 1, "args": {"dtype": "float32", "shape": "[256]"}},
)";
  Run r = run("replay " + (d / "hvd.json").string());
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "ranks not known (the trace does not say; --ranks N)"));
  CHECK(has(r.out, "the trace does not say how many ranks the job had: pass --ranks N"));
  CHECK(has(r.out, "before cycle 1"));
  CHECK(has(r.out, "partial: cut by the trace's start"));
  CHECK(has(r.out, "over 1 whole step(s): recorded median 0.300 ms"));
  CHECK(has(r.out, "(partial steps left out: before cycle 1, cycle 2)"));
  Run o = run("replay " + (d / "hvd.json").string() + " --ranks 4 --ranks-per-node 2");
  INFO(o.out);
  REQUIRE(o.status == 0);
  CHECK(has(o.out, "job: 4 rank(s) (--ranks); 2 per node (--ranks-per-node)"));
  CHECK_FALSE(has(o.out, "pass --ranks"));
  fs::remove_all(d);
}

TEST_CASE("the option --ranks overrides the rank count the trace gives", "[quick]")
{
  Run r = run("replay " + fixture("kineto.json"));
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "job: 4 rank(s) (from distributedInfo.world_size)"));
  r = run("replay " + fixture("kineto.json") + " --ranks 16");
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "job: 16 rank(s) (--ranks)"));
  r = run("replay " + fixture("kineto.json") + " --ranks 0");
  CHECK(r.status == 2);
}

TEST_CASE("two rank files of one job replay together, as files or as their directory", "[quick]")
{
  const fs::path d = temp_dir("ranks");
  std::ofstream(d / "rank0.json") << kineto_rank(0, 2);
  std::ofstream(d / "rank1.json") << kineto_rank(1, 2);
  for (const std::string& args : {(d / "rank0.json").string() + " " + (d / "rank1.json").string(), d.string()}) {
    Run r = run("replay " + args + " --hw connectx4-edr-ib");
    INFO(r.out);
    REQUIRE(r.status == 0);
    CHECK(has(r.out, "job: 2 rank(s) (from the files' distributedInfo.world_size)"));
    CHECK(has(r.out, "; 2 rank files"));
    CHECK(has(r.out, "rank 0: cuda:0"));
    CHECK(has(r.out, "rank 1: cuda:0"));
    CHECK(has(r.out, "whole trace: recorded"));
  }
  fs::remove_all(d);
}

TEST_CASE("a --ranks below the ranks that the rank files name is refused", "[quick]")
{
  // Files of ranks 0 and 3 of one 4-rank job: --ranks 3 cannot hold rank 3, nor --ranks 1 two files.
  const fs::path d = temp_dir("fewer");
  std::ofstream(d / "rank0.json") << kineto_rank(0, 4);
  std::ofstream(d / "rank3.json") << kineto_rank(3, 4);
  for (const char* ranks : {"3", "1"}) {
    Run r = run("replay " + d.string() + " --ranks " + ranks);
    INFO(r.out);
    CHECK(r.status == 2);
    CHECK(has(r.out,
              "--ranks: expected at least 4 (the 2 rank files given name ranks up to 3), got " + std::string(ranks)));
  }
  Run r = run("replay " + d.string() + " --ranks 4");
  CHECK(r.status == 0);
  fs::remove_all(d);
}

TEST_CASE("rank files that disagree on the world size are refused, naming the file", "[quick]")
{
  const fs::path d = temp_dir("disagree");
  std::ofstream(d / "rank0.json") << kineto_rank(0, 2);
  std::ofstream(d / "rank1.json") << kineto_rank(1, 8);
  Run r = run("replay " + (d / "rank0.json").string() + " " + (d / "rank1.json").string());
  INFO(r.out);
  CHECK(r.status == 2);
  CHECK(has(r.out, (d / "rank1.json").string()));
  CHECK(has(r.out, "the world size of the job's other files (2, in " + (d / "rank0.json").string() + ")"));
  std::ofstream(d / "rank1.json") << kineto_rank(0, 2); // the same rank twice
  r = run("replay " + d.string());
  CHECK(r.status == 2);
  CHECK(has(r.out, "is rank 0"));
  fs::remove_all(d);
}
