// Chakra execution traces in their JSON form: concatenated JSON objects (no enclosing array), camelCase keys, int64
// values as strings. Nodes of type COMP_NODE are compute ops; COMM_COLL_NODE collectives (comm_type, comm_size in
// "attr" entries); COMM_SEND_NODE / COMM_RECV_NODE point-to-point transfers. Errors name the object's line.
#include "traces/json_events.hpp"
#include "traces/trace.hpp"

#include <algorithm>
#include <sstream>

namespace tp::traces {

using namespace detail;

namespace {

/// Chakra's CollectiveCommType enumeration (et_def.proto), by value or by name.
std::string comm_kind(const json& v)
{
  static const char* names[] = {"allreduce", "reduce",        "allgather",          "gather", "scatter", "broadcast",
                                "alltoall",  "reducescatter", "reducescatterblock", "barrier"};
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    char* end = nullptr;
    const long n = std::strtol(s.c_str(), &end, 10);
    if (!s.empty() && *end == 0) return n >= 0 && n < 10 ? names[n] : "collective";
    std::transform(s.begin(), s.end(), s.begin(), ::tolower);
    s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
    return s;
  }
  if (v.is_number_integer()) {
    const long n = v.get<long>();
    return n >= 0 && n < 10 ? names[n] : "collective";
  }
  return "collective";
}

/// An "attr" entry's value (int64Val, uint64Val, int32Val, stringVal, ...) by attribute name.
const json* attr(const json& node, const std::string& name)
{
  if (!node.contains("attr") || !node["attr"].is_array()) return nullptr;
  for (const auto& a : node["attr"]) {
    if (!a.is_object() || text(a, "name") != name) continue;
    for (const char* k : {"int64Val", "uint64Val", "int32Val", "uint32Val", "stringVal", "boolVal", "doubleVal"})
      if (a.contains(k)) return &a[k];
  }
  return nullptr;
}

size_t line_of(const std::string& s, size_t offset)
{
  return size_t(std::count(s.begin(), s.begin() + long(std::min(offset, s.size())), '\n')) + 1;
}

} // namespace

Result<Trace> parse_chakra(const std::string& input, const std::string& file)
{
  Trace t;
  t.format = "chakra";
  t.file = file;
  size_t objects = 0;
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
    const std::string where = "line " + std::to_string(line_of(input, pos));
    ++objects;
    if (!node.is_object()) return Error::at(file, where, "a node object", node.type_name());
    const std::string type = text(node, "type");
    if (type.empty()) continue; // metadata (schema, pid, ...)
    auto start_field = timestamp(node, "startTimeMicros", file, where + ":");
    if (!start_field.ok()) return start_field.error();
    auto dur_field = duration(node, "durationMicros", file, where + ":");
    if (!dur_field.ok()) return dur_field.error();
    if (!*dur_field)
      return Error::at(file, where, "\"durationMicros\" (an int64, as a string or a number)",
                       node.dump().substr(0, 80));
    const double start = start_field->value_or(0), dur = **dur_field;
    const std::string name = text(node, "name");
    if (type == "COMP_NODE") {
      TraceOp op;
      op.name = name;
      op.device = "rank";
      op.start = start * 1e-6;
      op.duration = dur * 1e-6;
      t.ops.push_back(op);
    } else if (type == "COMM_COLL_NODE" || type == "COMM_SEND_NODE" || type == "COMM_RECV_NODE") {
      const json* size = attr(node, "comm_size");
      if (!size) return Error::at(file, where, "a \"comm_size\" attr (bytes)", node.dump().substr(0, 80));
      auto bytes = numeric(json{{"comm_size", *size}}, "comm_size", 0, MAX_COUNT, true, file, where + ": attr");
      if (!bytes.ok()) return bytes.error();
      if (!*bytes) return Error::at(file, where, "a \"comm_size\" attr (bytes)", node.dump().substr(0, 80));
      const uint64_t nbytes = uint64_t(**bytes);
      if (type == "COMM_COLL_NODE") {
        TraceCollective c;
        c.name = name;
        const json* kind = attr(node, "comm_type");
        c.kind = kind ? comm_kind(*kind) : "collective";
        c.bytes = nbytes;
        c.start = start * 1e-6;
        c.duration = dur * 1e-6;
        t.collectives.push_back(c);
      } else {
        TraceTransfer x;
        x.tensor = name;
        const json* src = attr(node, "comm_src");
        const json* dst = attr(node, "comm_dst");
        x.src_device = src ? "rank " + (src->is_string() ? src->get<std::string>() : src->dump()) : "?";
        x.dst_device = dst ? "rank " + (dst->is_string() ? dst->get<std::string>() : dst->dump()) : "?";
        x.bytes = nbytes;
        x.start = start * 1e-6;
        x.duration = dur * 1e-6;
        if (type == "COMM_SEND_NODE") t.transfers.push_back(x); // a RECV node is the same transfer's other end
      }
    }
  }
  if (objects == 0) return Error::at(file, "line 1", "Chakra JSON nodes", "nothing");
  return t;
}

} // namespace tp::traces
