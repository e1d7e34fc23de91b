// The command line refuses a run beyond the budget before it starts anything (exit 2), with the estimate, the
// option or input that drives it and the variable that lets it run anyway: the unbounded runs of issue 13 (a
// million allreduce ranks, a SimGrid platform of 100,000 hosts, 100,000 tensors x 100 steps, a trace's group size of
// a million), in every command that runs jobs; runs within the budget still run, and TENSORPATH_TIME_LIMIT lets a
// refused one through.
#include "tests/run_command.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>

namespace fs = std::filesystem;

namespace {

using Run = tp::test::CommandRun;

Run run(const std::string& args, const std::string& env = "")
{
  return tp::test::run_cli(args, env);
}

bool has(const std::string& s, const std::string& part)
{
  return s.find(part) != std::string::npos;
}

fs::path temp_dir()
{
  const fs::path d = fs::temp_directory_path() / ("tp_budget_cli_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

} // namespace

TEST_CASE("allreduce --ranks 1048576 is refused at once with the estimate naming --ranks", "[quick]")
{
  Run r = run("allreduce --ranks 1048576 --mode all");
  INFO(r.out);
  CHECK(r.status == 2);
  CHECK(has(r.out, "an estimated"));
  CHECK(has(r.out, "driven by --ranks 1048576"));
  CHECK(has(r.out, "TENSORPATH_TIME_LIMIT="));
  CHECK_FALSE(has(r.out, "mode            time[ms]")); // nothing ran
}

TEST_CASE("a SimGrid platform of 100,000 hosts is refused at once, naming the cluster's hosts", "[quick]")
{
  const fs::path d = temp_dir();
  std::ofstream(d / "net.xml") << "<?xml version='1.0'?>\n<platform version=\"4.1\">\n<cluster id=\"c\" "
                                  "prefix=\"node\" suffix=\"\" radical=\"0-99999\" speed=\"1Gf\" bw=\"100Gbps\" "
                                  "lat=\"0.6us\" bb_bw=\"1600Gbps\" bb_lat=\"0.09us\"/>\n</platform>\n";
  std::ofstream(d / "big.json") << R"({"kind": "cluster", "name": "big", "description": "100,000 hosts",
    "hosts": [{"host": "hkust-k40m-cx3", "prefix": "node"}], "switch": "mellanox-sb7800", "network": "net.xml"})";
  for (const char* cmd : {"transfer --transport verbs_v2", "allreduce --ranks 8 --every-host"}) {
    Run r = run(std::string(cmd) + " --hw " + (d / "big.json").string());
    INFO(cmd << "\n" << r.out);
    CHECK(r.status == 2);
    CHECK(has(r.out, "hosts in the cluster = 100000"));
  }
  // The analytical ring of 8 ranks on these identical hosts is read from three of them: it runs.
  Run a = run("allreduce --ranks 8 --hw " + (d / "big.json").string());
  INFO(a.out);
  CHECK(a.status == 0);
  CHECK(has(a.out, "on routes read from 3 of the 8 identical hosts"));
  // train takes a worker per host by default: the workers drive it.
  Run t = run("train --model vgg16 --hw " + (d / "big.json").string());
  INFO(t.out);
  CHECK(t.status == 2);
  CHECK(has(t.out, "driven by workers = 100000"));
  fs::remove_all(d);
}

TEST_CASE("transfer --tensors 100000 --steps 100 is refused at once, naming both", "[quick]")
{
  Run r = run("transfer --transport grpc --tensors 100000 --steps 100");
  INFO(r.out);
  CHECK(r.status == 2);
  CHECK(has(r.out, "tensors per step = 100000, steps = 100"));
}

TEST_CASE("train with a thousand steps of a large job is refused at once, naming workers and steps", "[quick]")
{
  Run r = run("train --model resnet50 --hw hkust-k40m-cx3 --workers 16 --transport verbs_v2 --steps 1000");
  INFO(r.out);
  CHECK(r.status == 2);
  CHECK(has(r.out, "workers = 16 x 4 GPUs, steps = 1000"));
}

TEST_CASE("replay of a trace with a group size of a million is refused at once, naming the trace's group size",
          "[quick]")
{
  const fs::path d = temp_dir();
  std::ifstream in(std::string(TENSORPATH_SOURCE_DIR) + "/tests/traces/fixtures/kineto.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = text.find("\"Group size\": 4,");
  REQUIRE(at != std::string::npos);
  text.replace(at, 16, "\"Group size\": 1000000,");
  std::ofstream(d / "big.json") << text;
  // Rings of the recorded group simulated on the fabric (the NCCL model, a closed form, has no such cost).
  Run r = run("replay " + (d / "big.json").string() + " --hw connectx4-edr-ib --collectives ring");
  INFO(r.out);
  CHECK(r.status == 2);
  CHECK(has(r.out, "the group size of allreduce \"nccl:all_reduce\" in the trace (--ranks overrides): 1000000"));
  // --ranks overrides the trace, and a small group runs.
  Run ok = run("replay " + (d / "big.json").string() + " --hw connectx4-edr-ib --ranks 4");
  INFO(ok.out);
  CHECK(ok.status == 0);
  fs::remove_all(d);
}

TEST_CASE("emulate, perftest and pcie-copy refuse runs beyond the budget too", "[quick]")
{
  Run e = run("emulate --transport grpc --size 1K --steps 1000", "TENSORPATH_TIME_LIMIT=500ms");
  INFO(e.out);
  CHECK(e.status == 2);
  CHECK(has(e.out, "emulated transfer (grpc)"));
  CHECK(has(e.out, "driven by steps = 1000"));
  Run p = run("perftest --iters 100000000");
  INFO(p.out);
  CHECK(p.status == 2);
  CHECK(has(p.out, "iterations = 100,000,000"));
  Run c = run("pcie-copy --iters 1000000", "TENSORPATH_TIME_LIMIT=1s");
  INFO(c.out);
  CHECK(c.status == 2);
  CHECK(has(c.out, "iterations = 1,000,000"));
}

TEST_CASE("scenario jobs and sweep points are refused with their estimate, as failed jobs and error rows", "[quick]")
{
  Run s = run("run", "TENSORPATH_TIME_LIMIT=1ms");
  INFO(s.out);
  CHECK(s.status == 1);
  CHECK(has(s.out, "(TENSORPATH_TIME_LIMIT)"));
  CHECK(has(s.out, "jobs, "));
  const fs::path d = temp_dir();
  std::ofstream(d / "sweep.json") << R"({"kind": "sweep", "name": "big", "base": {"kind": "transfer",
    "hw": "connectx4-edr-ib", "transport": "grpc", "size": "4K", "steps": 100}, "axes": {"tensors": [1, 100000]},
    "point_timeout": 60})";
  Run w = run("sweep " + (d / "sweep.json").string() + " --out " + (d / "rows.jsonl").string());
  INFO(w.out);
  std::ifstream rows(d / "rows.jsonl");
  std::string all((std::istreambuf_iterator<char>(rows)), std::istreambuf_iterator<char>());
  INFO(all);
  CHECK(has(all, "(the sweep's point_timeout)")); // the 100,000-tensor point: refused against its own timeout
  CHECK(has(all, "\"metrics\""));                 // the 1-tensor point ran
  fs::remove_all(d);
}

TEST_CASE("a run within the budget runs, TENSORPATH_TIME_LIMIT moves the budget both ways", "[quick]")
{
  CHECK(run("allreduce --ranks 8").status == 0);
  Run low = run("allreduce --ranks 8", "TENSORPATH_TIME_LIMIT=1ms");
  INFO(low.out);
  CHECK(low.status == 2);
  CHECK(has(low.out, "(TENSORPATH_TIME_LIMIT)"));
  CHECK(run("transfer --transport grpc --tensors 2000 --steps 1", "TENSORPATH_TIME_LIMIT=100ms").status == 2);
  CHECK(run("transfer --transport grpc --tensors 2000 --steps 1", "TENSORPATH_TIME_LIMIT=1h").status == 0);
  Run bad = run("allreduce --ranks 8", "TENSORPATH_TIME_LIMIT=soon");
  CHECK(bad.status == 2);
  CHECK(has(bad.out, "TENSORPATH_TIME_LIMIT"));
}
