// Chakra execution traces in both forms: the protobuf `.et` (tests/traces/fixtures/chakra.et, written by
// tests/traces/make_chakra_fixture.py; nodes built here with protoc's code, as Chakra's converter builds them) and the
// JSON form (each message through protobuf's MessageToJsonString, as chakra_jsonizer writes it); proto3's omitted
// zeros, missing attributes, cut-off and corrupt files, detection by content. Also TF RecvTensor events without a size.
#include "core/common/gzip_input.hpp"
#include "traces/trace.hpp"

#include "et_def.pb.h"

#include <catch2/catch.hpp>
#include <google/protobuf/util/json_util.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include <unistd.h>

using namespace tp;

namespace {

std::string fixture(const std::string& name)
{
  return std::string(TENSORPATH_SOURCE_DIR) + "/tests/traces/fixtures/" + name;
}

std::string slurp(const std::string& path)
{
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void put_varint(std::string& out, uint64_t v)
{
  while (v >= 0x80) {
    out.push_back(char((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}

/// A `.et` as Chakra's protolib.encodeMessage frames it: each message after its length as a varint.
std::string et(const ChakraProtoMsg::GlobalMetadata& meta, const std::vector<ChakraProtoMsg::Node>& nodes)
{
  std::string out;
  for (const google::protobuf::Message* m : std::vector<const google::protobuf::Message*>{&meta}) {
    const std::string b = m->SerializeAsString();
    put_varint(out, b.size());
    out += b;
  }
  for (const auto& n : nodes) {
    const std::string b = n.SerializeAsString();
    put_varint(out, b.size());
    out += b;
  }
  return out;
}

/// The message boundaries of a framed stream (offset of each length), and the stream re-written as chakra_jsonizer
/// writes it: MessageToJson of each message, concatenated.
std::vector<size_t> boundaries(const std::string& s, std::string* json_form = nullptr)
{
  std::vector<size_t> at;
  size_t pos = 0;
  bool first = true;
  while (pos < s.size()) {
    at.push_back(pos);
    uint64_t len = 0;
    for (int shift = 0;; shift += 7) {
      const uint8_t b = uint8_t(s[pos++]);
      len |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    if (json_form) {
      std::string j;
      google::protobuf::util::JsonPrintOptions opt;
      opt.add_whitespace = true;
      if (first) {
        ChakraProtoMsg::GlobalMetadata g;
        REQUIRE(g.ParseFromString(s.substr(pos, len)));
        REQUIRE(google::protobuf::util::MessageToJsonString(g, &j, opt).ok());
      } else {
        ChakraProtoMsg::Node n;
        REQUIRE(n.ParseFromString(s.substr(pos, len)));
        REQUIRE(google::protobuf::util::MessageToJsonString(n, &j, opt).ok());
      }
      *json_form += j;
    }
    first = false;
    pos += len;
  }
  at.push_back(s.size());
  return at;
}

ChakraProtoMsg::Node coll(uint64_t id, ChakraProtoMsg::CollectiveCommType kind, std::optional<int64_t> size,
                          uint64_t dur)
{
  ChakraProtoMsg::Node n;
  n.set_id(id);
  n.set_name("ncclKernel_" + std::to_string(id));
  n.set_type(ChakraProtoMsg::COMM_COLL_NODE);
  n.set_duration_micros(dur);
  auto* t = n.add_attr();
  t->set_name("comm_type");
  t->set_int64_val(kind);
  if (size) {
    auto* s = n.add_attr();
    s->set_name("comm_size");
    s->set_int64_val(*size);
  }
  return n;
}

bool has_warning(const traces::Trace& t, const std::string& needle)
{
  for (const auto& w : t.warnings)
    if (w.find(needle) != std::string::npos) return true;
  return false;
}

} // namespace

TEST_CASE("Chakra .et: every collective kind, send and receive, proto3's omitted zeros, starts from data deps",
          "[traces]")
{
  const std::string bytes = slurp(fixture("chakra.et"));
  auto t = traces::parse_trace(bytes, "trace.json"); // by content: the name says JSON
  REQUIRE(t.ok());
  CHECK(t->format == "chakra");
  struct Want {
    const char* kind;
    uint64_t bytes;
    double start_us, dur_us;
  } want[] = {{"allreduce", 9437184, 2600, 2600}, // comm_type 0 (ALL_REDUCE), written as a oneof member
              {"allgather", 4194304, 5200, 500},  {"reducescatter", 2097152, 5200, 400},
              {"broadcast", 212480, 5700, 100}, // after both of its deps (ends 5700 and 5600)
              {"alltoall", 65536, 5800, 300},     {"allreduce", 0, 6100, 50}};
  REQUIRE(t->collectives.size() == std::size(want));
  for (size_t i = 0; i < std::size(want); ++i) {
    INFO(i);
    CHECK(t->collectives[i].kind == want[i].kind);
    CHECK(t->collectives[i].bytes == want[i].bytes);
    CHECK(t->collectives[i].start == Approx(want[i].start_us * 1e-6));
    CHECK(t->collectives[i].duration == Approx(want[i].dur_us * 1e-6));
  }
  CHECK(t->collectives[0].group == "0");
  // the node without comm_size: unknown, with a named warning, never 0 bytes as if known
  CHECK_FALSE(t->collectives[5].bytes_known);
  for (size_t i = 0; i < 5; ++i)
    CHECK(t->collectives[i].bytes_known);
  CHECK(has_warning(t.value(), "node 8 \"ncclKernel_AllReduce_no_size\") has no comm_size"));
  CHECK(t->warnings.size() == 1);
  // node id 0 (not written) is the first op, and node 2's data dependency on it holds
  REQUIRE(t->ops.size() == 4);
  CHECK(t->ops[0].name == "aten::conv2d");
  CHECK(t->ops[0].start == 0);
  CHECK(t->ops[1].start == Approx(900e-6));
  CHECK(t->ops[2].name == "c10d::allreduce_"); // COMM_COLL_NODE with is_cpu_op: compute
  CHECK(t->ops[3].name == "aten::view");
  CHECK(t->ops[3].duration == 0); // no duration written: proto3's zero
  REQUIRE(t->transfers.size() == 2);
  CHECK(t->transfers[0].src_device == "rank 0");
  CHECK(t->transfers[0].dst_device == "rank 1");
  CHECK(t->transfers[0].bytes == 1048576);
  CHECK(t->transfers[1].src_device == "rank 1"); // a receive whose send is in another rank's file
  CHECK(t->transfers[1].bytes == 65536);
}

TEST_CASE("Chakra JSON as chakra_jsonizer writes it reads as the same trace as the .et it came from", "[traces]")
{
  for (const std::string& path : {fixture("chakra.et"), fixture("real/chakra_feeder_rank0.et.gz")}) {
    INFO(path);
    auto from_et = traces::read_trace(path);
    REQUIRE(from_et.ok());
    std::string bytes = slurp(path);
    if (io::is_gzip(bytes)) {
      auto inflated = io::gunzip_capped(bytes, path, "trace file", 64u << 20);
      REQUIRE(inflated.ok());
      bytes = inflated.value();
    }
    std::string json_form;
    boundaries(bytes, &json_form);
    auto from_json = traces::parse_trace(json_form, "trace.json");
    REQUIRE(from_json.ok());
    CHECK(from_json->format == "chakra");
    REQUIRE(from_json->collectives.size() == from_et->collectives.size());
    for (size_t i = 0; i < from_et->collectives.size(); ++i) {
      CHECK(from_json->collectives[i].kind == from_et->collectives[i].kind);
      CHECK(from_json->collectives[i].bytes == from_et->collectives[i].bytes);
      CHECK(from_json->collectives[i].bytes_known == from_et->collectives[i].bytes_known);
      CHECK(from_json->collectives[i].start == from_et->collectives[i].start);
      CHECK(from_json->collectives[i].duration == from_et->collectives[i].duration);
    }
    REQUIRE(from_json->ops.size() == from_et->ops.size());
    for (size_t i = 0; i < from_et->ops.size(); ++i) {
      CHECK(from_json->ops[i].name == from_et->ops[i].name);
      CHECK(from_json->ops[i].start == from_et->ops[i].start);
      CHECK(from_json->ops[i].duration == from_et->ops[i].duration);
    }
    REQUIRE(from_json->transfers.size() == from_et->transfers.size());
    for (size_t i = 0; i < from_et->transfers.size(); ++i) {
      CHECK(from_json->transfers[i].bytes == from_et->transfers[i].bytes);
      CHECK(from_json->transfers[i].src_device == from_et->transfers[i].src_device);
    }
    CHECK(from_json->warnings.size() == from_et->warnings.size());
  }
}

TEST_CASE("Chakra JSON: omitted zeros and missing attributes by the same rules as the .et", "[traces]")
{
  // MessageToJson leaves out id 0, a zero duration, a zero start and INVALID_NODE; attrs without a value are unset
  const std::string text = R"({"version": "0.0.4"}
{"name": "aten::mm", "type": "COMP_NODE", "durationMicros": "40"}
{"id": "1", "name": "nccl:all_gather", "type": "COMM_COLL_NODE", "dataDeps": ["0"],
 "attr": [{"name": "comm_type", "int64Val": "2"}]}
{"id": "2", "name": "no_kind", "type": "COMM_COLL_NODE", "dataDeps": ["1"], "durationMicros": "7",
 "attr": [{"name": "comm_size", "int64Val": "0"}, {"name": "comm_type"}]}
{"id": "3", "name": "untyped"}
{"id": "4", "name": "reduce_scatter by name", "type": "COMM_COLL_NODE", "durationMicros": "3",
 "attr": [{"name": "comm_type", "stringVal": "REDUCE_SCATTER"}, {"name": "comm_size", "uint64Val": "64"}]}
{"id": "5", "name": "dangling", "type": "COMP_NODE", "dataDeps": ["99"], "durationMicros": "1"}
)";
  auto t = traces::parse_trace(text, "nodes.json");
  REQUIRE(t.ok());
  REQUIRE(t->collectives.size() == 3);
  CHECK(t->collectives[0].kind == "allgather");
  CHECK_FALSE(t->collectives[0].bytes_known);      // no comm_size: unknown
  CHECK(t->collectives[0].start == Approx(40e-6)); // after node 0 (no id written), which lasts 40 us
  CHECK(t->collectives[0].duration == 0);          // no durationMicros: 0
  CHECK(t->collectives[1].kind == "collective");   // comm_type without a value: unknown kind
  CHECK(t->collectives[1].bytes_known);            // comm_size 0 written: a real 0 bytes
  CHECK(t->collectives[1].bytes == 0);
  CHECK(t->collectives[2].kind == "reducescatter");
  CHECK(t->collectives[2].bytes == 64);
  CHECK(has_warning(t.value(), "node 1 \"nccl:all_gather\") has no comm_size"));
  CHECK(has_warning(t.value(), "node 2 \"no_kind\") has no comm_type"));
  CHECK(has_warning(t.value(), "node 3 \"untyped\") is a INVALID_NODE"));
  CHECK(has_warning(t.value(), "depends on node 99, which the file lacks"));
  REQUIRE(t->ops.size() == 2);
}

TEST_CASE("Chakra .et built as Chakra's converter builds it: omitted zeros, no comm_size, unknown fields", "[traces]")
{
  ChakraProtoMsg::GlobalMetadata meta;
  meta.set_version("0.0.4");
  std::vector<ChakraProtoMsg::Node> nodes = {coll(0, ChakraProtoMsg::ALL_REDUCE, 0, 0), // every scalar zero
                                             coll(1, ChakraProtoMsg::BROADCAST, std::nullopt, 12),
                                             coll(2, ChakraProtoMsg::ALL_TO_ALL, 1 << 20, 5)};
  nodes[2].add_data_deps(1);
  nodes[2].GetReflection()->MutableUnknownFields(&nodes[2])->AddVarint(99, 7); // a field a later schema might add
  auto t = traces::parse_chakra_et(et(meta, nodes), "built.et");
  REQUIRE(t.ok());
  REQUIRE(t->collectives.size() == 3);
  CHECK(t->collectives[0].kind == "allreduce");
  CHECK(t->collectives[0].bytes_known); // comm_size 0 is written (a oneof member): known, 0 bytes
  CHECK(t->collectives[0].bytes == 0);
  CHECK(t->collectives[0].duration == 0);
  CHECK_FALSE(t->collectives[1].bytes_known);
  CHECK(t->collectives[1].kind == "broadcast");
  CHECK(t->collectives[2].kind == "alltoall");
  CHECK(t->collectives[2].bytes == 1u << 20);
  CHECK(t->collectives[2].start == Approx(12e-6));
  CHECK(has_warning(t.value(), "has no comm_size"));
  CHECK(has_warning(t.value(), "fields Chakra's schema does not define"));
  // a negative comm_size is refused by name
  nodes[2].mutable_attr(1)->set_int64_val(-5);
  auto bad = traces::parse_chakra_et(et(meta, nodes), "built.et");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().field.find("attr.comm_size") != std::string::npos);
  // a dependency cycle is refused, naming a node on it
  nodes[2].mutable_attr(1)->set_int64_val(8);
  nodes[1].add_data_deps(2);
  auto cyc = traces::parse_chakra_et(et(meta, nodes), "built.et");
  REQUIRE_FALSE(cyc.ok());
  CHECK(cyc.error().message().find("cycle") != std::string::npos);
}

TEST_CASE("Chakra .et cut anywhere: a clear error at the byte offset of the cut message, or the whole messages",
          "[traces]")
{
  const std::string bytes = slurp(fixture("chakra.et"));
  const auto at = boundaries(bytes);
  REQUIRE(at.size() == 14); // metadata, 12 nodes, the end
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    INFO("cut at " << cut);
    auto t = traces::parse_chakra_et(bytes.substr(0, cut), "cut.et");
    // the message the cut falls in (or the first one after the metadata when the cut is at a boundary)
    size_t k = 0;
    while (at[k + 1] <= cut)
      ++k;
    if (cut == at[k] && k >= 2) {
      REQUIRE(t.ok()); // whole messages: the nodes before the cut
      CHECK(t->ops.size() + t->collectives.size() + t->transfers.size() <= 12);
      continue;
    }
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().file == "cut.et");
    if (cut == 0) // an empty file
      CHECK(t.error().field == "byte 0");
    else if (cut == at[k]) // nothing after the metadata
      CHECK(t.error().expected.find("Node messages") != std::string::npos);
    else {
      CHECK(t.error().field == "byte " + std::to_string(at[k]));
      CHECK(t.error().got.find("cut short") != std::string::npos);
    }
  }
  // a length varint cut in its middle: one byte of a two-byte length
  std::string big = bytes.substr(0, at[1]);
  ChakraProtoMsg::Node n;
  n.set_name(std::string(200, 'x'));
  n.set_type(ChakraProtoMsg::COMP_NODE);
  put_varint(big, n.ByteSizeLong());
  auto t = traces::parse_chakra_et(big.substr(0, at[1] + 1), "cut.et");
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().field == "byte " + std::to_string(at[1]));
  CHECK(t.error().got.find("ends inside") != std::string::npos);
}

TEST_CASE("Chakra .et: corrupt bytes are an error at the message's offset, found by content not by name", "[traces]")
{
  const std::string bytes = slurp(fixture("chakra.et"));
  const auto at = boundaries(bytes);
  std::string bad = bytes;
  bad[at[3] + 1] = char(0xff); // the third node's first tag: field 31, wire type 7 (no such type)
  auto t = traces::parse_trace(bad, "bad.et");
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().field == "byte " + std::to_string(at[3]));
  CHECK(t.error().expected.find("Chakra Node") != std::string::npos);
  // a metadata message whose length byte reads as '{' (123): still a .et, not JSON
  ChakraProtoMsg::GlobalMetadata meta;
  meta.set_version(std::string(121, 'v'));
  REQUIRE(meta.ByteSizeLong() == 123);
  const std::string brace = et(meta, {coll(1, ChakraProtoMsg::ALL_GATHER, 256, 4)});
  REQUIRE(brace[0] == '{');
  auto b = traces::parse_trace(brace, "brace.json");
  REQUIRE(b.ok());
  REQUIRE(b->collectives.size() == 1);
  CHECK(b->collectives[0].bytes == 256);
  // a name not in UTF-8 (proto3 strings must be): an Error at its message, and nothing from libprotobuf on stderr
  auto latin1 = coll(1, ChakraProtoMsg::ALL_GATHER, 256, 4);
  latin1.set_name("caf\xe9");
  const std::string latin1_et = et(meta, {coll(0, ChakraProtoMsg::ALL_REDUCE, 8, 1), latin1});
  const std::string err_path = "/tmp/tp-chakra-stderr-" + std::to_string(::getpid());
  std::fflush(stderr);
  const int saved = ::dup(2);
  FILE* sink = std::fopen(err_path.c_str(), "w");
  REQUIRE(sink);
  ::dup2(::fileno(sink), 2);
  auto u = traces::parse_trace(latin1_et, "latin1.et");
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::fclose(sink);
  REQUIRE_FALSE(u.ok());
  CHECK(u.error().field == "byte " + std::to_string(boundaries(latin1_et)[2]));
  CHECK(u.error().got.find("UTF-8") != std::string::npos);
  CHECK(slurp(err_path).empty());
  std::remove(err_path.c_str());
  // binary that is no .et names the byte and what was expected
  auto junk = traces::parse_trace(std::string("\x05\x01\x02", 3), "junk.bin");
  REQUIRE_FALSE(junk.ok());
  CHECK(junk.error().field == "byte 0");
}

TEST_CASE("TF timeline: a RecvTensor without a size takes it from the same tensor's other RecvTensors, or is kept as "
          "unknown with a warning",
          "[traces]")
{
  const std::string text = R"({"traceEvents": [
 {"ph": "X", "name": "RecvTensor", "ts": 10, "dur": 5, "pid": 1,
  "args": {"name": "[4.0MB] [1.2Gb/s] edge_5_w from /job:ps/task:0/device:CPU:0 to /job:worker/task:0/device:GPU:0"}},
 {"ph": "X", "name": "RecvTensor", "ts": 110, "dur": 5, "pid": 1,
  "args": {"name": "edge_5_w from /job:ps/task:0/device:CPU:0 to /job:worker/task:0/device:GPU:0"}},
 {"ph": "X", "name": "RecvTensor", "ts": 120, "dur": 6, "pid": 1,
  "args": {"name": "edge_9_b from /job:ps/task:0/device:CPU:0 to /job:worker/task:0/device:GPU:0"}},
 {"ph": "X", "name": "RecvTensor", "ts": 130, "dur": 7, "pid": 1}
]})";
  auto t = traces::parse_tf_timeline(text, "tf.json");
  REQUIRE(t.ok());
  REQUIRE(t->transfers.size() == 4); // none dropped
  CHECK(t->transfers[1].tensor == "edge_5_w");
  CHECK(t->transfers[1].bytes_known);
  CHECK(t->transfers[1].bytes == 4ull << 20); // from the first RecvTensor of the same tensor and devices
  CHECK_FALSE(t->transfers[2].bytes_known);   // no other RecvTensor of edge_9_b
  CHECK(t->transfers[2].src_device == "/job:ps/task:0/device:CPU:0");
  CHECK_FALSE(t->transfers[3].bytes_known); // no label at all
  CHECK(t->transfers[3].duration == Approx(7e-6));
  CHECK(has_warning(t.value(), "traceEvents[1] RecvTensor \"edge_5_w\" carries no size: taken as 4194304 B"));
  CHECK(has_warning(t.value(), "traceEvents[2] RecvTensor \"edge_9_b\" carries no size: its size is unknown"));
  CHECK(has_warning(t.value(), "traceEvents[3] RecvTensor \"?\" carries no size: its size is unknown"));
}
