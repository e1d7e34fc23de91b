// The `tensorpath` executable end to end: help for every command, bad input exits 2 with a clear message,
// validate's --json has the documented keys.
#include "tests/run_command.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "apps/lib/training_report.hpp"

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <sys/wait.h>

namespace fs = std::filesystem;

namespace {

using Run = tp::test::CommandRun;

Run run(const std::string& args)
{
  return tp::test::run_cli(args);
}

} // namespace

TEST_CASE("Every subcommand has --help", "[quick]")
{
  for (const char* c : {"run", "perftest", "pcie-copy", "transfer", "train", "allreduce", "emulate", "sweep", "plan",
                        "validate", "profiles", "incast", "roce"}) {
    Run r = run(std::string(c) + " --help");
    INFO(c);
    CHECK(r.status == 0);
    CHECK(r.out.find("Usage: tensorpath " + std::string(c)) != std::string::npos);
  }
  CHECK(run("--help").out.find("perftest") != std::string::npos);
  CHECK(run("no-such-command").status == 2);
}

TEST_CASE("The version line names the malloc in use, the one the build chose", "[quick]")
{
  // A build that links mimalloc but runs on the system's malloc (a linker dropping the unreferenced library) would be
  // as correct and slower: the binary finds at run time which malloc served an allocation.
  Run r = run("--version");
  CHECK(r.status == 0);
  CHECK(r.out.find(std::string("malloc: ").append(TENSORPATH_ALLOCATOR).append(";")) != std::string::npos);
}

TEST_CASE("Bad arguments and bad profiles exit 2 with a message naming the problem", "[quick]")
{
  Run r1 = run("perftest --op atomic");
  CHECK(r1.status == 2);
  CHECK(r1.out.find("--op") != std::string::npos);
  Run r2 = run("perftest --hw no-such-nic");
  CHECK(r2.status == 2);
  CHECK(r2.out.find("no-such-nic") != std::string::npos);
  Run r3 = run("perftest --size 12Q");
  CHECK(r3.status == 2);
  Run r4 = run("run /nonexistent.json");
  CHECK(r4.status == 2);
  CHECK(r4.out.find("/nonexistent.json") != std::string::npos);
  // A transport's flag without a run of that transport would change nothing.
  Run r5 = run("train --model alexnet --transport grpc,gdr --ar-chunk-by-chunk --steps 2");
  CHECK(r5.status == 2);
  CHECK(r5.out.find("--ar-chunk-by-chunk: expected a run of ar_grpc") != std::string::npos);
  CHECK(r5.out.find("--transport grpc,gdr") != std::string::npos);
  // transfer takes the transports' switches too, under the same rule.
  Run r7 = run("transfer --transport grpc --ar-chunk-by-chunk --size 4K --steps 2");
  CHECK(r7.status == 2);
  CHECK(r7.out.find("tensorpath transfer --ar-chunk-by-chunk: expected a run of ar_grpc") != std::string::npos);
  CHECK(run("transfer --transport ar_grpc --ar-chunk-by-chunk --size 1M --steps 2").status == 0);
  // ... and reaches the job: its estimate (printed when refused) counts chunk by chunk, not in trains.
  const std::string big = "transfer --transport ar_grpc --size 1G --steps 50 --tensors 4"; // its bytes drive it
  const Run trains_estimate = tp::test::run_cli(big, "TENSORPATH_TIME_LIMIT=1ms");
  const Run chunk_estimate = tp::test::run_cli(big + " --ar-chunk-by-chunk", "TENSORPATH_TIME_LIMIT=1ms");
  CHECK(trains_estimate.status == 2);
  CHECK(trains_estimate.out.find("in chunk trains") != std::string::npos);
  CHECK(chunk_estimate.status == 2);
  CHECK(chunk_estimate.out.find("in chunk trains") == std::string::npos);
  // A retired flag says what replaced it.
  Run r6 = run("train --model alexnet --transport ar_grpc --ar-chunk-trains --steps 2");
  CHECK(r6.status == 2);
  CHECK(r6.out.find("--ar-chunk-trains was removed") != std::string::npos);
  CHECK(r6.out.find("--ar-chunk-by-chunk") != std::string::npos);
}

TEST_CASE("perftest prints a row per size and validate --json has the documented keys", "[quick]")
{
  Run p = run("perftest --op write --size 4K -n 100 --hw connectx3-40gbe-roce");
  REQUIRE(p.status == 0);
  CHECK(p.out.find("RDMA_Write BW Test") != std::string::npos);
  CHECK(p.out.find(" 4096 ") != std::string::npos);
  Run v = run(std::string("validate ") + TENSORPATH_SOURCE_DIR + "/validation/cases/cx3_roce_send_bw.json --json -");
  REQUIRE(v.status == 0);
  auto j = nlohmann::json::parse(v.out);
  REQUIRE(j.is_array());
  REQUIRE(j.size() == 1);
  for (const char* k : {"case", "expected", "got", "tolerance", "pass"})
    CHECK(j[0].contains(k));
  CHECK(j[0]["pass"].get<bool>());
}

TEST_CASE("validate: the NUMA-local V3 cases and the CX-3 case pass", "[quick]")
{
  Run v = run("validate --case numa-local");
  INFO(v.out);
  CHECK(v.status == 0);
  CHECK(v.out.find("2 of 2 cases pass") != std::string::npos);
}

TEST_CASE("validate exits 1 and prints the case's note when a case misses", "[quick]")
{
  const std::string path = "/tmp/tp_cli_miss_" + std::to_string(::getpid()) + ".json";
  FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f);
  std::fputs(R"({"cases": [{"case": "impossible", "measure": "bw_average_gbps", "expected": 1.0, "tolerance": 0.05,
    "source": "a deliberately wrong expectation", "note": "this case cannot pass",
    "setup": {"kind": "perftest", "hw": "connectx3-40gbe-roce", "op": "write", "size": 65536, "iterations": 100}}]})",
             f);
  std::fclose(f);
  Run v = run("validate " + path);
  std::remove(path.c_str());
  CHECK(v.status == 1);
  CHECK(v.out.find("FAIL") != std::string::npos);
  CHECK(v.out.find("this case cannot pass") != std::string::npos);
}

TEST_CASE("A known miss marked expected_to_fail is reported XFAIL and does not fail the run", "[quick]")
{
  const std::string path = "/tmp/tp_cli_xfail_" + std::to_string(::getpid()) + ".json";
  FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f);
  std::fputs(R"({"cases": [{"case": "known-miss", "measure": "bw_average_gbps", "expected": 1.0, "tolerance": 0.05,
    "source": "a deliberately wrong expectation", "expected_to_fail": "the model cannot meet this",
    "setup": {"kind": "perftest", "hw": "connectx3-40gbe-roce", "op": "write", "size": 65536, "iterations": 100}}]})",
             f);
  std::fclose(f);
  Run v = run("validate " + path + " --json -");
  std::remove(path.c_str());
  CHECK(v.status == 0);
  auto j = nlohmann::json::parse(v.out);
  CHECK_FALSE(j.at(0).at("pass").get<bool>());
  CHECK(j.at(0).at("expected_to_fail").get<std::string>() == "the model cannot meet this");
}

TEST_CASE("validate prints each case's source, quote and assumptions with its result", "[quick]")
{
  const std::string path = "/tmp/tp_cli_assume_" + std::to_string(::getpid()) + ".json";
  FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f);
  std::fputs(R"({"cases": [{"case": "with-premises", "measure": "bw_average_gbps", "expected": 1.0, "tolerance": 0.05,
    "source": "source-words-here", "quote": "quoted-sentence", "known": ["stated-setup"],
    "assumptions": ["assumed-item-one", "assumed-item-two"], "expected_to_fail": "not compared here",
    "setup": {"kind": "perftest", "hw": "connectx3-40gbe-roce", "op": "write", "size": 65536, "iterations": 10}}]})",
             f);
  std::fclose(f);
  Run v = run("validate " + path);
  Run js = run("validate " + path + " --json -");
  std::remove(path.c_str());
  CHECK(v.status == 0);
  for (const char* w : {"source-words-here", "quoted-sentence", "stated-setup", "ASSUMED: assumed-item-one",
                        "ASSUMED: assumed-item-two"})
    CHECK(v.out.find(w) != std::string::npos);
  auto j = nlohmann::json::parse(js.out);
  CHECK(j.at(0).at("assumptions").size() == 2);
  CHECK(j.at(0).at("quote").get<std::string>() == "quoted-sentence");
  CHECK(j.at(0).at("check").get<std::string>() == "within");
}

TEST_CASE("validate --case prefers the exact name over a part of one and --timeout is checked", "[quick]")
{
  const std::string path = "/tmp/tp_cli_cases_" + std::to_string(::getpid()) + ".json";
  FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f);
  std::fputs(R"({"group": "G", "cases": [
    {"case": "write", "measure": "bw_average_gbps", "expected": 1.0, "tolerance": 0.5, "source": "test",
     "expected_to_fail": "not compared here",
     "setup": {"kind": "perftest", "hw": "connectx3-40gbe-roce", "op": "write", "size": 65536, "iterations": 10}},
    {"case": "write-large", "measure": "bw_average_gbps", "expected": 1.0, "tolerance": 0.5, "source": "test",
     "expected_to_fail": "not compared here",
     "setup": {"kind": "perftest", "hw": "connectx3-40gbe-roce", "op": "write", "size": 1048576, "iterations": 10}}]})",
             f);
  std::fclose(f);
  auto names = [](const std::string& out) {
    std::vector<std::string> v;
    for (const auto& row : nlohmann::json::parse(out))
      v.push_back(row.at("case").get<std::string>());
    return v;
  };
  Run exact = run("validate " + path + " --case G/write --json -");
  Run part = run("validate " + path + " --case write --json -");
  Run bad = run("validate " + path + " --case G/write --timeout 0");
  std::remove(path.c_str());
  INFO(exact.out << part.out << bad.out);
  REQUIRE(exact.status == 0);
  CHECK(names(exact.out) == std::vector<std::string>{"G/write"});
  REQUIRE(part.status == 0);
  CHECK(names(part.out) == std::vector<std::string>{"G/write", "G/write-large"});
  CHECK(bad.status == 2);
  CHECK(bad.out.find("timeout") != std::string::npos);
}

// Every shipped case runs as its own ctest entry (`validation:GROUP/NAME`, tests/CMakeLists.txt); this checks that
// `validate` without a file finds validation/cases/ and that --case picks one case out of all of them.
TEST_CASE("validate without a file runs the shipped cases and --case selects one", "[quick]")
{
  Run v = run("validate --case NIC/cx3-40gbe-roce-send-bw-64k --json -");
  INFO(v.out);
  REQUIRE(v.status == 0);
  auto j = nlohmann::json::parse(v.out);
  REQUIRE(j.size() == 1);
  CHECK(j.at(0).at("case").get<std::string>() == "NIC/cx3-40gbe-roce-send-bw-64k");
  CHECK(j.at(0).at("pass").get<bool>());
}

TEST_CASE("train prints step time per transport and writes a Chrome trace that parses", "[quick]")
{
  const std::string trace = "/tmp/tensorpath_cli_trace_test_" + std::to_string(::getpid()) + ".json";
  std::remove(trace.c_str());
  Run r = run("train --model resnet50 --hw hkust-4node --transport grpc,gdr --steps 2 --trace " + trace);
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("speed-up over grpc: gdr") != std::string::npos);
  CHECK(r.out.find("1-GPU reference") != std::string::npos);
  std::ifstream in(trace);
  REQUIRE(in.good());
  auto j = nlohmann::json::parse(in);
  REQUIRE(j.at("traceEvents").is_array());
  size_t gpu_tracks = 0;
  for (const auto& e : j["traceEvents"])
    if (e.at("ph") == "M" && e.at("name") == "thread_name" &&
        e.at("args").at("name").get<std::string>().find("GPU:") != std::string::npos)
      ++gpu_tracks;
  CHECK(gpu_tracks == 16);
}

TEST_CASE("run the HKUST VGG16 scenario: step times per transport and their ratios", "[quick]")
{
  const std::string trace = "/tmp/tensorpath_cli_run_trace_test_" + std::to_string(::getpid()) + ".json";
  std::remove(trace.c_str());
  Run r = run(std::string("run ") + TENSORPATH_SOURCE_DIR + "/scenarios/hkust-vgg16.json --trace " + trace);
  std::ifstream in(trace);
  REQUIRE(in.good());
  CHECK(nlohmann::json::parse(in).at("traceEvents").size() > 100);
  INFO(r.out);
  REQUIRE(r.status == 0);
  for (const char* t : {"grpc ", "verbs_v1 ", "verbs_v2 ", "gdr "})
    CHECK(r.out.find(std::string("\n") + t) != std::string::npos);
  CHECK(r.out.find("speed-up over grpc: verbs_v1") != std::string::npos);
}

TEST_CASE("train rejects an unknown model naming the choices", "[quick]")
{
  Run r = run("train --model vgg17");
  CHECK(r.status == 2);
  CHECK(r.out.find("vgg16") != std::string::npos);
}

TEST_CASE("tensorpath run without a file runs the built-in default: the HKUST VGG16 comparison first")
{
  const auto r = run("run");
  REQUIRE(r.status == 0);
  const auto vgg = r.out.find("[1] VGG16 training");
  REQUIRE(vgg != std::string::npos);
  // The transport table comes before any microbenchmark.
  const auto table = r.out.find("speed-up over grpc");
  const auto perftest = r.out.find("RDMA_Write BW Test");
  REQUIRE(table != std::string::npos);
  REQUIRE(perftest != std::string::npos);
  CHECK(table < perftest);
  CHECK(r.out.find("0 failed") != std::string::npos);
}

TEST_CASE("tensorpath replay summarizes a trace and re-simulates its communication on another fabric")
{
  const std::string fx = std::string(TENSORPATH_SOURCE_DIR) + "/tests/traces/fixtures/";
  auto r = run("replay " + fx + "tf_timeline.json");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("tf_timeline") != std::string::npos);
  CHECK(r.out.find("2 transfer(s)") != std::string::npos);
  r = run("replay " + fx + "chakra.json --hw connectx4-edr-ib --ranks 4");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("re-simulated on connectx4-edr-ib") != std::string::npos);
  CHECK(r.out.find("send_activations") != std::string::npos);
  CHECK(r.out.find("nccl:all_reduce") != std::string::npos);
  CHECK(r.out.find("whole trace: recorded") != std::string::npos);
  r = run("replay " + fx + "../../../README.md");
  CHECK(r.status == 2);
  CHECK(r.out.find("README.md") != std::string::npos);
}

TEST_CASE("the same scenario and the same replay give byte-identical results (determinism)")
{
  // A training scenario (every transport, critical paths), a microbenchmark scenario and a seeded packet-loss
  // scenario (random draws: losses on RC and TCP, resends, a retry part of the critical path), each run twice.
  const std::string lossy =
      (fs::temp_directory_path() / ("tensorpath-determinism-loss-" + std::to_string(::getpid()) + ".json")).string();
  {
    std::ofstream f(lossy);
    f << R"({"kind": "training", "name": "loss", "hw": "hkust-4node", "jobs": [{"kind": "training",
        "model": "resnet50", "workers": 2, "gpus_per_worker": 1, "ps": 1, "steps": 2, "reference": false,
        "transports": ["grpc", "verbs_v2"], "seed": 3,
        "faults": [{"type": "packet_loss", "host": "node1", "probability": 1e-3}]}]})";
  }
  for (const std::string& sc : {std::string(TENSORPATH_SOURCE_DIR) + "/scenarios/hkust-vgg16.json",
                                std::string(TENSORPATH_SOURCE_DIR) + "/scenarios/examples/gdr.json", lossy}) {
    const std::string cmd = "run " + sc + " --json";
    const auto a = run(cmd), b = run(cmd);
    INFO(sc << "\n" << a.out.substr(0, 2000));
    REQUIRE(a.status == 0);
    CHECK(a.out == b.out);
    if (sc == lossy) CHECK(a.out.find("\"rc_retransmissions.verbs_v2\"") != std::string::npos);
  }
  fs::remove(lossy);
  const std::string replay = "replay " + std::string(TENSORPATH_SOURCE_DIR) +
                             "/tests/traces/fixtures/tf_timeline.json --hw connectx3-40gbe-roce";
  const auto a = run(replay), b = run(replay);
  REQUIRE(a.status == 0);
  CHECK(a.out == b.out);
}

TEST_CASE("a fault scenario whose transports failed is a failed job: exit 1, and the failed runs are listed")
{
  // scenarios/faults/qp-error.json: every RDMA transport fails at the fault, gRPC is not affected. It used to print
  // "1 jobs, 0 failed" and exit 0.
  const auto r = run("run " + std::string(TENSORPATH_SOURCE_DIR) + "/scenarios/faults/qp-error.json --json");
  INFO(r.out);
  CHECK(r.status == 1);
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  const auto& job = j.at("jobs").at(0);
  REQUIRE(job.contains("failed"));
  std::string failed;
  for (const auto& f : job.at("failed"))
    failed += "\n" + f.get<std::string>();
  CHECK(job.at("failed").size() == 5);
  for (const char* t : {"\nverbs_v1:", "\nverbs_v2:", "\ngdr:", "\nmpi:", "\nar_grpc:"})
    CHECK(failed.find(t) != std::string::npos);
  CHECK(failed.find("\ngrpc:") == std::string::npos);
  CHECK(job.at("metrics").at("failed.verbs_v2") == 1.0); // the metrics stay (a sweep keeps them as a row)
  CHECK(job.at("metrics").at("failed.grpc") == 0.0);
  // The summary line counts it.
  const std::string one =
      (fs::temp_directory_path() / ("tensorpath-qp-error-one-" + std::to_string(::getpid()) + ".json")).string();
  std::ofstream(one) << R"({"kind": "training", "name": "qp", "hw": "hkust-4node", "jobs": [{"kind": "training",
      "model": "resnet50", "workers": 2, "gpus_per_worker": 1, "ps": 1, "steps": 3, "reference": false,
      "transports": ["verbs_v1"], "faults": [{"type": "qp_error", "process": "worker1", "step": 2, "at": "30 ms"}]}]})";
  const auto t = run("run " + one);
  fs::remove(one);
  INFO(t.out);
  CHECK(t.status == 1);
  CHECK(t.out.find("1 of 1 transport run(s) FAILED") != std::string::npos);
  CHECK(t.out.find("verbs_v1: failed in step 2") != std::string::npos);
  CHECK(t.out.find("1 jobs, 1 failed.") != std::string::npos);
}

TEST_CASE("a training run that failed or stalled under faults is not ok (train exits 1)", "[quick]")
{
  tp::frontend::TrainingReport rep;
  rep.runs.resize(3);
  rep.runs[0].transport = "grpc";
  rep.runs[1].transport = "verbs_v2";
  rep.runs[2].transport = "gdr";
  CHECK(rep.all_ok());
  tp::sim::TrainingFailure stalled;
  stalled.step = 2;
  stalled.stalled = true;
  rep.runs[2].result.failure = stalled;
  CHECK_FALSE(rep.all_ok());
  tp::sim::TrainingFailure failed;
  failed.step = 3;
  rep.runs[1].result.failure = failed;
  rep.runs[1].result.step_seconds = {0.1, 0.1};
  const auto f = tp::frontend::failed_runs(rep);
  REQUIRE(f.size() == 2);
  CHECK(f[0] == "verbs_v2: failed in step 3 (2 step(s) completed)");
  CHECK(f[1] == "gdr: stalled in step 2 (0 step(s) completed)");
}

TEST_CASE("a fault after the job's work changes nothing: same step times as without it, never fired, exit 0")
{
  // Issue 13: a link_down or a QP error 5 s into a 0.63 s step stretched the step to 2965 ms or failed it.
  const std::string base = R"({"kind": "training", "name": "late", "hw": "hkust-4node", "jobs": [{"kind": "training",
      "model": "resnet50", "workers": 2, "gpus_per_worker": 1, "ps": 1, "steps": 3, "reference": false,
      "transports": ["verbs_v2"])";
  const std::string none =
      (fs::temp_directory_path() / ("tensorpath-late-none-" + std::to_string(::getpid()) + ".json")).string();
  const std::string late =
      (fs::temp_directory_path() / ("tensorpath-late-faults-" + std::to_string(::getpid()) + ".json")).string();
  std::ofstream(none) << base << "}]}";
  std::ofstream(late) << base << R"(, "faults": [
      {"type": "link_down", "host": "node1", "step": 2, "at": "5 s", "duration": "300 ms"},
      {"type": "qp_error", "process": "worker1", "step": 2, "at": "5 s"}]}]})";
  const auto a = run("run " + none + " --json"), b = run("run " + late + " --json");
  fs::remove(none);
  fs::remove(late);
  INFO(a.out << "\n" << b.out);
  CHECK(a.status == 0);
  CHECK(b.status == 0);
  const auto ja = nlohmann::json::parse(a.out.substr(a.out.find('{'))).at("jobs").at(0);
  const auto jb = nlohmann::json::parse(b.out.substr(b.out.find('{'))).at("jobs").at(0);
  CHECK_FALSE(jb.contains("failed"));
  CHECK(jb.at("metrics").at("failed") == 0.0);
  for (const char* m : {"step_ms", "network_ms", "path_compute_ms", "path_waiting_ms", "images_per_second"})
    CHECK(jb.at("metrics").at(m) == ja.at("metrics").at(m));
  CHECK(jb.at("metrics").at("packets_lost") == 0.0);
}

TEST_CASE("Every subcommand takes --models-dir, which like TENSORPATH_MODELS_DIR finds one's own profiles", "[quick]")
{
  // every subcommand takes it (and checks it) before doing anything else
  for (const char* c : {"run", "perftest", "pcie-copy", "transfer", "train", "allreduce", "emulate", "sweep", "plan",
                        "replay", "validate", "profiles"}) {
    INFO(c);
    Run help = run(std::string(c) + " --help");
    CHECK(help.out.find("--models-dir DIR") != std::string::npos);
    Run r = run(std::string(c) + " --models-dir /no/such/models-dir");
    CHECK(r.status == 2);
    CHECK(r.out.find("/no/such/models-dir: --models-dir: expected a directory") != std::string::npos);
  }
  const fs::path dir = fs::temp_directory_path() / ("tp_cli_models_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "a" / "switch");
  fs::create_directories(dir / "b");
  std::ofstream(dir / "a" / "switch" / "lab-switch.json")
      << R"({"kind": "switch", "latency": {"value": 100, "unit": "ns", "source": "a test"}})";
  std::ofstream(dir / "b" / "flat-switch.json") // a flat directory: the file says its kind
      << R"({"kind": "switch", "latency": {"value": 200, "unit": "ns", "source": "a test"}})";
  Run opt =
      run("profiles switch lab-switch --models-dir " + (dir / "a").string() + " --models-dir " + (dir / "b").string());
  CHECK(opt.status == 0);
  CHECK(opt.out.find((dir / "a" / "switch" / "lab-switch.json").string()) != std::string::npos);
  Run flat =
      run("profiles switch flat-switch --models-dir " + (dir / "a").string() + " --models-dir " + (dir / "b").string());
  CHECK(flat.out.find((dir / "b" / "flat-switch.json").string()) != std::string::npos);
  Run listed = run("profiles switch --models-dir " + (dir / "a").string() + " --models-dir " + (dir / "b").string());
  CHECK(listed.out.find("lab-switch") != std::string::npos);
  CHECK(listed.out.find("flat-switch") != std::string::npos);
  CHECK(listed.out.find("mellanox-sb7800") != std::string::npos); // the built-in ones still listed
  Run by_env = run("profiles switch flat-switch");
  CHECK(by_env.out.find((dir / "b" / "flat-switch.json").string()) == std::string::npos);
  const std::string with_env = "TENSORPATH_MODELS_DIR=/no/such:" + (dir / "b").string() + " ";
  const std::string cmd = with_env + TENSORPATH_BINARY + " profiles switch flat-switch 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  std::string out;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0)
    out.append(buf.data(), n);
  CHECK(::pclose(p) == 0);
  CHECK(out.find((dir / "b" / "flat-switch.json").string()) != std::string::npos);
  // an unknown name says where it looked
  Run missing = run("perftest --hw no-such-nic --models-dir " + (dir / "a").string());
  CHECK(missing.status == 2);
  CHECK(missing.out.find((dir / "a").string() + " (--models-dir)") != std::string::npos);
  CHECK(missing.out.find("(built-in)") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("roce: a table per model, the fluid fixed point, and wrong inputs refused naming the option", "[quick]")
{
  Run ok = run("roce --senders 2 --size 200K --dcqcn off");
  CHECK(ok.status == 0);
  CHECK(ok.out.find(" flow ") != std::string::npos);
  CHECK(ok.out.find(" roce ") != std::string::npos);
  Run fp = run("roce --scenario longflows --profile paper --rate 40 --senders 2 --duration 5 --warmup 2 --fixed-point "
               "--network-model roce --json");
  CHECK(fp.status == 0);
  CHECK(fp.out.find("dcqcn-fluid-fixed-point") != std::string::npos);
  const std::vector<std::pair<std::string, std::string>> wrong = {
      {"roce --scenario star", "--scenario"},
      {"roce --profile mellanox", "--profile"},
      {"roce --dcqcn maybe", "--dcqcn"},
      {"roce --senders 0", "--senders"},
      {"roce --scenario converge --senders 3", "--senders"},
      {"roce --local 2", "--local"},
      {"roce --kmin 2M --kmax 1M", "--kmax"},
      {"roce --fixed-point", "--fixed-point"},
      {"roce --network-model tcp-incast", "--network-model"},
      {"roce --tolerance 0.1", "--tolerance"},
      {"roce --reference /nonexistent/rows.jsonl", "--reference"},
      {"roce --pfc off --dcqcn off --senders 16 --size 4M --buffer 2M --network-model roce", "dropped"},
      {"roce --leaves 4", "--leaves"},                         // only the allreduce reads it
      {"roce --scenario converge --duration 5", "--duration"}, // only longflows reads it
      {"roce --rate 10", "headroom"},                          // 3 one-way BDPs at 10 Gb/s, 1 us: too little
      {"roce --delay 0", "--delay"},
      {"roce --step 5000", "--step"},      // longer than a hop
      {"roce --senders 1024", "--buffer"}, // 1025 ports' headroom exceed 32 MB
      {"roce --byte-counter 100", "--byte-counter"},
      {"roce --scenario longflows --fixed-point --dcqcn off", "--fixed-point"},
      {"roce --scenario longflows --fixed-point --pmax 0", "--pmax"},
  };
  for (const auto& [args, word] : wrong) {
    Run r = run(args);
    INFO(args << "\n" << r.out);
    CHECK(r.status != 0);
    CHECK(r.out.find(word) != std::string::npos);
  }
}

TEST_CASE("incast: goodput over time, and wrong inputs refused naming the option", "[quick]")
{
  Run ok = run("incast -n 2 -s 20000 -b 16K --goodput-bin 50 -m tcp-incast --json");
  CHECK(ok.status == 0);
  CHECK(ok.out.find("\"goodput_series_gbps\"") != std::string::npos);
  const std::vector<std::pair<std::string, std::string>> wrong = {
      {"incast --goodput-bin 10 --seeds x", "--seeds"}, // aborted once: --seeds read before it was checked
      {"incast --goodput-bin 10 --seeds 3 --jitter 100", "--goodput-bin"},
      {"incast --goodput-bin 10 -m flow", "--goodput-bin"},
      {"incast --goodput-bin -5", "--goodput-bin"},
      {"incast --trace /tmp/x --reference /nonexistent/rows.jsonl", "--trace"},
      {"incast --trace /nonexistent/dir/trace", "--trace"},
      {"incast -n 2,4 --trace /tmp/x", "--trace"},
      {"incast -n 3 --start-offsets 5,7", "--start-offsets"},
      {"incast -n 3 --start-offsets 5,x,9", "--start-offsets"},
      {"incast -n 3 --start-offsets 1,2,3 --jitter 5", "--start-offsets"},
      {"incast -n 64 --stagger 100", "--stagger"},
      {"incast --syn-bytes 10", "--syn-bytes"},
      {"incast -n 700 -b 32K", "--buffer"},
      {"incast --ns3-quirks --rate 900000", "--rate"},
  };
  for (const auto& [args, word] : wrong) {
    Run r = run(args);
    INFO(args << "\n" << r.out);
    CHECK(r.status != 0);
    CHECK(r.status != 134); // never an abort
    CHECK(r.out.find(word) != std::string::npos);
  }
}

TEST_CASE("roce --reference: rows of another experiment are refused, naming the file, line and field", "[quick]")
{
  const std::string good =
      R"({"model": "ns3", "scenario": "incast", "senders": 2, "local": 0, "size": 100000, "rate_gbps": 100, )"
      R"("delay_us": 1, "buffer": 32000000, "dcqcn": 1, "ecn": 1, "pfc": 1, "kmin": 400000, "kmax": 1600000, )"
      R"("pmax": 0.2, "t_alpha_us": 1, "t_dec_us": 4, "t_inc_us": 300, "g": 0.00390625, "fast_recovery": 1, )"
      R"("ai_mbps": 20, "hai_mbps": 200, "min_rate_gbps": 1, "cnp_interval_us": 0, "byte_counter": 0, "seed": 1, )"
      R"("reserve": 4096, "resume_offset": 3072, "headroom": 37500, "completion_s": 0.0000182, "drops": 0})";
  const std::string dir = fs::temp_directory_path() / ("tp_roce_ref_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string row = good;
    row.replace(row.find(from), from.size(), to);
    const std::string path = dir + "/rows.jsonl";
    std::ofstream(path) << row << "\n";
    return run("roce --reference " + path + " --tolerance 10");
  };
  CHECK(with("\"drops\": 0", "\"drops\": 0").status == 0);
  const std::vector<std::array<std::string, 3>> wrong = {
      {"\"drops\": 0", "\"drops\": 12", "drops"},
      {"\"reserve\": 4096", "\"reserve\": 0", "reserve"},
      {"\"headroom\": 37500", "\"headroom\": 1", "headroom"},
      {"\"model\": \"ns3\"", "\"model\": \"roce\"", "model"},
      {"\"scenario\": \"incast\"", "\"scenario\": \"allreduce\"", "scenario"},
  };
  for (const auto& [from, to, field] : wrong) {
    Run r = with(from, to);
    INFO(to << "\n" << r.out);
    CHECK(r.status == 2);
    CHECK(r.out.find("rows.jsonl:1") != std::string::npos);
    CHECK(r.out.find(field) != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("tcp-incast in a parameter-server job: losses at the receivers' ports reach the critical path as retry")
{
  const std::string path = "/tmp/tp_cli_ps_incast_" + std::to_string(::getpid()) + ".json";
  const std::string job = R"("kind": "training", "model": "resnet50", "batch": 32, "fetch": "per_worker",
      "transports": ["grpc"], "steps": 3, "reference": false, "nic": "ethernet-10gbe")";
  std::ofstream(path) << R"({"kind": "training", "name": "ps-incast", "hw": "hkust-4node", "jobs": [{"label": "flow", )"
                      << job << R"(}, {"label": "incast", "network_model": "tcp-incast", "port_buffer": "128K", )"
                      << job << R"(}, {"label": "switch", "network_model": "tcp-incast", )" << job << "}]}";
  Run r = run("run " + path + " --json");
  std::remove(path.c_str());
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& flow = j["jobs"][0]["metrics"];
  const auto& incast = j["jobs"][1]["metrics"];
  CHECK(flow["path_retry_ms"].get<double>() == 0);
  CHECK(flow["incast_bursts_charged"].get<double>() == 0);
  // Three PS send ~25 MB of variables each into every worker's 10 Gb/s port at once (and the workers push their
  // gradients back): the tcp-incast model (like ns-3: 230 ms against max-min's 80 ms for 3 x 32 MiB) has some of
  // those bursts wait out a 200 ms time-out, and the wait reaches the step's critical path as retry.
  CHECK(incast["incast_bursts_charged"].get<double>() > 0);
  CHECK(incast["path_retry_ms"].get<double>() > 10);
  CHECK(incast["step_ms"].get<double>() > 0.99 * flow["step_ms"].get<double>());
  CHECK(incast["incast_port_buffer_min"].get<double>() == 131072);
  CHECK(incast["incast_port_buffer_max"].get<double>() == 131072);
  // Without port_buffer each port holds its dynamic-threshold share of the SN2100's lossy pool (4580864 bytes at
  // alpha 8): 8/9 of it with one port filling, 8/(1 + 4 x 8) with all four hosts' ports filling at once.
  const auto& share = j["jobs"][2]["metrics"];
  CHECK(share["incast_bursts_charged"].get<double>() > 0);
  CHECK(share["incast_port_buffer_max"].get<double>() <= 4580864.0 * 8 / 9);
  CHECK(share["incast_port_buffer_min"].get<double>() >= std::floor(4580864.0 * 8 / 33));
  CHECK(share["incast_port_buffer_min"].get<double>() < share["incast_port_buffer_max"].get<double>());
}

TEST_CASE("allreduce says when a ring on shared links was folded onto two hosts and --every-host times every rank")
{
  // 32 DGX A100 hosts x 8 GPU ranks, 1 MiB (one segment size): the routes share PCIe links, so the ring runs message
  // by message, folded onto the first 16 ranks; --every-host times all 256 ranks' messages, to the same result.
  const std::string cmd =
      "allreduce --ranks 256 --size 1M --ranks-per-host 8 --gpu --hw dgx-a100-8gpu --mode analytical";
  const Run folded = run(cmd), every = run(cmd + " --every-host");
  INFO(folded.out << every.out);
  REQUIRE(folded.status == 0);
  REQUIRE(every.status == 0);
  CHECK(folded.out.find("on the first 16 ranks (two hosts)") != std::string::npos);
  CHECK(every.out.find("timed message by message on every host") != std::string::npos);
  // The time column (ms) of the analytical row, equal to the printed digit.
  auto time_of = [](const std::string& out) {
    const auto at = out.find("\nanalytical ");
    double ms = -1;
    if (at != std::string::npos) std::sscanf(out.c_str() + at + 12, "%lf", &ms);
    return ms;
  };
  CHECK(time_of(folded.out) > 0);
  CHECK(time_of(folded.out) == time_of(every.out));
}

TEST_CASE("AR-gRPC chunk trains: ResNet-152 through one PS within 0.1 % of chunk-by-chunk reads, in fewer activities")
{
  // docs/model.md "Chunk trains": once the configuration measured furthest from the chunk-by-chunk protocol (0.9 %,
  // 5e-7 since): 3 workers of 2 K80 dies each pull ResNet-152's several hundred variables from one PS over EDR, so its
  // channels carry many payloads at once and their FINs hold bounce buffers.
  auto step = [](const std::string& extra) {
    Run r = run("train --transport ar_grpc --no-reference --model resnet152 --hw osu-ri2-k80-edr --batch 8 --workers 3 "
                "--ps 1 --steps 2 --json" +
                extra);
    INFO(r.out);
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out).at("runs").at(0);
    return std::make_pair(j.at("step_time").get<double>(), j.at("simgrid_activities").get<double>());
  };
  const auto [exact, exact_activities] = step(" --ar-chunk-by-chunk");
  const auto [trains, train_activities] = step(""); // the simulator's default
  INFO("step: chunk by chunk " << exact << " s, trains " << trains << " s; activities " << exact_activities << " and "
                               << train_activities);
  CHECK(trains == Approx(exact).epsilon(0.001));
  CHECK(train_activities < 0.8 * exact_activities); // 0.68: most of its variables are one chunk or less
}
