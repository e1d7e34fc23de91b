// Chakra execution traces in their JSON form (chakra_jsonizer: protobuf's MessageToJson of each message):
// concatenated JSON objects (no enclosing array), camelCase keys, int64 values as strings, and proto3's rule that a
// zero or empty field is left out. Nodes go through the rules shared with the protobuf form (chakra_nodes.hpp).
// Errors name the object's line.
#include "traces/chakra_nodes.hpp"
#include "traces/json_events.hpp"
#include "traces/trace.hpp"

#include <algorithm>
#include <cerrno>
#include <sstream>
#include <tuple>

namespace tp::traces {

using namespace detail;

namespace {

/// An "attr" entry's value (int64Val, uint64Val, int32Val, stringVal, ...) by attribute name; nullptr when the node
/// has no such attribute, or has it without a value (proto3: the oneof is unset).
const json* attr(const json& node, const std::string& name)
{
  for (const char* list : {"attr"}) {
    if (!node.contains(list) || !node[list].is_array()) continue;
    for (const auto& a : node[list]) {
      if (!a.is_object() || text(a, "name") != name) continue;
      for (const char* k : {"int64Val", "uint64Val", "int32Val", "uint32Val", "sint64Val", "sint32Val", "fixed64Val",
                            "fixed32Val", "sfixed64Val", "sfixed32Val", "stringVal", "boolVal", "doubleVal",
                            "int64_val", "uint64_val", "int32_val", "uint32_val", "string_val", "bool_val"})
        if (a.contains(k)) return &a[k];
    }
  }
  return nullptr;
}

/// A field by its camelCase name (MessageToJson's default) or its proto name (preserving_proto_field_name).
const json* field(const json& node, const char* camel, const char* proto)
{
  if (node.contains(camel)) return &node[camel];
  if (node.contains(proto)) return &node[proto];
  return nullptr;
}

/// A uint64 as proto3 JSON writes it (a string of digits, or a number); false otherwise.
bool uint64_of(const json& v, uint64_t& out)
{
  if (v.is_number_unsigned()) {
    out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer()) return false; // negative
  if (!v.is_string()) return false;
  const std::string s = v.get<std::string>();
  if (s.empty() || s.size() > 20 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  errno = 0;
  out = std::strtoull(s.c_str(), nullptr, 10);
  return errno == 0;
}

size_t line_of(const std::string& s, size_t offset)
{
  return size_t(std::count(s.begin(), s.begin() + long(std::min(offset, s.size())), '\n')) + 1;
}

/// Chakra's NodeType by name or value; -1 for a name the schema does not define.
int node_type(const json& v)
{
  static const char* names[] = {"INVALID_NODE", "METADATA_NODE",  "MEM_LOAD_NODE",  "MEM_STORE_NODE",
                                "COMP_NODE",    "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE"};
  if (v.is_number_integer()) return int(std::clamp<long>(v.get<long>(), -1, 1000));
  const std::string s = v.is_string() ? v.get<std::string>() : std::string();
  for (int i = 0; i < 8; ++i)
    if (s == names[i]) return i;
  return -1;
}

/// One node object into `n`; an Error for a field that holds what it cannot.
Result<bool> decode_node(const json& node, const std::string& file, const std::string& where, ChakraNode& n)
{
  n.where = where;
  n.name = text(node, "name");
  if (const json* id = field(node, "id", "id"); id && !uint64_of(*id, n.id))
    return Error::at(file, where + ": id", "a node id (a uint64)", id->dump().substr(0, 40));
  n.type = node.contains("type") ? node_type(node["type"]) : INVALID_NODE; // proto3 omits INVALID_NODE (0)
  if (const json* deps = field(node, "dataDeps", "data_deps")) {
    if (!deps->is_array()) return Error::at(file, where + ": dataDeps", "an array of node ids", deps->type_name());
    n.data_deps.reserve(deps->size());
    for (size_t k = 0; k < deps->size(); ++k) {
      uint64_t d = 0;
      if (!uint64_of((*deps)[k], d))
        return Error::at(file, where + ": dataDeps[" + std::to_string(k) + "]", "a node id (a uint64)",
                         (*deps)[k].dump().substr(0, 40));
      n.data_deps.push_back(d);
    }
  }
  // Times: proto3 omits a zero, so an absent start or duration is 0 (numbers checked by the number rule).
  auto start =
      timestamp(node, node.contains("startTimeMicros") ? "startTimeMicros" : "start_time_micros", file, where + ":");
  if (!start.ok()) return start.error();
  if (!*start && (node.contains("startTimeMicros") || node.contains("start_time_micros")))
    return Error::at(file, where + ": startTimeMicros", "a uint64 (as a string or a number)",
                     field(node, "startTimeMicros", "start_time_micros")->dump().substr(0, 40));
  n.start_us = start->value_or(0);
  auto dur = duration(node, node.contains("durationMicros") ? "durationMicros" : "duration_micros", file, where + ":");
  if (!dur.ok()) return dur.error();
  if (!*dur && (node.contains("durationMicros") || node.contains("duration_micros")))
    return Error::at(file, where + ": durationMicros", "a uint64 (as a string or a number)",
                     field(node, "durationMicros", "duration_micros")->dump().substr(0, 40));
  n.duration_us = dur->value_or(0);
  if (const json* size = attr(node, "comm_size")) {
    auto bytes = numeric(json{{"comm_size", *size}}, "comm_size", 0, MAX_COUNT, true, file, where + ": attr");
    if (!bytes.ok()) return bytes.error();
    if (!*bytes) return Error::at(file, where + ": attr.comm_size", "bytes (an integer)", size->dump().substr(0, 40));
    n.comm_size = uint64_t(**bytes);
  }
  if (const json* kind = attr(node, "comm_type")) {
    double v = 0;
    if (kind->is_string() && !kind->get<std::string>().empty() &&
        kind->get<std::string>().find_first_not_of("-0123456789") != std::string::npos)
      n.comm_type_name = kind->get<std::string>();
    else if (number(json{{"comm_type", *kind}}, "comm_type", v) && v == std::floor(v) && std::abs(v) < 1e9)
      n.comm_type = int64_t(v);
    else
      return Error::at(file, where + ": attr.comm_type", "Chakra's CollectiveCommType (a value or a name)",
                       kind->dump().substr(0, 40));
  }
  for (auto [key, out] : {std::pair{"comm_src", &n.comm_src}, std::pair{"comm_dst", &n.comm_dst}})
    if (const json* r = attr(node, key)) {
      auto v = numeric(json{{key, *r}}, key, 0, MAX_COUNT, true, file, where + ": attr");
      if (!v.ok()) return v.error();
      if (!*v) return Error::at(file, where + ": attr." + key, "a rank (an integer)", r->dump().substr(0, 40));
      *out = int64_t(**v);
    }
  if (const json* pg = attr(node, "pg_name"); pg && pg->is_string()) n.pg_name = pg->get<std::string>();
  if (const json* cpu = attr(node, "is_cpu_op"); cpu && cpu->is_boolean()) n.is_cpu_op = cpu->get<bool>();
  return true;
}

} // namespace

Result<Trace> parse_chakra(const std::string& input, const std::string& file)
{
  std::vector<ChakraNode> nodes;
  size_t objects = 0, line = 1, counted = 0;
  std::istringstream in(input); // one stream: each >> reads the next object
  while (true) {
    in >> std::ws;
    if (in.peek() == std::char_traits<char>::eof()) break;
    const size_t pos = size_t(in.tellg());
    json node;
    try {
      node = json_strict::parse<json>(in, false); // one object; the stream stays after it
    } catch (const json_strict::StrictError& e) {
      return Error::at(file, "line " + std::to_string(line_of(input, pos)) + ": " + e.path, e.expected, e.got);
    } catch (const json::parse_error& e) {
      return Error::at(file, "line " + std::to_string(line_of(input, pos + (e.byte > 0 ? e.byte - 1 : 0))),
                       "concatenated JSON objects (Chakra JSON)", e.what());
    } catch (const json::exception& e) {
      return Error::at(file, "line " + std::to_string(line_of(input, pos)), "JSON with representable numbers",
                       e.what());
    }
    // the object's line, counted on from the last object's (counting from the start each time made reading
    // quadratic in the file's size)
    line += size_t(std::count(input.begin() + long(counted), input.begin() + long(pos), '\n'));
    counted = pos;
    const std::string where = "line " + std::to_string(line);
    ++objects;
    if (!node.is_object()) return Error::at(file, where, "a node object", node.type_name());
    // GlobalMetadata (version, attr) or a converter's own header (schema, pid, ...): no id, name or type.
    if (!node.contains("type") && !node.contains("id") && !node.contains("name")) continue;
    ChakraNode n;
    auto ok = decode_node(node, file, where, n);
    if (!ok.ok()) return ok.error();
    nodes.push_back(std::move(n));
  }
  if (objects == 0) return Error::at(file, "line 1", "Chakra JSON nodes", "nothing");
  return chakra_trace(std::move(nodes), file, "JSON");
}

} // namespace tp::traces
