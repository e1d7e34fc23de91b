// The trace parsers on fixtures written by the project (tests/traces/fixtures), and on malformed input: every
// failure names the file, the position and the reason, and never crashes.
#include "traces/replay.hpp"
#include "traces/trace.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <fstream>
#include <functional>
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
  CHECK(ar.duration == Approx(1600e-6)); // its NCCL_ALLREDUCE phase, not the 1.8 ms ALLREDUCE around it
  CHECK(ar.issued == Approx(1200e-6));
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
  CHECK(t->collectives[0].group == "0");
  CHECK(t->collectives[1].kind == "allgather");
  CHECK(t->collectives[1].bytes == 2000);
  CHECK(t->collectives[1].duration == Approx(0.5e-3)); // its own kernel (written first), matched by correlation
  CHECK(t->world_size == 4);
  CHECK(t->rank == 0);
  CHECK(t->warnings.empty());
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
      {R"({"traceEvents": [{"ph": "X", "name": "x", "ts": 1, "dur": -5}]})", "traceEvents[0].dur"},
      {R"({"traceEvents": 3})", "traceEvents"},
      {R"([{"ph": "E", "ts": 1, "pid": 1}])", "closing"}, // E before B
      {R"([{"ph": "B", "ts": 1}])", "pid"},
      {R"({"traceEvents": [], "schemaVersion": 1, "distributedInfo": {"rank": 4, "world_size": 4}})",
       "distributedInfo.rank"},
      {R"({"traceEvents": [{"ph": "X", "name": "nccl:all_reduce", "ts": 1, "dur": 2,
           "args": {"Input Dims": [[1024, -5]], "Input type": ["float"]}}], "schemaVersion": 1})",
       "traceEvents[0].args.Input Dims"},
      {"{\"id\": \"1\", \"type\": \"COMP_NODE\", \"durationMicros\": \"5\"}\n{\"id\": \"2\", \"type\": \"COMP_",
       "line 2"},
      {R"({"id": "3", "type": "COMP_NODE", "durationMicros": "five"})", "durationMicros"},
      // found by fuzzing: a number no type can hold (nlohmann throws out_of_range, not parse_error), and sizes that
      // overflow
      {R"([{"ph": "B", "pid": 1, "ts": 1e999999}])", "[0].ts: expected a number a double holds"},
      {R"({"type": "COMP_NODE", "durationMicros": 4e99999})", "line 1: durationMicros: expected a number a double"},
      {R"([{"name": "ALLREDUCE", "ph": "B", "ts": 1, "pid": 1, "args": {"dtype": "float32",
           "shape": "[99999999999999999999999, 99999999999]"}}, {"ph": "E", "ts": 2, "pid": 1}])",
       "shape"},
      {R"({"traceEvents": [{"ph": "X", "name": "nccl:all_reduce", "ts": 1, "dur": 2,
           "args": {"In msg nelems": 1e300, "dtype": "Float"}}], "schemaVersion": 1})",
       "traceEvents[0].args.In msg nelems"},
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

namespace {

bool same(const traces::Trace& a, const traces::Trace& b)
{
  if (a.ops.size() != b.ops.size() || a.transfers.size() != b.transfers.size() ||
      a.collectives.size() != b.collectives.size())
    return false;
  for (size_t i = 0; i < a.ops.size(); ++i)
    if (a.ops[i].name != b.ops[i].name || a.ops[i].device != b.ops[i].device || a.ops[i].start != b.ops[i].start ||
        a.ops[i].duration != b.ops[i].duration)
      return false;
  for (size_t i = 0; i < a.transfers.size(); ++i)
    if (a.transfers[i].bytes != b.transfers[i].bytes || a.transfers[i].start != b.transfers[i].start ||
        a.transfers[i].duration != b.transfers[i].duration)
      return false;
  for (size_t i = 0; i < a.collectives.size(); ++i)
    if (a.collectives[i].bytes != b.collectives[i].bytes || a.collectives[i].ranks != b.collectives[i].ranks ||
        a.collectives[i].start != b.collectives[i].start || a.collectives[i].duration != b.collectives[i].duration)
      return false;
  return true;
}

using json = nlohmann::json;

/// The numeric fields the readers take: times, durations, sizes, counts, indices (not identifiers such as pid).
const char* const NUMERIC_KEYS[] = {"ts",   "dur",           "startTimeMicros", "durationMicros", "bytes",
                                    "size", "In msg nelems", "Out msg nelems",  "Group size",     "device"};

/// Values no such field can hold: NaN and infinity (as numbers in strings, as Chakra writes int64, or beyond a
/// double), negative values, -0, values beyond any trace; and for counts, a fraction.
const json BAD_VALUES[] = {"nan", "inf", "-inf", "1e999", json::parse("1e300"), -1, json::parse("-0.0"), "-0"};
const char* const COUNT_KEYS[] = {"bytes",      "size",   "In msg nelems", "Out msg nelems",
                                  "Group size", "device", "int64Val",      "uint64Val"};

/// Every numeric field of every event of a fixture, replaced by every bad value: the reader either refuses the trace
/// naming the field (its key, at the event's position), or, for an event it does not read, returns the same trace.
/// Returns how many were refused.
size_t feed_bad_numbers(const std::string& name, std::vector<json> events,
                        const std::function<std::string(const std::vector<json>&)>& text,
                        const std::function<Result<traces::Trace>(const std::string&)>& parse)
{
  auto original = parse(text(events));
  REQUIRE(original.ok());
  size_t refused = 0;
  // Calls `each` with every (object, key) holding a numeric field, args and Chakra's comm_size attr included.
  std::function<void(json&, const std::function<void(json&, const std::string&)>&)> walk =
      [&](json& o, const std::function<void(json&, const std::string&)>& each) {
        if (!o.is_object()) return;
        for (const char* k : NUMERIC_KEYS)
          if (o.contains(k) && (o[k].is_number() || o[k].is_string())) each(o, k);
        if (o.contains("args")) walk(o["args"], each);
        if (o.contains("attr") && o["attr"].is_array())
          for (auto& a : o["attr"])
            if (a.is_object() && a.value("name", "") == "comm_size")
              for (const char* k : {"int64Val", "uint64Val"})
                if (a.contains(k)) each(a, k);
      };
  for (size_t i = 0; i < events.size(); ++i) {
    std::vector<std::pair<json*, std::string>> fields;
    walk(events[i], [&](json& o, const std::string& k) { fields.push_back({&o, k}); });
    for (auto& [o, k] : fields) {
      const json keep = (*o)[k];
      std::vector<json> bads(std::begin(BAD_VALUES), std::end(BAD_VALUES));
      for (const char* c : COUNT_KEYS)
        if (k == c) bads.push_back(1.5);
      for (const auto& bad : bads) {
        (*o)[k] = bad;
        auto t = parse(text(events));
        INFO(name << " event " << i << " " << k << " = " << bad.dump());
        if (t.ok()) {
          CHECK(same(t.value(), original.value())); // an event the reader skips
        } else {
          ++refused;
          const std::string key = k == "int64Val" || k == "uint64Val" ? "comm_size" : k;
          CHECK(t.error().field.find(key) != std::string::npos);
          CHECK(t.error().file == "bad.json");
        }
      }
      (*o)[k] = keep;
    }
  }
  return refused;
}

} // namespace

TEST_CASE("every numeric field of every trace format refuses NaN, infinity, negatives and nonsense by name", "[traces]")
{
  // Chrome trace objects (TF timeline, Kineto): the events under traceEvents
  auto chrome = [](const char* file, auto parser) {
    const json root = json::parse(slurp(fixture(file)));
    std::vector<json> events = root["traceEvents"];
    auto text = [root](const std::vector<json>& ev) {
      json r = root;
      r["traceEvents"] = ev;
      return r.dump();
    };
    return feed_bad_numbers(file, events, text, [parser](const std::string& t) { return parser(t, "bad.json"); });
  };
  CHECK(chrome("tf_timeline.json", traces::parse_tf_timeline) > 20);
  CHECK(chrome("kineto.json", traces::parse_kineto) > 20);
  // Horovod: an array of events (the fixture is unterminated, as a running job leaves it)
  std::string hvd_text = slurp(fixture("horovod_timeline.json"));
  hvd_text = hvd_text.substr(0, hvd_text.find_last_not_of(" \n\r\t,") + 1);
  if (hvd_text.back() != ']') hvd_text += "]";
  std::vector<json> hvd = json::parse(hvd_text);
  CHECK(feed_bad_numbers(
            "horovod_timeline.json", hvd, [](const std::vector<json>& ev) { return json(ev).dump(); },
            [](const std::string& t) { return traces::parse_horovod_timeline(t, "bad.json"); }) > 20);
  // Chakra: concatenated objects, one per line
  std::vector<json> nodes;
  std::istringstream in(slurp(fixture("chakra.json")));
  while ((in >> std::ws).peek() != EOF) {
    json n;
    in >> n;
    nodes.push_back(n);
  }
  CHECK(feed_bad_numbers(
            "chakra.json", nodes,
            [](const std::vector<json>& ns) {
              std::string s;
              for (const auto& n : ns)
                s += n.dump() + "\n";
              return s;
            },
            [](const std::string& t) { return traces::parse_chakra(t, "bad.json"); }) > 20);
}

TEST_CASE("NaN and infinite timestamps and durations are refused with the event and the field", "[traces]")
{
  struct Bad {
    std::string text, field;
  } cases[] = {
      {R"({"traceEvents": [{"ph": "X", "name": "Conv2D", "ts": "nan", "dur": 5}]})", "traceEvents[0].ts"},
      {R"({"traceEvents": [{"ph": "X", "name": "Conv2D", "ts": 1, "dur": 5}, {"ph": "X", "name": "x", "ts": 2,
           "dur": "inf"}]})",
       "traceEvents[1].dur"},
      {R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": "1e999"}], "schemaVersion": 1})",
       "traceEvents[0].dur"},
      {R"([{"ph": "B", "name": "ALLREDUCE", "pid": 1, "ts": 1}, {"ph": "E", "pid": 1, "ts": "infinity"}])", "[1].ts"},
      {"{\"type\": \"COMP_NODE\", \"durationMicros\": \"5\"}\n{\"type\": \"COMP_NODE\", \"durationMicros\": \"nan\"}",
       "line 2: durationMicros"},
      {R"({"type": "COMP_NODE", "startTimeMicros": "-inf", "durationMicros": "5"})", "line 1: startTimeMicros"},
      // -0 would print as "-0.000000"
      {R"({"traceEvents": [{"ph": "X", "name": "x", "ts": 1, "dur": -0.0}]})", "traceEvents[0].dur"},
  };
  for (const auto& c : cases) {
    auto t = traces::parse_trace(c.text, "nan.json");
    INFO(c.text);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().file == "nan.json");
    CHECK(t.error().field == c.field);
  }
}

TEST_CASE("a key given twice in a trace event is refused with its path", "[traces]")
{
  auto tf =
      traces::parse_trace(R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2, "dur": 3}]})", "d.json");
  REQUIRE_FALSE(tf.ok());
  CHECK(tf.error().field == "traceEvents[0].dur");
  CHECK(tf.error().expected == "each key once in an object");
  auto hvd = traces::parse_trace(R"([{"ph": "B", "pid": 1, "ts": 1, "args": {"bytes": 4, "bytes": 8}}])", "d.json");
  REQUIRE_FALSE(hvd.ok());
  CHECK(hvd.error().field == "[0].args.bytes");
  auto chakra = traces::parse_trace("{\"type\": \"COMP_NODE\", \"durationMicros\": \"5\"}\n{\"type\": \"COMP_NODE\", "
                                    "\"durationMicros\": \"5\", \"type\": \"COMM_COLL_NODE\"}",
                                    "d.json");
  REQUIRE_FALSE(chakra.ok());
  CHECK(chakra.error().field == "line 2: type");
}
