// `tensorpath replay --hw` output (issue 18, deliverables 3 and 4): identical collectives simulated once and their
// results equal to an uncached simulation; the assumed host at the top; the per-event table with its bottleneck; the
// warnings (zero-byte, unknown size, kept at the recorded time) counted at the top and listed at the end; --json with
// its documented keys, consistent with the text; --chrome with the recorded and the replayed trace side by side; an
// output that cannot be written exits 3.
#include "apps/lib/hw_resolve.hpp"
#include "apps/lib/replay_report.hpp"
#include "tests/run_command.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

namespace fs = std::filesystem;
using nlohmann::json;
using namespace tp;

namespace {

bool has(const std::string& s, const std::string& part)
{
  return s.find(part) != std::string::npos;
}

fs::path temp_dir(const std::string& tag)
{
  const fs::path d = fs::temp_directory_path() / ("tp_replay_out_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p)
{
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A Kineto trace of a 4-rank job whose nccl:all_reduce calls are `args` (one object each), 1 ms apart.
std::string kineto_allreduces(const std::vector<std::string>& args)
{
  std::string ev;
  for (size_t i = 0; i < args.size(); ++i)
    ev += fmt::format(R"({}{{"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 1, "tid": 1,
      "ts": {}, "dur": 500, "args": {}}})",
                      i ? ",\n" : "", 1000 * (i + 1), args[i]);
  return R"({"distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 4}, "traceEvents": [)" + ev + "]}";
}

const std::string MIB = R"({"In msg nelems": 262144, "dtype": "Float", "Group size": 4})"; // 1 MiB

} // namespace

TEST_CASE("replay cache: five identical allreduces are one simulation, equal to the uncached result", "[quick]")
{
  models::Catalog cat;
  auto cl = tp::frontend::cluster_for(cat, "connectx4-edr-ib", 4);
  REQUIRE(cl.ok());
  sim::AllreduceJob j;
  j.mode = sim::FabricMode::ANALYTICAL;
  j.ranks = 4;
  j.bytes = 1 << 20;
  j.gpu = true;
  tp::frontend::SimulationCache cache;
  int runs = 0;
  auto simulate = [&](const sim::AllreduceJob& job) {
    return [&, job] {
      ++runs;
      return tp::frontend::simulate_allreduce_isolated(cl.value(), job);
    };
  };
  std::vector<std::string> got;
  for (int i = 0; i < 5; ++i) {
    auto r = cache.get("a", simulate(j));
    REQUIRE(r.ok());
    got.push_back(r.value());
  }
  CHECK(runs == 1);
  CHECK(cache.simulations() == 1);
  CHECK(cache.reused() == 4);
  auto uncached = tp::frontend::simulate_allreduce_isolated(cl.value(), j);
  REQUIRE(uncached.ok());
  for (const auto& g : got)
    CHECK(g == uncached.value());
  // Another key is another simulation, with its own (here larger) result.
  sim::AllreduceJob big = j;
  big.bytes = 8 << 20;
  auto r = cache.get("b", simulate(big));
  REQUIRE(r.ok());
  CHECK(runs == 2);
  CHECK(tp::frontend::parse_collective_time(r.value()).seconds >
        tp::frontend::parse_collective_time(uncached.value()).seconds);
}

TEST_CASE("replay bottleneck: the largest of the fixed costs, the slowest stage and the local work is named", "[quick]")
{
  using tp::frontend::allreduce_bottleneck;
  tp::frontend::CollectiveTime t;
  // 2 ranks, 2 GB: 2 messages of 1 GB at 1 GB/s = 2 s on the wire, 2 x 1 ms fixed; 2.5 s in all.
  t.seconds = 2.5;
  t.alpha = 1e-3;
  t.beta = 1e9;
  t.beta_link = "node0.nic0.port.tx";
  CHECK(allreduce_bottleneck(t, 2e9, 2) == "NIC line rate (node0.nic0.port.tx, 1.0 GB/s) 80%");
  t.beta_link = "node1.gpu0.pcie.down";
  CHECK(has(allreduce_bottleneck(t, 2e9, 2), "PCIe (node1.gpu0.pcie.down"));
  // 8 ranks, 8 KB: 14 messages of 1 KB, 1 us each on the wire, 10 us fixed each: latency-bound.
  t.seconds = 14 * 11e-6 + 1e-6;
  t.alpha = 10e-6;
  t.beta = 1e9;
  CHECK(allreduce_bottleneck(t, 8e3, 8) == "per-message costs: latency and pipeline fill (14 messages x 10.0 us) 90%");
  // Most of the time in neither: the reductions and copies between steps.
  t.seconds = 1.0;
  CHECK(has(allreduce_bottleneck(t, 8e3, 8), "reductions and copies between ring steps 100%"));
  CHECK(tp::frontend::resource_of_link("cpu memcpy") == "CPU copy");
}

TEST_CASE("replay --json and the text: one simulation for identical allreduces, warnings for zero and unknown sizes",
          "[quick]")
{
  const fs::path d = temp_dir("json");
  const std::string big = R"({"In msg nelems": 524288, "dtype": "Float", "Group size": 4})";
  const std::string zero = R"({"In msg nelems": 0, "dtype": "Float", "Group size": 4})";
  const std::string unknown = R"({"Group size": 4})";
  std::ofstream(d / "t.json") << kineto_allreduces({MIB, MIB, big, MIB, MIB, MIB, zero, unknown});
  std::ofstream(d / "one.json") << kineto_allreduces({MIB});
  auto r = tp::test::run_cli("replay " + (d / "t.json").string() + " --hw connectx4-edr-ib --collectives ring --json " +
                             (d / "out.json").string());
  INFO(r.out);
  REQUIRE(r.status == 0);
  // The host and fabric at the top, and where the ranks came from.
  CHECK(has(r.out, "assumed host and fabric (--hw connectx4-edr-ib)"));
  CHECK(has(r.out, "NIC \"connectx4-edr-ib\" at 100.0 Gb/s line rate"));
  CHECK(has(r.out, "job: 4 rank(s) (from distributedInfo.world_size)"));
  // Three distinct jobs (1 MiB, 2 MiB, 0 B) for seven simulated events; the unknown size is kept.
  CHECK(has(r.out, "3 simulation(s) for 7 event(s)"));
  CHECK(has(r.out, "kept at recorded: size unknown"));
  const auto head = r.out.find("warning(s), listed at the end"), tail = r.out.find("warning(s):\n");
  REQUIRE(head != std::string::npos);
  REQUIRE(tail != std::string::npos);
  CHECK(head < r.out.find("event      name")); // counted at the top, listed after the tables
  CHECK(tail > r.out.find("step(s) with events"));
  CHECK(has(r.out, "allreduce of 0 bytes in the trace"));
  CHECK(has(r.out, "allreduce of unknown size (the trace does not say): kept at its recorded time"));

  const json j = json::parse(slurp(d / "out.json"));
  for (const char* k : {"tool", "files", "format", "host", "events", "steps", "steps_from", "summary", "whole_trace",
                        "simulated_events", "simulations", "warnings"})
    CHECK(j.contains(k));
  for (const char* k : {"hw", "hw_from", "host_profile", "nic", "nic_line_rate_gbps", "switch", "transport", "ranks",
                        "ranks_from", "ranks_per_node", "ranks_per_node_from"})
    CHECK(j["host"].contains(k));
  CHECK(j["host"]["nic_line_rate_gbps"] == 100.0);
  CHECK(j["host"]["ranks"] == 4);
  CHECK(j["host"]["ranks_from"] == "distributedInfo.world_size");
  CHECK(j["simulations"]["distinct"] == 3);
  CHECK(j["simulations"]["reused"] == 4);
  const json& ev = j["events"];
  REQUIRE(ev.size() == 8);
  for (const char* k : {"event", "name", "bytes", "ranks", "algorithm", "recorded_ms", "replayed_ms", "kept_recorded",
                        "bottleneck", "reused", "step", "rank"})
    CHECK(ev[0].contains(k));
  // The five 1 MiB allreduces: the first simulated, the others reusing it, all with the same time.
  for (size_t i : {0, 1, 3, 4, 5}) {
    CHECK(ev[i]["bytes"] == 1048576);
    CHECK(ev[i]["replayed_ms"] == ev[0]["replayed_ms"]);
    CHECK(ev[i]["reused"] == (i != 0));
  }
  CHECK(ev[2]["bytes"] == 2097152);
  CHECK(ev[2]["replayed_ms"].get<double>() > ev[0]["replayed_ms"].get<double>());
  CHECK(ev[6]["bytes"] == 0);
  CHECK(ev[7]["bytes"].is_null());
  CHECK(ev[7]["replayed_ms"].is_null());
  CHECK(ev[7]["kept_recorded"] == "size unknown");
  CHECK(ev[0]["algorithm"] == "ring (analytical fabric)");
  CHECK_FALSE(ev[0]["bottleneck"].get<std::string>().empty());
  CHECK(has(r.out, ev[0]["bottleneck"].get<std::string>())); // the same bottleneck in the text
  // The JSON's numbers are the text's.
  CHECK(
      has(r.out, fmt::format("replayed on connectx4-edr-ib {:.3f} ms", j["whole_trace"]["replayed_ms"].get<double>())));
  CHECK(has(r.out, fmt::format("{:.3f}", ev[0]["replayed_ms"].get<double>())));
  REQUIRE(j["warnings"].size() >= 2);
  CHECK(has(r.out, fmt::format("{} warning(s), listed at the end", j["warnings"].size())));
  for (const auto& w : j["warnings"])
    CHECK(has(r.out, "warning: " + w.get<std::string>()));

  // Uncached: the same allreduce alone in its trace gives the same time.
  auto one = tp::test::run_cli("replay " + (d / "one.json").string() +
                               " --hw connectx4-edr-ib --collectives ring --json " + (d / "one_out.json").string());
  REQUIRE(one.status == 0);
  const json o = json::parse(slurp(d / "one_out.json"));
  CHECK(o["simulations"]["distinct"] == 1);
  CHECK(o["simulations"]["reused"] == 0);
  CHECK(o["events"][0]["replayed_ms"] == ev[0]["replayed_ms"]);
  fs::remove_all(d);
}

TEST_CASE("replay --chrome writes the recorded and the replayed trace as two processes with the same events", "[quick]")
{
  const fs::path d = temp_dir("chrome");
  auto r = tp::test::run_cli("replay " + std::string(TENSORPATH_SOURCE_DIR) +
                             "/tests/traces/fixtures/kineto.json --hw connectx4-edr-ib --chrome " +
                             (d / "trace.json").string());
  INFO(r.out);
  REQUIRE(r.status == 0);
  const json t = json::parse(slurp(d / "trace.json"));
  std::map<int, std::string> process;
  std::map<int, std::multiset<std::string>> spans;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") process[e["pid"]] = e["args"]["name"];
    if (e["ph"] == "X") spans[e["pid"]].insert(e["name"].get<std::string>());
  }
  REQUIRE(process.size() == 2);
  CHECK(has(process[1], "recorded"));
  CHECK(process[2] == "replayed on connectx4-edr-ib");
  CHECK(spans[1] == spans[2]);
  CHECK(spans[1].count("nccl:all_reduce") == 1);
  CHECK(spans[1].count("whole trace") == 1); // the step
  fs::remove_all(d);
}

TEST_CASE("replay --json or --chrome to a full disk exits 3 naming the file, and without --hw they are refused",
          "[quick]")
{
  const std::string fx = std::string(TENSORPATH_SOURCE_DIR) + "/tests/traces/fixtures/kineto.json";
  auto r = tp::test::run_cli("replay " + fx + " --hw connectx4-edr-ib --json /dev/full");
  CHECK(r.status == 3);
  CHECK(has(r.out, "/dev/full"));
  r = tp::test::run_cli("replay " + fx + " --hw connectx4-edr-ib --chrome /dev/full");
  CHECK(r.status == 3);
  CHECK(has(r.out, "/dev/full"));
  r = tp::test::run_cli("replay " + fx + " --json /tmp/x.json");
  CHECK(r.status == 2);
  CHECK(has(r.out, "--hw"));
}

TEST_CASE("replay of a TF timeline warns about a transfer of unknown size and one of zero bytes", "[quick]")
{
  const fs::path d = temp_dir("tf");
  std::ofstream(d / "tf.json") << R"({"traceEvents": [
 {"ph": "X", "name": "RecvTensor", "ts": 10, "dur": 5, "pid": 1,
  "args": {"name": "[0B] [0B/s] edge_1_z from /job:ps/task:0/device:CPU:0 to /job:worker/task:0/device:GPU:0"}},
 {"ph": "X", "name": "RecvTensor", "ts": 120, "dur": 6, "pid": 1,
  "args": {"name": "edge_9_b from /job:ps/task:0/device:CPU:0 to /job:worker/task:0/device:GPU:0"}}
]})";
  auto r = tp::test::run_cli("replay " + (d / "tf.json").string() + " --hw connectx4-edr-ib");
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "warning: transfer of unknown size (the trace does not say): kept at its recorded time "
                   "(\"edge_9_b\")"));
  CHECK(has(r.out, "warning: transfer of 0 bytes in the trace: simulated as the smallest message (4 B); check the "
                   "trace (\"edge_1_z\")"));
  CHECK(has(r.out, "kept at recorded: size unknown"));
  // Without --hw the same warnings, counted at the top and listed at the end.
  r = tp::test::run_cli("replay " + (d / "tf.json").string());
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "warning(s), listed at the end"));
  CHECK(has(r.out, "warning: transfer of unknown size"));
  fs::remove_all(d);
}

TEST_CASE("replay names the NIC's line rate as the bottleneck on 40GbE and PCIe on EDR InfiniBand", "[quick]")
{
  // A 9 MiB allreduce over 4 ranks: 40 Gb/s is 5 GB/s, below the host's PCIe, so the wire limits it; EDR's
  // 100 Gb/s (12.5 GB/s) is above what a PCIe 3.0 x16 link delivers, so PCIe does.
  const std::string fx = std::string(TENSORPATH_SOURCE_DIR) + "/tests/traces/fixtures/kineto.json";
  auto r = tp::test::run_cli("replay " + fx + " --hw connectx3-40gbe-roce --collectives ring");
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "NIC line rate (node0.nic0.port.tx"));
  r = tp::test::run_cli("replay " + fx + " --hw connectx4-edr-ib --collectives ring");
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "PCIe (node0.nic0.pcie."));
}

TEST_CASE("replay --collectives auto: the NCCL model for NCCL's collectives, rings otherwise, and it says why",
          "[quick]")
{
  const std::string fx = std::string(TENSORPATH_SOURCE_DIR) + "/tests/traces/fixtures/";
  auto r = tp::test::run_cli("replay " + fx + "kineto.json --hw connectx4-edr-ib");
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "the trace's collectives are NCCL's (\"nccl:all_reduce\")"));
  CHECK(has(r.out, "collectives by the NCCL collective model"));
  // Horovod names the tensor; its NCCL_ALLREDUCE phase names the library.
  r = tp::test::run_cli("replay " + fx + "horovod_timeline.json --hw connectx4-edr-ib --ranks 4");
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "ran an NCCL phase); --collectives ring for rings"));
  // The same timeline with its NCCL phases renamed MPI's: rings, and the option that would change it.
  const fs::path d = temp_dir("auto");
  std::ifstream in(fx + "horovod_timeline.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t at; (at = text.find("NCCL_")) != std::string::npos;)
    text.replace(at, 5, "MPI_");
  std::ofstream(d / "mpi.json") << text;
  r = tp::test::run_cli("replay " + (d / "mpi.json").string() + " --hw connectx4-edr-ib --ranks 4");
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "allreduces as rings on the simulated fabric, one rank per host; none of the trace's collectives "
                   "is named as NCCL's; --collectives nccl for the NCCL model"));
  fs::remove_all(d);
  // Asked for by name, either applies whatever the trace.
  r = tp::test::run_cli("replay " + fx + "kineto.json --hw connectx4-edr-ib --collectives ring");
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "; --collectives ring"));
  CHECK(has(r.out, "allreduces as rings, analytical fabric mode"));
  r = tp::test::run_cli("replay " + fx + "kineto.json --collectives nccl");
  CHECK(r.status == 2);
  CHECK(has(r.out, "--collectives: expected --hw PROFILE to replay on"));
}

TEST_CASE("a collective's time keeps a bottleneck named in two words", "[quick]")
{
  // A ring whose slowest stage is a CPU copy names it "cpu memcpy": the whole rest of the line, not its first word.
  const auto t = tp::frontend::parse_collective_time("0.25 1.5e-06 5000000000 cpu memcpy");
  CHECK(t.seconds == 0.25);
  CHECK(t.alpha == 1.5e-06);
  CHECK(t.beta == 5e9);
  CHECK(t.beta_link == "cpu memcpy");
  CHECK(tp::frontend::parse_collective_time("0.25 0 inf -").beta_link.empty());
}

namespace {

/// `tensorpath replay TRACE --hw dgx-a100-8gpu --collectives nccl EXTRA --json`, which must succeed; its JSON.
nlohmann::json replay_nccl_json(const fs::path& trace, const std::string& extra)
{
  const fs::path out = trace.parent_path() / "out.json";
  auto r = tp::test::run_cli("replay " + trace.string() + " --hw dgx-a100-8gpu --collectives nccl --json " +
                             out.string() + extra);
  INFO(r.out);
  REQUIRE(r.status == 0);
  return nlohmann::json::parse(slurp(out));
}

} // namespace

TEST_CASE(
    "replay --collectives nccl times a point-to-point send and recv between two ranks, not at their recorded time")
{
  // A pipeline stage's send and recv of 16 MiB (PyTorch 2.x's record_param_comms args on the nccl: calls).
  const fs::path d = temp_dir("p2p");
  std::ofstream(d / "p2p.json") << R"({"distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 8},
    "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "nccl:send", "pid": 1, "tid": 1, "ts": 1000, "dur": 900,
     "args": {"In msg nelems": 4194304, "Out msg nelems": 4194304, "dtype": "Float", "Group size": 8}},
    {"ph": "X", "cat": "user_annotation", "name": "nccl:recv", "pid": 1, "tid": 1, "ts": 3000, "dur": 900,
     "args": {"In msg nelems": 4194304, "Out msg nelems": 4194304, "dtype": "Float", "Group size": 8}}]})";
  auto replay = [&](const std::string& extra) { return replay_nccl_json(d / "p2p.json", extra); };
  const auto across = replay("");
  const auto within = replay(" --ranks-per-node 2"); // the peer is still assumed on another node
  const double bytes = 4194304.0 * 4;
  for (const auto* j : {&across, &within}) {
    int seen = 0;
    for (const auto& e : (*j)["events"]) {
      if (e["event"] != "send" && e["event"] != "recv") continue;
      ++seen;
      INFO(e.dump());
      CHECK(e["kept_recorded"].is_null());
      CHECK(e["ranks"] == 2);
      CHECK(e["bytes"].get<double>() == bytes);
      CHECK(e["algorithm"].get<std::string>().find("p2p") != std::string::npos);
    }
    CHECK(seen == 2);
  }
  auto replayed = [](const nlohmann::json& j) { return j["events"][0]["replayed_ms"].get<double>() * 1e-3; };
  // Across two nodes the message crosses one HDR NIC (200 Gb/s): its wire time within a factor of two (latency and
  // NCCL's per-channel ceilings on top, no more).
  const double wire = bytes / (200e9 / 8);
  CHECK(replayed(across) > 0.5 * wire);
  CHECK(replayed(across) < 2.0 * wire);
  CHECK(replayed(within) == replayed(across));
  CHECK(across["events"][0]["algorithm"].get<std::string>().find("2x1") != std::string::npos);
  bool said = false; // the assumption is stated
  for (const auto& w : across["warnings"])
    said |= w.dump().find("its peer is not in the trace") != std::string::npos;
  CHECK(said);
  fs::remove_all(d);
}

TEST_CASE("replay --collectives nccl places a send on one node when the trace names a peer that shares the node")
{
  // Rank 1 sends to rank 0 and receives from rank 5 ("Dst Rank" / "Src Rank", as newer PyTorch releases record them).
  const fs::path d = temp_dir("p2p_peer");
  std::ofstream(d / "p2p.json") << R"({"distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 8},
    "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "nccl:send", "pid": 1, "tid": 1, "ts": 1000, "dur": 900,
     "args": {"In msg nelems": 4194304, "Out msg nelems": 4194304, "dtype": "Float", "Group size": 8, "Dst Rank": 0}},
    {"ph": "X", "cat": "user_annotation", "name": "nccl:recv", "pid": 1, "tid": 1, "ts": 3000, "dur": 900,
     "args": {"In msg nelems": 4194304, "Out msg nelems": 4194304, "dtype": "Float", "Group size": 8, "Src Rank": 5}}]})";
  auto replay = [&](const std::string& extra) { return replay_nccl_json(d / "p2p.json", extra); };
  auto event = [](const nlohmann::json& j, const std::string& kind) {
    for (const auto& e : j["events"])
      if (e["event"] == kind) return e;
    FAIL("no " << kind << " in " << j.dump().substr(0, 400));
    return nlohmann::json();
  };
  const auto four = replay(" --ranks-per-node 4"); // ranks 0-3 on node 0, 4-7 on node 1
  const auto one = replay("");                     // one rank per node: every peer on another node
  INFO(four.dump().substr(0, 1200));
  // The send to rank 0 stays on the node (NVLink), the recv from rank 5 crosses to the other node.
  CHECK(event(four, "send")["algorithm"].get<std::string>().find("1x2") != std::string::npos);
  CHECK(event(four, "recv")["algorithm"].get<std::string>().find("2x1") != std::string::npos);
  CHECK(event(four, "send")["replayed_ms"].get<double>() < 0.5 * event(four, "recv")["replayed_ms"].get<double>());
  CHECK(event(one, "send")["algorithm"].get<std::string>().find("2x1") != std::string::npos);
  CHECK(event(one, "send")["replayed_ms"].get<double>() == event(four, "recv")["replayed_ms"].get<double>());
  // The peer is known: no warning that it is assumed.
  for (const auto* j : {&four, &one})
    for (const auto& w : (*j)["warnings"])
      CHECK(w.dump().find("its peer is not in the trace") == std::string::npos);
  fs::remove_all(d);
}

TEST_CASE("replay takes a recv's peer from Src Rank and a send's from Dst Rank, and says why a peer cannot place it")
{
  // A recv whose trace carries both keys (Dst Rank the recording rank 1, Src Rank the peer 0); a send to itself; a
  // file with no recording rank. Rank 1 of 4 per node.
  const fs::path d = temp_dir("p2p_keys");
  auto trace = [&](const std::string& name, const std::string& info, const std::string& kind,
                   const std::string& peer_args) {
    std::ofstream(d / name) << R"({"distributedInfo": {"backend": "nccl", )" << info << R"("world_size": 8},
      "traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "nccl:)"
                            << kind << R"(", "pid": 1, "tid": 1, "ts": 1000, "dur": 900,
       "args": {"In msg nelems": 4194304, "Out msg nelems": 4194304, "dtype": "Float", "Group size": 8, )"
                            << peer_args << "}}]}";
  };
  trace("both.json", R"("rank": 1, )", "recv", R"("Src Rank": 0, "Dst Rank": 1)");
  trace("self.json", R"("rank": 1, )", "send", R"("Dst Rank": 1)");
  trace("norank.json", "", "send", R"("Dst Rank": 0)");
  trace("garbage.json", R"("rank": 1, )", "send", R"("Dst Rank": "zero")");
  auto replay = [&](const std::string& file) { return replay_nccl_json(d / file, " --ranks-per-node 4"); };
  auto said = [](const nlohmann::json& j, const std::string& words) {
    for (const auto& w : j["warnings"])
      if (w.dump().find(words) != std::string::npos) return true;
    return false;
  };
  const auto both = replay("both.json");
  CHECK(both["events"][0]["algorithm"].get<std::string>().find("1x2") != std::string::npos); // rank 0: same node
  CHECK_FALSE(said(both, "timed between two nodes"));
  const auto self = replay("self.json");
  CHECK(self["events"][0]["algorithm"].get<std::string>().find("2x1") != std::string::npos);
  CHECK(said(self, "its peer is the recording rank"));
  const auto norank = replay("norank.json");
  CHECK(said(norank, "the recording rank is not known"));
  const auto garbage = replay("garbage.json");
  CHECK(said(garbage, "Dst Rank: not a rank"));
  CHECK(said(garbage, "its peer is not in the trace"));
  fs::remove_all(d);
}

TEST_CASE("replay where nothing could be re-simulated says so instead of a perfect match", "[quick]")
{
  // Every collective of unknown size: each keeps its recorded time, so the replay is the recording; "+0.0 %" would
  // read as a perfect model.
  const fs::path d = temp_dir("nothing");
  const std::string unknown = R"({"Group size": 4})";
  std::ofstream(d / "t.json") << kineto_allreduces({unknown, unknown});
  auto r = tp::test::run_cli("replay " + (d / "t.json").string() + " --hw connectx4-edr-ib --collectives ring --json " +
                             (d / "out.json").string());
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "no event was re-simulated on connectx4-edr-ib, so the replay is the recording: no"));
  CHECK_FALSE(has(r.out, "the difference is the simulator's error"));
  CHECK(has(r.out, "warning: nothing was re-simulated"));
  const json j = json::parse(slurp(d / "out.json"));
  bool warned = false;
  for (const auto& w : j.at("warnings"))
    warned = warned || has(w.get<std::string>(), "nothing was re-simulated");
  CHECK(warned);
  fs::remove_all(d);
}
