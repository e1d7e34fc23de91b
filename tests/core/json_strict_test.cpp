// The strict JSON parser every reader of user files uses: the same document as json::parse, a key given twice in
// one object refused with its path, a number beyond a double refused at its path, concatenated objects one by one.
#include "core/common/json_strict.hpp"
#include "core/common/number_rule.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <functional>
#include <sstream>
#include <vector>

using namespace tp;

namespace {

/// The StrictError of parsing `text`, or nothing.
std::optional<json_strict::StrictError> refusal(const std::string& text)
{
  try {
    json_strict::parse(text);
  } catch (const json_strict::StrictError& e) {
    return e;
  }
  return std::nullopt;
}

} // namespace

TEST_CASE("strict JSON: the document json::parse builds, for every fixture and profile", "[quick]")
{
  for (const char* f : {"/tests/traces/fixtures/tf_timeline.json", "/tests/traces/fixtures/kineto.json",
                        "/validation/cases/cx3_roce_send_bw.json", "/models/hw/host/hkust-k40m-cx3.json",
                        "/scenarios/default.json", "/scenarios/sweeps/transfer-nic-transport.json"}) {
    std::ifstream in(std::string(TENSORPATH_SOURCE_DIR) + f);
    REQUIRE(in);
    std::ostringstream s;
    s << in.rdbuf();
    INFO(f);
    CHECK(json_strict::parse(s.str()) == nlohmann::json::parse(s.str()));
    CHECK(json_strict::parse<nlohmann::ordered_json>(s.str()) == nlohmann::ordered_json::parse(s.str()));
  }
}

TEST_CASE("strict JSON: a key given twice in one object is refused with its path", "[quick]")
{
  struct Case {
    const char* text;
    const char* path;
  } cases[] = {
      {R"({"a": 1, "a": 2})", "a"},
      {R"({"a": 1, "b": {"c": [1, {"d": 2, "d": 3}]}})", "b.c[1].d"},
      {R"([{"x": 1}, {"y": {"z": 1, "z": 2}}])", "[1].y.z"},
      {R"({"nics": [{"model": "a"}, {"model": "b", "socket": 0, "model": "c"}]})", "nics[1].model"},
      {R"({"": 1, "": 2})", ""},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto e = refusal(c.text);
    REQUIRE(e);
    CHECK(e->path == c.path);
    CHECK(e->expected == "each key once in an object");
    CHECK(e->got.find("again") != std::string::npos);
  }
  // the same key in different objects is fine, and so is an ordered document (sweeps keep their axes' order)
  CHECK_FALSE(refusal(R"({"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}]})"));
  CHECK_THROWS_AS(json_strict::parse<nlohmann::ordered_json>(R"({"axes": {"size": [1], "size": [2]}})"),
                  json_strict::StrictError);
}

TEST_CASE("strict JSON: a number beyond a double is refused at its path, malformed JSON as json::parse", "[quick]")
{
  auto e = refusal(R"({"q": [{"a": [1, 1e400]}]})");
  REQUIRE(e);
  CHECK(e->path == "q[0].a[1]");
  CHECK(e->got == "1e400");
  auto top = refusal("-1e999");
  REQUIRE(top);
  CHECK(top->path.empty());
  CHECK_THROWS_AS(json_strict::parse(std::string(R"({"a": )")), nlohmann::json::parse_error);
  CHECK_THROWS_AS(json_strict::parse(std::string(R"({"a": NaN})")), nlohmann::json::parse_error);
}

TEST_CASE("strict JSON: concatenated objects from a stream, one at a time", "[quick]")
{
  std::istringstream in("{\"a\": 1} {\"b\": 2}\n{\"c\": 3, \"c\": 4}");
  CHECK(json_strict::parse(in, false) == nlohmann::json{{"a", 1}});
  in >> std::ws;
  CHECK(json_strict::parse(in, false) == nlohmann::json{{"b", 2}});
  in >> std::ws;
  CHECK_THROWS_AS(json_strict::parse(in, false), json_strict::StrictError);
}

TEST_CASE("the number rule: finite, in range, no negative sign where none is allowed", "[quick]")
{
  CHECK(number_ok(0, 0, 1));
  CHECK(number_ok(1, 0, 1));
  CHECK(number_ok(-5, -10, 10));
  CHECK_FALSE(number_ok(-0.0, 0, 1)); // prints as "-0.000000"
  CHECK(number_ok(-0.0, -1, 1));
  CHECK_FALSE(number_ok(NAN, 0, 1));
  CHECK_FALSE(number_ok(INFINITY, 0, INFINITY));
  CHECK_FALSE(number_ok(-INFINITY, -INFINITY, 0));
  CHECK_FALSE(number_ok(1.0000001, 0, 1));
  CHECK_FALSE(number_ok(-1e-300, 0, 1));
  CHECK(number_text(1e15) == "1e+15");
  CHECK(number_text(0.001) == "0.001");
  CHECK(number_text(-0.0) == "-0");
  CHECK(number_text(NAN) == "NaN");
  CHECK(range_text(0, 3600) == "a number in [0, 3600]");
}

namespace {

/// What json_strict::parse makes of `text`: the document, or the error's kind and text (path, byte, reason).
std::string outcome(const std::function<nlohmann::json()>& parse)
{
  try {
    return "ok " + parse().dump();
  } catch (const json_strict::StrictError& e) {
    return std::string("strict ") + e.what();
  } catch (const nlohmann::json::exception& e) {
    return std::string("json ") + e.what();
  }
}

} // namespace

TEST_CASE("strict JSON streaming: each element of the top-level array once, in order, with the same errors, paths "
          "and byte offsets as the whole parse",
          "[quick]")
{
  const std::string texts[] = {
      // keys before and after the array; an array named the same deeper down is not streamed
      R"({"a": {"traceEvents": [1, 2]}, "traceEvents": [{"x": {"traceEvents": [3]}}, 4, [5, 6], {}], "z": 7})",
      R"({"traceEvents": [], "b": 1})",
      R"({"traceEvents": {"not": "an array"}})",
      R"([{"traceEvents": [1]}])",
      // errors: each must read as the whole parse's, the element index counted over elements already handed over
      R"({"traceEvents": [{"ts": 1}, {"ts": 2}, {"ts": 3, "ts": 4}]})",
      R"({"traceEvents": [{"ts": 1}, {"ts": 2}, {"args": {"n": [0, 1e400]}}]})",
      R"({"traceEvents": [{"ts": 1}, {"ts": 2}, 1e400]})",
      R"({"traceEvents": [{"ts": 1}, {"ts": 2}], "traceEvents": []})",
      R"({"traceEvents": [{"ts": 1}, {"ts": 2}, {"ts": NaN}]})",
      R"({"traceEvents": [{"ts": 1}, {"ts": 2}], "d": {"rank": 1, "rank": 2}})",
      R"({"traceEvents": [{"ts": 1}, {"ts": 2}, {"ts": )",
  };
  for (const std::string& text : texts) {
    INFO(text);
    nlohmann::json streamed = nlohmann::json::array();
    std::vector<size_t> indices;
    const std::string got = outcome([&] {
      auto doc = json_strict::parse_streaming<nlohmann::json>(text, "traceEvents", [&](size_t i, nlohmann::json&& e) {
        indices.push_back(i);
        streamed.push_back(std::move(e));
      });
      // put the elements back: the document json::parse builds
      if (doc.is_object() && doc.contains("traceEvents") && doc["traceEvents"].is_array()) {
        CHECK(doc["traceEvents"].empty());
        doc["traceEvents"] = streamed;
      } else {
        CHECK(streamed.empty());
      }
      return doc;
    });
    CHECK(got == outcome([&] { return json_strict::parse(text); }));
    for (size_t k = 0; k < indices.size(); ++k)
      CHECK(indices[k] == k);
  }
}
