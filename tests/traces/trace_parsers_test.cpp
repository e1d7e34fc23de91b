// The trace parsers on fixtures written by the project (tests/traces/fixtures), and on malformed input: every
// failure names the file, the position and the reason, and never crashes.
#include "traces/replay.hpp"
#include "traces/trace.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

using namespace tp;

namespace {

std::string fixture(const std::string& name)
{
  return std::string(TENSORPATH_SOURCE_DIR) + "/tests/traces/fixtures/" + name;
}

std::string slurp(const std::string& path)
{
  std::ifstream f(path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

} // namespace

TEST_CASE("TF timeline: ops on their devices, RecvTensor transfers with sizes and endpoints", "[traces]")
{
  auto t = traces::read_trace(fixture("tf_timeline.json"));
  REQUIRE(t.ok());
  CHECK(t->format == "tf_timeline");
  REQUIRE(t->transfers.size() == 2); // the RecvTensor and the one named "unknown"
  CHECK(t->transfers[0].bytes == 4ull << 20);
  CHECK(t->transfers[0].tensor == "edge_5_conv1/kernel/read");
  CHECK(t->transfers[0].src_device == "/job:ps/replica:0/task:0/device:CPU:0");
  CHECK(t->transfers[0].dst_device == "/job:worker/replica:0/task:0/device:GPU:0");
  CHECK(t->transfers[0].duration == Approx(3.5e-3));
  CHECK(t->transfers[1].bytes == 256);
  REQUIRE(t->ops.size() == 4);
  CHECK(t->ops[0].device == "/job:worker/replica:0/task:0/device:GPU:0");
  CHECK(t->ops[0].name == "conv1/Conv2D");
  CHECK(t->ops[0].duration == Approx(12e-3));
  CHECK(t->span() == Approx((41900 - 1000) * 1e-6));
}

TEST_CASE("Horovod timeline: an unterminated array, collectives with sizes from dtype and shape", "[traces]")
{
  auto t = traces::read_trace(fixture("horovod_timeline.json"));
  REQUIRE(t.ok());
  CHECK(t->format == "horovod_timeline");
  REQUIRE(t->collectives.size() == 3); // ALLREDUCE (with its phases), ALLREDUCE, BROADCAST; negotiation is not one
  const auto& ar = t->collectives[0];
  CHECK(ar.kind == "allreduce");
  CHECK(ar.name == "DistributedSGD_Allreduce/HorovodAllreduce_gradients_conv1_kernel_0");
  CHECK(ar.bytes == 3ull * 3 * 64 * 128 * 4);
  CHECK(ar.duration == Approx(1800e-6));
  CHECK(t->collectives[1].bytes == 2000); // float16 [1000]
  CHECK(t->collectives[2].kind == "broadcast");
  CHECK(t->collectives[2].bytes == 4096);
}

TEST_CASE("PyTorch profiler (Kineto): kernels as compute, nccl: calls as collectives", "[traces]")
{
  auto t = traces::read_trace(fixture("kineto.json"));
  REQUIRE(t.ok());
  CHECK(t->format == "kineto");
  REQUIRE(t->ops.size() == 2); // the two cuDNN kernels (the NCCL kernel belongs to the collective)
  CHECK(t->ops[0].device == "cuda:0");
  REQUIRE(t->collectives.size() == 2);
  CHECK(t->collectives[0].kind == "allreduce");
  CHECK(t->collectives[0].bytes == 2359296ull * 4);
  CHECK(t->collectives[0].ranks == 4);
  CHECK(t->collectives[0].duration == Approx(2.6e-3)); // the NCCL kernel's GPU time, not the 40 us launch
  CHECK(t->collectives[1].kind == "allgather");
  CHECK(t->collectives[1].bytes == 2000);
}

TEST_CASE("Chakra JSON: concatenated objects, int64 as strings", "[traces]")
{
  auto t = traces::read_trace(fixture("chakra.json"));
  REQUIRE(t.ok());
  CHECK(t->format == "chakra");
  REQUIRE(t->ops.size() == 2);
  CHECK(t->ops[1].duration == Approx(1.7e-3));
  REQUIRE(t->collectives.size() == 1);
  CHECK(t->collectives[0].kind == "allreduce");
  CHECK(t->collectives[0].bytes == 9437184);
  REQUIRE(t->transfers.size() == 1);
  CHECK(t->transfers[0].src_device == "rank 0");
  CHECK(t->transfers[0].dst_device == "rank 1");
  CHECK(t->transfers[0].bytes == 1048576);
}

TEST_CASE("malformed traces are refused with the file, the position and the reason", "[traces]")
{
  struct Bad {
    std::string text, needle;
  } cases[] = {
      {"", "empty"},
      {"hello", "byte 0"},
      {R"({"traceEvents": [{"ph": "X", "name": "Conv2D", "ts": 1})", "byte"},             // truncated
      {R"({"traceEvents": [{"ph": "X", "name": "Conv2D", "ts": 1}]})", "traceEvents[0]"}, // no dur
      {R"({"traceEvents": [{"ph": "X", "name": "x", "ts": 1, "dur": -5}]})", "dur >= 0"},
      {R"({"traceEvents": 3})", "traceEvents"},
      {R"([{"ph": "E", "ts": 1, "pid": 1}])", "closing"}, // E before B
      {R"([{"name": "ALLREDUCE", "ph": "B", "ts": 1, "pid": 1, "args": {"dtype": "complex7", "shape": "[4]"}},
           {"ph": "E", "ts": 2, "pid": 1}])",
       "dtype"},
      {R"([{"ph": "B", "ts": 1}])", "pid"},
      {R"({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "ts": 1, "dur": 2,
           "args": {"dtype": "Float"}}], "schemaVersion": 1})",
       "nelems"},
      {"{\"id\": \"1\", \"type\": \"COMP_NODE\", \"durationMicros\": \"5\"}\n{\"id\": \"2\", \"type\": \"COMP_",
       "line 2"},
      {R"({"id": "3", "type": "COMM_COLL_NODE", "durationMicros": "5", "attr": []})", "comm_size"},
      {R"({"id": "3", "type": "COMP_NODE", "durationMicros": "five"})", "durationMicros"},
      // found by fuzzing: a number no type can hold (nlohmann throws out_of_range, not parse_error), and sizes that
      // overflow
      {R"([{"ph": "B", "pid": 1, "ts": 1e999999}])", "representable"},
      {R"({"type": "COMP_NODE", "durationMicros": 4e99999})", "representable"},
      {R"([{"name": "ALLREDUCE", "ph": "B", "ts": 1, "pid": 1, "args": {"dtype": "float32",
           "shape": "[99999999999999999999999, 99999999999]"}}, {"ph": "E", "ts": 2, "pid": 1}])",
       "shape"},
      {R"({"traceEvents": [{"ph": "X", "name": "nccl:all_reduce", "ts": 1, "dur": 2,
           "args": {"In msg nelems": 1e300, "dtype": "Float"}}], "schemaVersion": 1})",
       "element count"},
  };
  for (const auto& c : cases) {
    auto t = traces::parse_trace(c.text, "bad-trace.json");
    INFO(c.text);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().message().find("bad-trace.json") != std::string::npos);
    CHECK(t.error().message().find(c.needle) != std::string::npos);
  }
}

TEST_CASE("human-readable sizes", "[traces]")
{
  uint64_t b = 0;
  CHECK(traces::parse_human_bytes("4B", b));
  CHECK(b == 4);
  CHECK(traces::parse_human_bytes("1.5KiB", b));
  CHECK(b == 1536);
  CHECK(traces::parse_human_bytes("2MB", b));
  CHECK(b == 2u << 20);
  CHECK_FALSE(traces::parse_human_bytes("fast", b));
  CHECK_FALSE(traces::parse_human_bytes("12parsecs", b));
}

TEST_CASE("replay with the recorded durations reproduces the recorded span, for every fixture", "[traces]")
{
  for (const char* f : {"tf_timeline.json", "horovod_timeline.json", "kineto.json", "chakra.json"}) {
    auto t = traces::read_trace(fixture(f));
    REQUIRE(t.ok());
    const auto r = traces::replay_step(t.value(), {}, {});
    INFO(f);
    CHECK(r.recorded_span == Approx(t->span()));
    CHECK(r.replayed_span == Approx(r.recorded_span));
    CHECK(r.replayed_communication == Approx(r.recorded_communication));
  }
}

TEST_CASE("replay: a faster transfer moves what follows on its lanes earlier, and nothing else", "[traces]")
{
  traces::Trace t;
  // GPU0: op A [0, 10); transfer X GPU0 -> GPU1 [10, 30); GPU1: op B [30, 40) after it; GPU2: op C [0, 40) alone.
  t.ops = {{"A", "gpu0", 0, 10}, {"B", "gpu1", 30, 10}, {"C", "gpu2", 0, 40}};
  t.transfers = {{"x", "gpu0", "gpu1", 1000, 10, 20}};
  auto same = traces::replay_step(t, {}, {});
  CHECK(same.replayed_span == Approx(40));
  auto faster = traces::replay_step(t, {5}, {});
  CHECK(faster.replayed_communication == Approx(5));
  CHECK(faster.replayed_span == Approx(40)); // C on gpu2 still takes 40
  t.ops[2].duration = 10;                    // now B ends the step
  faster = traces::replay_step(t, {5}, {});
  CHECK(faster.replayed_span == Approx(25)); // B starts at 15
  auto slower = traces::replay_step(t, {50}, {});
  CHECK(slower.replayed_span == Approx(70));
  auto kept = traces::replay_step(t, {-1}, {});
  CHECK(kept.replayed_span == Approx(40));
}
