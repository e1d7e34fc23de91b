// The Chrome trace writer (traces/chrome_trace_writer.hpp) that training and replay write through: processes and
// tracks numbered on first use and named once, shared tracks named in every process, spans in microseconds, async
// pairs with one id each, and the exact text (the training and replay traces are compared byte for byte).
#include "traces/chrome_trace_writer.hpp"

#include <catch2/catch.hpp>

using namespace tp;
using json = nlohmann::json;

TEST_CASE("chrome trace writer: processes and tracks numbered on first use and named once", "[quick]")
{
  traces::ChromeTraceWriter w;
  const int a = w.process("host a"), b = w.process("host b");
  CHECK(a == 1);
  CHECK(b == 2);
  CHECK(w.process("host a") == 1);
  CHECK(w.track(a, "GPU:0") == 1);
  CHECK(w.track(b, "GPU:0") == 2); // per process: same name, another track
  CHECK(w.track(a, "GPU:0") == 1);
  const auto doc = json::parse(w.text());
  const auto& ev = doc.at("traceEvents");
  REQUIRE(ev.size() == 4); // two process names, two thread names
  CHECK(ev[0] == json{{"ph", "M"}, {"name", "process_name"}, {"pid", 1}, {"args", {{"name", "host a"}}}});
  CHECK(ev[3] == json{{"ph", "M"}, {"name", "thread_name"}, {"pid", 2}, {"tid", 2}, {"args", {{"name", "GPU:0"}}}});
  CHECK(doc.at("displayTimeUnit") == "ms");
  CHECK_FALSE(doc.contains("otherData"));
}

TEST_CASE("chrome trace writer: shared tracks, spans in microseconds, async pairs and the exact text", "[quick]")
{
  traces::ChromeTraceWriter w;
  const int rec = w.process("recorded"), rep = w.process("replayed");
  w.sort_process(rec, 0);
  const int steps = w.shared_track("steps");
  CHECK(w.shared_track("steps") == steps);
  w.span(rep, steps, "step 1", "step", 0.5, 0.25, {{"partial", false}});
  w.async_span(rec, steps, "t", "transfer", 1, 2, {{"bytes", 8}});
  w.async_span(rec, steps, "u", "transfer", 3, 4, json::object());
  CHECK(
      w.text({{"transport", "grpc"}}) ==
      R"({"displayTimeUnit":"ms","otherData":{"transport":"grpc"},"traceEvents":[)"
      R"({"args":{"name":"recorded"},"name":"process_name","ph":"M","pid":1},)"
      R"({"args":{"name":"replayed"},"name":"process_name","ph":"M","pid":2},)"
      R"({"args":{"sort_index":0},"name":"process_sort_index","ph":"M","pid":1},)"
      R"({"args":{"name":"steps"},"name":"thread_name","ph":"M","pid":1,"tid":1},)"
      R"({"args":{"name":"steps"},"name":"thread_name","ph":"M","pid":2,"tid":1},)"
      R"({"args":{"partial":false},"cat":"step","dur":250000.0,"name":"step 1","ph":"X","pid":2,"tid":1,"ts":500000.0},)"
      R"({"args":{"bytes":8},"cat":"transfer","id":1,"name":"t","ph":"b","pid":1,"tid":1,"ts":1000000.0},)"
      R"({"cat":"transfer","id":1,"name":"t","ph":"e","pid":1,"tid":1,"ts":2000000.0},)"
      R"({"args":{},"cat":"transfer","id":2,"name":"u","ph":"b","pid":1,"tid":1,"ts":3000000.0},)"
      R"({"cat":"transfer","id":2,"name":"u","ph":"e","pid":1,"tid":1,"ts":4000000.0}]})");
}
