// The Kineto reader streams traceEvents (issue 18, speed): the other top-level keys are read in any order, before or
// after the events (PyTorch writes distributedInfo first, other tools may not); an error deep in a large file still
// names its event's index, and the text must be JSON before an event's error is reported.
#include "traces/trace.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace tp;

namespace {

// A collective in process group "7" (ranks from distributedInfo.pg_config), its launch and kernel, and a compute
// kernel.
const std::string EVENTS = R"J("traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#4", "pid": 4, "tid": 5, "ts": 900, "dur": 2000},
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 4, "tid": 5, "ts": 1000, "dur": 134,
     "args": {"Collective name": "allreduce", "In msg nelems": 1024, "dtype": "Float", "Process Group Name": "7"}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4, "tid": 5, "ts": 1033, "dur": 14,
     "args": {"correlation": 11}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)", "pid": 0,
     "tid": 84, "ts": 1200, "dur": 300, "args": {"correlation": 11}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1600, "dur": 50,
     "args": {"correlation": 12, "device": 2}}])J";
const std::string INFO_KEYS = R"("schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": 1,
    "world_size": 8, "pg_config": [{"pg_name": "7", "ranks": [1, 3, 5]}]}, "deviceProperties": [{"id": 0}])";

} // namespace

TEST_CASE("Kineto: distributedInfo and the other top-level keys read before or after traceEvents", "[traces]")
{
  for (const std::string& text : {"{" + INFO_KEYS + ", " + EVENTS + "}", "{" + EVENTS + ", " + INFO_KEYS + "}"}) {
    INFO(text);
    auto t = traces::parse_trace(text, "order.json");
    REQUIRE(t.ok());
    CHECK(t->format == "kineto");
    CHECK(t->world_size == 8);
    CHECK(t->rank == 1);
    REQUIRE(t->collectives.size() == 1);
    CHECK(t->collectives[0].bytes == 4096);
    CHECK(t->collectives[0].group_ranks == std::vector<int>{1, 3, 5}); // pg_config, read after the events
    CHECK(t->collectives[0].ranks == 3);
    CHECK(t->collectives[0].duration == Approx(300e-6));
    REQUIRE(t->ops.size() == 1);
    CHECK(t->ops[0].device == "cuda:2");
    CHECK(t->ops[0].issued == -1); // no launch with correlation 12
  }
  // a bad distributedInfo after the events is still refused at its field
  auto bad = traces::parse_trace(
      "{" + EVENTS + R"(, "schemaVersion": 1, "distributedInfo": {"rank": 8, "world_size": 8}})", "order.json");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().field == "distributedInfo.rank");
  // ... and reported before a bad event, as when the whole file was one document
  auto both = traces::parse_trace(
      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": "nan"}], "schemaVersion": 1,
          "distributedInfo": {"rank": 9, "world_size": 8}})",
      "order.json");
  REQUIRE_FALSE(both.ok());
  CHECK(both.error().field == "distributedInfo.rank");
}

namespace {

/// A Kineto trace of `n` compute kernels (about 130 bytes each), the one at `bad` written as `bad_event`.
std::string large_trace(size_t n, size_t bad, const std::string& bad_event)
{
  std::string text = R"({"schemaVersion": 1, "traceEvents": [)";
  for (size_t i = 0; i < n; ++i) {
    if (i) text += ", ";
    text += i == bad ? bad_event
                     : R"({"ph": "X", "cat": "kernel", "name": "gemm_)" + std::to_string(i % 7) +
                           R"(", "pid": 0, "tid": 7, "ts": )" + std::to_string(1000 + 10 * i) +
                           R"(, "dur": 5, "args": {"correlation": )" + std::to_string(i) + "}}";
  }
  return text + R"(], "distributedInfo": {"rank": 0, "world_size": 2}})";
}

} // namespace

TEST_CASE("Kineto: an error deep in a large file names its event's index (the events parsed one at a time)", "[traces]")
{
  const size_t n = 100000, bad = 87654; // about 13 MB
  const std::string good = large_trace(n, n, "");
  auto t = traces::parse_trace(good, "large.json");
  REQUIRE(t.ok());
  CHECK(t->ops.size() == n);
  CHECK(t->ops[bad].start == Approx((1000 + 10 * bad) * 1e-6));
  CHECK(t->world_size == 2);

  struct Bad {
    std::string event, field, expected;
  } cases[] = {
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": "nan"})", "traceEvents[87654].dur", "a number"},
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "ts": 2, "dur": 3})", "traceEvents[87654].ts",
       "each key once in an object"},
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1e400, "dur": 3})", "traceEvents[87654].ts",
       "a number a double holds"},
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 3, "args": {"device": -1}})",
       "traceEvents[87654].args.device", "an integer"},
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1})", "traceEvents[87654]", "\"ts\" and \"dur\""},
      {R"("not an event")", "traceEvents[87654]", "an event object"},
  };
  for (const auto& c : cases) {
    INFO(c.event);
    auto r = traces::parse_trace(large_trace(n, bad, c.event), "large.json");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().file == "large.json");
    CHECK(r.error().field == c.field);
    CHECK(r.error().expected.find(c.expected) != std::string::npos);
  }
  // a syntax error after a bad event: the text is not JSON, and that is what is reported, at its byte
  std::string broken = large_trace(n, bad, R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": "nan"})");
  const size_t at = broken.rfind("\"distributedInfo\"");
  broken[at + 1] = '\n'; // a raw newline inside a string
  auto r = traces::parse_trace(broken, "large.json");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().field == "byte " + std::to_string(at + 2));
}

TEST_CASE("TF timeline (streamed too): a device named by a process_name event after its ops", "[traces]")
{
  const std::string meta = R"({"ph": "M", "name": "process_name", "pid": 3,
      "args": {"name": "/job:worker/replica:0/task:1/device:GPU:0 Compute"}})";
  const std::string op = R"({"ph": "X", "cat": "Op", "name": "Conv2D", "pid": 3, "tid": 0, "ts": 10, "dur": 5,
      "args": {"name": "conv1", "op": "Conv2D"}})";
  auto first = traces::parse_tf_timeline(R"({"traceEvents": [)" + meta + ", " + op + "]}", "tf.json");
  auto last = traces::parse_tf_timeline(R"({"traceEvents": [)" + op + ", " + meta + "]}", "tf.json");
  REQUIRE(first.ok());
  REQUIRE(last.ok());
  REQUIRE(first->ops.size() == 1);
  REQUIRE(last->ops.size() == 1);
  CHECK(first->ops[0].device.find("task:1/device:GPU:0") != std::string::npos);
  CHECK(last->ops[0].device == first->ops[0].device);
}
