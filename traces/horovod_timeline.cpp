// Horovod timelines (HOROVOD_TIMELINE): a Chrome trace array that a running job may leave unterminated. One
// "process" per tensor (its name in the process_name metadata); "B"/"E" pairs nest per tensor, the outermost being
// the collective (ALLREDUCE, ALLGATHER, BROADCAST, ...), inner ones its phases (NEGOTIATE_*, MEMCPY_IN_FUSION_BUFFER,
// NCCL_ALLREDUCE, ...). Sizes from the outermost event's args: "bytes"/"size", or "dtype" and "shape".
#include "traces/json_events.hpp"
#include "traces/trace.hpp"

#include <algorithm>
#include <map>

namespace tp::traces {

using namespace detail;

namespace {

/// Elements of a shape given as an array or a string like "[1000, 1000]" or "(1000, 1000)"; -1 if unreadable or
/// beyond 2^50 elements.
long long elements(const json& shape)
{
  constexpr long long LIMIT = 1LL << 50;
  long long n = 1;
  auto times = [&](long long d) {
    if (d < 0 || d > LIMIT || (d > 0 && n > LIMIT / d)) return false;
    n *= d;
    return true;
  };
  if (shape.is_array()) {
    for (const auto& d : shape)
      if (!d.is_number_integer() || !times(d.get<long long>())) return -1;
    return n;
  }
  if (!shape.is_string()) return -1;
  const std::string s = shape.get<std::string>();
  bool any = false;
  for (size_t i = 0; i < s.size();) {
    if (!isdigit(static_cast<unsigned char>(s[i]))) {
      ++i;
      continue;
    }
    long long d = 0;
    while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) {
      if (d > LIMIT) return -1;
      d = d * 10 + (s[i++] - '0');
    }
    if (!times(d)) return -1;
    any = true;
  }
  return any || s.find_first_of("[(") != std::string::npos ? n : -1;
}

std::string kind_of(std::string op)
{
  std::transform(op.begin(), op.end(), op.begin(), ::tolower);
  for (const char* k : {"allreduce", "allgather", "broadcast", "alltoall", "reducescatter"})
    if (op.find(k) != std::string::npos) return k;
  return op;
}

} // namespace

Result<Trace> parse_horovod_timeline(const std::string& input, const std::string& file)
{
  // A running job leaves "[ {...}, {...}," without the closing bracket.
  std::string txt = input;
  size_t end = txt.find_last_not_of(" \t\r\n");
  if (end != std::string::npos && txt[end] != ']') {
    while (end != std::string::npos && (txt[end] == ',' || isspace(static_cast<unsigned char>(txt[end]))))
      end = end == 0 ? std::string::npos : end - 1;
    txt = (end == std::string::npos ? std::string("[") : txt.substr(0, end + 1)) + "]";
  }
  auto j = parse_json(txt, file);
  if (!j.ok()) return j.error();
  const json& ev = j.value();
  if (!ev.is_array()) return Error::at(file, "", "a JSON array of Horovod timeline events", ev.type_name());
  Trace t;
  t.format = "horovod_timeline";
  t.file = file;
  // The file is an array of events: event i is at "[i]".
  auto at = [](size_t i) { return "[" + std::to_string(i) + "]"; };
  auto event_error = [&](const std::string& f, size_t i, const std::string& expected, const std::string& got) {
    return Error::at(f, at(i), expected, got);
  };
  std::map<long, std::string> tensor;
  struct Open {
    std::string name;
    double ts;
    json args;
    std::string at; ///< "[7]": where the B event is
  };
  std::map<long, std::vector<Open>> open; // per tensor: the B events not yet ended
  for (size_t i = 0; i < ev.size(); ++i) {
    const json& e = ev[i];
    if (!e.is_object()) return event_error(file, i, "an event object", e.type_name());
    const std::string ph = text(e, "ph");
    if (!e.contains("pid") || !e["pid"].is_number_integer())
      return event_error(file, i, "an integer \"pid\" (one per tensor)", e.dump().substr(0, 80));
    const long pid = e["pid"].get<long>();
    if (ph == "M") {
      if (text(e, "name") == "process_name") tensor[pid] = text(e.value("args", json::object()), "name");
      continue;
    }
    if (ph != "B" && ph != "E" && ph != "X") continue;
    auto ts_field = timestamp(e, "ts", file, at(i));
    if (!ts_field.ok()) return ts_field.error();
    if (!*ts_field) return event_error(file, i, "a numeric \"ts\" (microseconds)", e.dump().substr(0, 80));
    const double ts = **ts_field;
    if (ph == "B") {
      open[pid].push_back({text(e, "name"), ts, e.value("args", json::object()), at(i)});
      continue;
    }
    if (ph == "X") continue; // instant activities inside an operation
    auto& stack = open[pid];
    if (stack.empty()) return event_error(file, i, "an \"E\" event closing a \"B\" of the same tensor", "none open");
    Open b = stack.back();
    stack.pop_back();
    if (!stack.empty()) continue; // a phase inside the collective
    if (b.name.rfind("NEGOTIATE", 0) == 0 || b.name == "WAIT_FOR_DATA" || b.name == "QUEUE")
      continue; // coordination before the collective, not data movement
    TraceCollective c;
    c.name = tensor.count(pid) ? tensor[pid] : "pid " + std::to_string(pid);
    c.kind = kind_of(b.name);
    c.start = b.ts * 1e-6;
    c.duration = (ts - b.ts) * 1e-6;
    if (c.duration < 0) return event_error(file, i, "an end after its begin", std::to_string(ts));
    // the size from the begin event (b.at names it)
    auto bytes = numeric(b.args, "bytes", 0, MAX_COUNT, true, file, b.at + ".args");
    if (!bytes.ok()) return bytes.error();
    auto size = numeric(b.args, "size", 0, MAX_COUNT, true, file, b.at + ".args");
    if (!size.ok()) return size.error();
    if (*bytes || *size) {
      c.bytes = uint64_t(*bytes ? **bytes : **size);
    } else if (b.args.contains("dtype") && b.args.contains("shape")) {
      const size_t es = dtype_bytes(text(b.args, "dtype"));
      const long long n = elements(b.args["shape"]);
      if (es == 0 || n < 0) return event_error(file, i, "a known dtype and a shape", b.args.dump().substr(0, 80));
      if (uint64_t(n) > (uint64_t(1) << 60) / es) return event_error(file, i, "a tensor size that fits", "too large");
      c.bytes = uint64_t(n) * es;
    }
    t.collectives.push_back(c);
  }
  return t;
}

} // namespace tp::traces
