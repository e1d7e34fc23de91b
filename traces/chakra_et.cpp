// Chakra execution traces in their protobuf form (`.et`, as Chakra's converter writes them through protoio's
// encodeMessage): a stream of messages, each preceded by its length as a varint; first a GlobalMetadata, then Node
// messages. Each message is parsed by the code protoc generates from Chakra's schema (traces/et_def.proto), one
// message at a time, so reading is linear in the file's size. Errors name the byte offset of the message (or of the
// length that could not be read). Nodes go through the rules shared with the JSON form (chakra_nodes.hpp).
#include "traces/chakra_nodes.hpp"
#include "traces/json_events.hpp"
#include "traces/trace.hpp"

#include "et_def.pb.h"

#include <google/protobuf/stubs/logging.h>

#include <set>

namespace tp::traces {

using namespace detail;

namespace {

/// The varint at `pos` (at most 10 bytes, a uint64). Returns false when the text ends inside it or it is longer.
bool read_varint(const std::string& s, size_t& pos, uint64_t& out, bool& cut)
{
  out = 0;
  cut = false;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= s.size()) {
      cut = true;
      return false;
    }
    const uint8_t b = uint8_t(s[pos++]);
    out |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

/// The next message's bytes: [start, start + size) after the length at `pos`; an Error naming the offset when the
/// length cannot be read or the file ends before the message does.
Result<std::pair<size_t, size_t>> next_message(const std::string& s, size_t& pos, const std::string& file,
                                               const std::string& what)
{
  const size_t at = pos;
  uint64_t size = 0;
  bool cut = false;
  if (!read_varint(s, pos, size, cut))
    return Error::at(file, "byte " + std::to_string(at), "the length (a varint) of " + what,
                     cut ? "the file ends inside it (cut short?)" : "a varint longer than 10 bytes");
  if (size > s.size() - pos)
    return Error::at(file, "byte " + std::to_string(at),
                     what + " of " + std::to_string(size) + " bytes (its length says so)",
                     "only " + std::to_string(s.size() - pos) + " bytes left in the file (cut short?)");
  const size_t start = pos;
  pos += size_t(size);
  return std::pair<size_t, size_t>{start, size_t(size)};
}

bool has_unknown_fields(const google::protobuf::Message& m)
{
  return !m.GetReflection()->GetUnknownFields(m).empty();
}

/// An attribute's value when it is an integer of any of the schema's kinds; false for other kinds and unset.
bool integer_of(const ChakraProtoMsg::AttributeProto& a, long double& out)
{
  using A = ChakraProtoMsg::AttributeProto;
  switch (a.value_case()) {
  case A::kInt32Val:
    out = a.int32_val();
    return true;
  case A::kInt64Val:
    out = (long double)a.int64_val();
    return true;
  case A::kUint32Val:
    out = a.uint32_val();
    return true;
  case A::kUint64Val:
    out = (long double)a.uint64_val();
    return true;
  case A::kSint32Val:
    out = a.sint32_val();
    return true;
  case A::kSint64Val:
    out = (long double)a.sint64_val();
    return true;
  case A::kFixed32Val:
    out = a.fixed32_val();
    return true;
  case A::kFixed64Val:
    out = (long double)a.fixed64_val();
    return true;
  case A::kSfixed32Val:
    out = a.sfixed32_val();
    return true;
  case A::kSfixed64Val:
    out = (long double)a.sfixed64_val();
    return true;
  default:
    return false;
  }
}

/// A Node message into the shared shape; an Error for a number out of its range.
Result<bool> decode_node(const ChakraProtoMsg::Node& m, const std::string& file, const std::string& where,
                         ChakraNode& n, Warnings& warn)
{
  n.where = where;
  n.id = m.id();
  n.name = m.name();
  n.type = int(m.type()); // proto3 enums are open: an unknown value is kept, and reported by chakra_trace
  n.data_deps.assign(m.data_deps().begin(), m.data_deps().end());
  if (!number_ok(double(m.start_time_micros()), 0, MAX_TIMESTAMP_US))
    return Error::at(file, where + ": start_time_micros", range_text(0, MAX_TIMESTAMP_US, "a number"),
                     std::to_string(m.start_time_micros()));
  if (!number_ok(double(m.duration_micros()), 0, MAX_DURATION_US))
    return Error::at(file, where + ": duration_micros", range_text(0, MAX_DURATION_US, "a number"),
                     std::to_string(m.duration_micros()));
  n.start_us = double(m.start_time_micros());
  n.duration_us = double(m.duration_micros());
  if (has_unknown_fields(m))
    warn.add("chakra: unknown fields", "chakra: " + where + " (node " + std::to_string(m.id()) +
                                           ") has fields Chakra's schema does not define: ignored");
  for (const auto& a : m.attr()) {
    const std::string& key = a.name();
    if (key == "is_cpu_op" && a.value_case() == ChakraProtoMsg::AttributeProto::kBoolVal) n.is_cpu_op = a.bool_val();
    if (key != "comm_size" && key != "comm_type" && key != "comm_src" && key != "comm_dst" && key != "pg_name")
      continue;
    if (a.value_case() == ChakraProtoMsg::AttributeProto::VALUE_NOT_SET) continue; // no value: as if absent
    if (key == "pg_name") {
      if (a.value_case() == ChakraProtoMsg::AttributeProto::kStringVal) n.pg_name = a.string_val();
      continue;
    }
    if (key == "comm_type" && a.value_case() == ChakraProtoMsg::AttributeProto::kStringVal) {
      n.comm_type_name = a.string_val();
      continue;
    }
    long double v = 0;
    const bool count = key == "comm_size";
    if (!integer_of(a, v) || v < 0 || (count && v > (long double)MAX_COUNT) || (!count && v > 1e9))
      return Error::at(file, where + ": attr." + key,
                       count                ? "bytes (an integer, 0 <= comm_size < 2^53)"
                       : key == "comm_type" ? "Chakra's CollectiveCommType (an integer or a name)"
                                            : "a rank (an integer >= 0)",
                       integer_of(a, v) ? std::to_string((long long)v) : "a value of another kind");
    if (count)
      n.comm_size = uint64_t(v);
    else if (key == "comm_type")
      n.comm_type = int64_t(v);
    else
      (key == "comm_src" ? n.comm_src : n.comm_dst) = int64_t(v);
  }
  return true;
}

} // namespace

bool looks_like_chakra_et(const std::string& s)
{
  // libprotobuf logs a failed parse (a string field not in UTF-8) to stderr: detection tries any input, say nothing
  const google::protobuf::LogSilencer quiet;
  size_t pos = 0;
  auto meta = next_message(s, pos, "", "");
  if (!meta.ok() || meta->second > size_t(INT32_MAX)) return false;
  ChakraProtoMsg::GlobalMetadata g;
  if (!g.ParseFromArray(s.data() + meta->first, int(meta->second)) || has_unknown_fields(g)) return false;
  for (const auto& a : g.attr())
    if (has_unknown_fields(a)) return false;
  if (pos == s.size()) return meta->second > 0; // metadata alone (a lone zero byte is not a trace)
  auto first = next_message(s, pos, "", "");
  if (!first.ok() || first->second > size_t(INT32_MAX)) return false;
  ChakraProtoMsg::Node n;
  return n.ParseFromArray(s.data() + first->first, int(first->second)) && !has_unknown_fields(n);
}

Result<Trace> parse_chakra_et(const std::string& s, const std::string& file)
{
  const google::protobuf::LogSilencer quiet; // a message that does not parse is our Error, not libprotobuf's log line
  size_t pos = 0;
  auto meta = next_message(s, pos, file, "Chakra's GlobalMetadata message (a Chakra protobuf execution trace)");
  if (!meta.ok()) return meta.error();
  ChakraProtoMsg::GlobalMetadata g;
  if (meta->second > size_t(INT32_MAX) || !g.ParseFromArray(s.data() + meta->first, int(meta->second)))
    return Error::at(file, "byte 0",
                     "Chakra's GlobalMetadata message (a Chakra protobuf execution trace: a length, then the message)",
                     "bytes that are not one (malformed, or a text field not in UTF-8)");
  Warnings warn;
  std::vector<ChakraNode> nodes;
  ChakraProtoMsg::Node m;
  while (pos < s.size()) {
    const std::string where = "byte " + std::to_string(pos);
    auto msg = next_message(s, pos, file, "a Chakra Node message");
    if (!msg.ok()) return msg.error();
    m.Clear();
    if (msg->second > size_t(INT32_MAX) || !m.ParseFromArray(s.data() + msg->first, int(msg->second)))
      return Error::at(file, where, "a Chakra Node message (protobuf, " + std::to_string(msg->second) + " bytes)",
                       "bytes that do not parse as one (malformed, or a text field not in UTF-8)");
    ChakraNode n;
    auto ok = decode_node(m, file, where, n, warn);
    if (!ok.ok()) return ok.error();
    nodes.push_back(std::move(n));
  }
  if (nodes.empty())
    return Error::at(file, "byte " + std::to_string(pos), "Chakra Node messages after the GlobalMetadata", "none");
  auto t = chakra_trace(std::move(nodes), file, "protobuf");
  if (!t.ok()) return t;
  std::vector<std::string> extra;
  warn.into(extra);
  t->warnings.insert(t->warnings.begin(), extra.begin(), extra.end());
  return t;
}

} // namespace tp::traces
