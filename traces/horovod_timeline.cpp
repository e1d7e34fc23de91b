// Horovod timelines (HOROVOD_TIMELINE): a Chrome trace array that a running job may leave unterminated (older
// Horovod writes "},\n" after each event and never closes the array; a job killed mid-write leaves half an event,
// which is dropped with a warning). One "process" per tensor (its name in the process_name metadata); "B"/"E" pairs
// nest per tensor, the outermost being the collective (ALLREDUCE, ALLGATHER, BROADCAST, ...), inner ones its phases
// (NEGOTIATE_*, MEMCPY_IN_FUSION_BUFFER, NCCL_ALLREDUCE, ...: an NCCL_*, MPI_*, GLOO_*, CCL_* or DDL_* phase names the
// collective's library, and the span of those phases is the collective's time; the activity's begin is when it was
// issued). Horovod writes the tensor's "dtype" ("HOROVOD_FLOAT32") and "shape" ("[3, 3, 64, 128]") on the
// collective's end ("E") event; "bytes"/"size" or "dtype" and "shape" on the begin event are read too. A collective
// whose size is not there, or whose dtype is unknown, is reported as of unknown size with a warning. Instant markers ("CYCLE_START", "ph": "i", no pid) and
// counter events ("ph": "C") are not collectives, nor is an outermost activity whose name names no collective (a
// warning says so: timelines of Horovod's descendants, such as Bluefog's, add their own, like "FORWARD"). The
// CYCLE_START marks (HOROVOD_TIMELINE_MARK_CYCLES=1) divide the trace into cycles, its steps; the ranks a NEGOTIATE
// phase marks ready ("X" events named "0", "1", ...) give the world size.
#include "core/common/suggest.hpp"
#include "traces/json_events.hpp"
#include "traces/trace.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>

namespace tp::traces {

using namespace detail;

namespace {

/// Elements of a shape given as an array or a string like "[1000, 1000]" or "(1000, 1000)"; -1 if unreadable, -2 if
/// beyond 2^50 elements.
long long elements(const json& shape)
{
  constexpr long long LIMIT = 1LL << 50;
  long long n = 1;
  bool too_large = false;
  auto times = [&](long long d) {
    if (d < 0) return false;
    if (d > LIMIT || (d > 0 && n > LIMIT / d)) return !(too_large = true);
    n *= d;
    return true;
  };
  if (shape.is_array()) {
    for (const auto& d : shape)
      if (!d.is_number_integer() || !times(d.get<long long>())) return too_large ? -2 : -1;
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
      if (d > LIMIT) return -2;
      d = d * 10 + (s[i++] - '0');
    }
    if (!times(d)) return too_large ? -2 : -1;
    any = true;
  }
  return any || s.find_first_of("[(") != std::string::npos ? n : -1;
}

/// The collective kinds an operation's name can name (as a part of it, in any case).
constexpr const char* COLLECTIVE_KINDS[] = {"allreduce",     "allgather", "broadcast", "alltoall",
                                            "reducescatter", "adasum",    "barrier"};

/// COLLECTIVE_KINDS as a list for messages ("allreduce, allgather, ...").
const std::string& collective_kinds_text()
{
  static const std::string text = [] {
    std::string t;
    for (const char* k : COLLECTIVE_KINDS)
      t += std::string(t.empty() ? "" : ", ") + k;
    return t;
  }();
  return text;
}

/// The collective an operation's name names ("ALLREDUCE", "NCCL_ALLREDUCE", "ENQUEUE_BROADCAST", ...); empty when it
/// names none.
std::string kind_of(std::string op)
{
  op = to_lower(std::move(op));
  for (const char* k : COLLECTIVE_KINDS)
    if (op.find(k) != std::string::npos) return k;
  return "";
}

} // namespace

namespace {

/// Parse the events; an unterminated array is closed, and when its last event was cut off mid-write, the array is
/// cut back to the last complete event (a warning says so).
Result<json> parse_events(const std::string& input, const std::string& file, Warnings& warn)
{
  size_t end = input.find_last_not_of(" \t\r\n");
  if (end == std::string::npos || input[end] == ']') return parse_json(input, file);
  // A running job leaves "[ {...}, {...}," without the closing bracket.
  auto closed = [&](size_t last) { // the text up to `last` (inclusive), without trailing commas, closed
    while (last != std::string::npos && (input[last] == ',' || isspace(static_cast<unsigned char>(input[last]))))
      last = last == 0 ? std::string::npos : last - 1;
    return (last == std::string::npos ? std::string("[") : input.substr(0, last + 1)) + "]";
  };
  const std::string whole = closed(end);
  auto j = parse_json(whole, file);
  if (j.ok()) return j;
  // Half an event at the end (the parser ran out of text: its error is at the last bytes): back to the end of an
  // earlier event ("}" then ","; a few tries, for the "}," of args inside the half event). An error anywhere
  // else in the file is reported as it is.
  const std::string& at = j.error().field;
  const size_t err = at.rfind("byte ", 0) == 0 ? size_t(std::strtoull(at.c_str() + 5, nullptr, 10)) : 0;
  if (err + 2 < whole.size()) return j.error();
  size_t cut = end;
  for (int tries = 0; tries < 4 && cut != std::string::npos && cut > 0; ++tries) {
    cut = input.rfind('}', cut - 1);
    if (cut == std::string::npos) break;
    const size_t next = input.find_first_not_of(" \t\r\n", cut + 1);
    if (next == std::string::npos || input[next] != ',') continue;
    auto retry = parse_json(closed(cut), file);
    if (retry.ok()) {
      warn.add("cut-off events", "byte " + std::to_string(cut + 1) +
                                     ": the last event was cut off (the job ended while writing it): dropped");
      return retry;
    }
  }
  return j.error();
}

} // namespace

Result<Trace> parse_horovod_timeline(const std::string& input, const std::string& file)
{
  Warnings warn;
  auto j = parse_events(input, file, warn);
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
    std::string at;      ///< "[7]": where the B event is
    /// The outermost: the library once a phase inside it says so (NCCL_ALLREDUCE: "nccl", MPI_*: "mpi", GLOO_*:
    /// "gloo", CCL_*: "ccl" (oneCCL), DDL_*: "ddl"; NCCL wins over MPI in a hierarchical allreduce).
    std::string library;
    /// The outermost: the first begin and last end of its library's phases (those above), microseconds; -1: none yet.
    double moved_from = -1, moved_to = -1;
    json tid; ///< the B event's "tid" (Horovod writes none; Bluefog puts the MPI phases on a thread of their own)
  };
  std::map<long, std::vector<Open>> open; // per tensor: the B events not yet ended
  std::vector<double> cycles;             // CYCLE_START times, microseconds
  long max_rank = -1;                     // the highest rank a NEGOTIATE phase marked ready
  for (size_t i = 0; i < ev.size(); ++i) {
    const json& e = ev[i];
    if (!e.is_object()) return event_error(file, i, "an event object", e.type_name());
    const std::string ph = text(e, "ph");
    // Instant markers (CYCLE_START: "ph": "i", "s": "g", no pid) start a cycle of Horovod's background loop;
    // counters, flows: not a tensor's events.
    if ((ph == "i" || ph == "I") && text(e, "name") == "CYCLE_START") {
      auto ts_field = timestamp(e, "ts", file, at(i));
      if (!ts_field.ok()) return ts_field.error();
      if (*ts_field) cycles.push_back(**ts_field);
      continue;
    }
    if (ph != "B" && ph != "E" && ph != "X" && ph != "M") continue;
    if (!e.contains("pid") || !e["pid"].is_number_integer())
      return event_error(file, i, "an integer \"pid\" (one per tensor)", e.dump().substr(0, 80));
    const long pid = e["pid"].get<long>();
    if (ph == "M") {
      if (text(e, "name") == "process_name") tensor[pid] = text(e.value("args", json::object()), "name");
      continue;
    }
    auto ts_field = timestamp(e, "ts", file, at(i));
    if (!ts_field.ok()) return ts_field.error();
    if (!*ts_field) return event_error(file, i, "a numeric \"ts\" (microseconds)", e.dump().substr(0, 80));
    const double ts = **ts_field;
    if (ph == "B") {
      open[pid].push_back(
          {text(e, "name"), ts, e.value("args", json::object()), at(i), "", -1, -1, e.value("tid", json())});
      continue;
    }
    if (ph == "X") { // instant activities inside an operation: in a NEGOTIATE phase, a rank ready ("name": "3")
      const std::string name = text(e, "name");
      if (!name.empty() && name.size() < 8 && std::all_of(name.begin(), name.end(), ::isdigit))
        max_rank = std::max(max_rank, std::stol(name));
      continue;
    }
    auto& stack = open[pid];
    if (stack.empty()) return event_error(file, i, "an \"E\" event closing a \"B\" of the same tensor", "none open");
    Open b = stack.back();
    stack.pop_back();
    if (ts < b.ts) return event_error(file, i, "an end after its begin (" + b.at + ")", std::to_string(ts));
    if (!stack.empty()) { // a phase inside the collective: NCCL_ALLREDUCE, MPI_ALLREDUCE, ... name its library
      static const std::pair<const char*, const char*> LIBRARIES[] = {
          {"NCCL_", "nccl"}, {"MPI_", "mpi"}, {"GLOO_", "gloo"}, {"CCL_", "ccl"}, {"DDL_", "ddl"}};
      std::string lib;
      for (const auto& [prefix, name] : LIBRARIES)
        if (b.name.rfind(prefix, 0) == 0) lib = name;
      Open& outer = stack.front();
      if (lib == "nccl" || (!lib.empty() && outer.library.empty())) outer.library = lib;
      // The library's own phases (a hierarchical allreduce has several), directly inside the activity, begun and
      // ended on its thread: where they run on another (Bluefog's), an "E" cannot be told from the activity's own,
      // and the activity's span is kept.
      if (!lib.empty() && stack.size() == 1 && b.tid == outer.tid && e.value("tid", json()) == b.tid) {
        if (outer.moved_from < 0) outer.moved_from = b.ts;
        outer.moved_to = std::max(outer.moved_to, ts);
      }
      continue;
    }
    if (b.name.rfind("NEGOTIATE", 0) == 0 || b.name == "WAIT_FOR_DATA" || b.name == "QUEUE" || b.name == "JOIN" ||
        b.name == "ERROR")
      continue; // coordination before the collective (or a rank's join, an error reply), not data movement
    TraceCollective c;
    c.name = tensor.count(pid) ? tensor[pid] : "pid " + std::to_string(pid);
    c.kind = kind_of(b.name);
    if (c.kind.empty()) { // an activity that names no collective (a timeline writer's own: Bluefog's FORWARD, ...)
      warn.add("activities that are not collectives", b.at + " (" + b.name + " " + c.name + "): names no collective (" +
                                                          collective_kinds_text() + "): left out");
      continue;
    }
    c.library = b.library;
    // What the library ran moves the bytes: the span of its phases is the collective, as a Kineto trace's NCCL
    // kernel is; the activity's begin is when Horovod issued it. Before them lie waits for this and the other ranks'
    // data, the stream's queue, the fusion buffer's copy and, once, NCCL's set-up (INIT_NCCL, hundreds of ms), which
    // the replay keeps as recorded. Without such a phase (older timelines, descendants' own) the whole activity.
    if (b.moved_from >= 0) {
      c.issued = std::min(b.ts, b.moved_from) * 1e-6; // never after its start, whatever the clocks
      c.start = b.moved_from * 1e-6;
      c.duration = (b.moved_to - b.moved_from) * 1e-6;
    } else {
      c.start = b.ts * 1e-6;
      c.duration = (ts - b.ts) * 1e-6;
    }
    const std::string label = b.at + " (" + b.name + " " + c.name + ")";
    // The size: "bytes"/"size" on the begin event, else "dtype" and "shape" on the end event (as Horovod writes
    // them), else on the begin event.
    auto bytes = numeric(b.args, "bytes", 0, MAX_COUNT, true, file, b.at + ".args");
    if (!bytes.ok()) return bytes.error();
    auto size = numeric(b.args, "size", 0, MAX_COUNT, true, file, b.at + ".args");
    if (!size.ok()) return size.error();
    const json end_args = e.value("args", json::object());
    const bool end_sized = end_args.is_object() && end_args.contains("dtype") && end_args.contains("shape");
    const json& sized = end_sized ? end_args : b.args;
    const std::string sized_at = (end_sized ? at(i) : b.at) + ".args";
    if (*bytes || *size) {
      c.bytes = uint64_t(*bytes ? **bytes : **size);
    } else if (sized.is_object() && sized.contains("dtype") && sized.contains("shape")) {
      const size_t es = dtype_bytes(text(sized, "dtype"));
      const long long n = elements(sized["shape"]);
      if (n == -2) return Error::at(file, sized_at + ".shape", "a tensor size that fits", sized["shape"].dump());
      if (es == 0 || n < 0) {
        c.bytes_known = false;
        warn.add("collectives of unknown size",
                 label + ": size unknown (" + sized_at +
                     (es == 0 ? ".dtype: unknown dtype " + sized["dtype"].dump().substr(0, 40)
                              : ".shape: not a shape " + sized["shape"].dump().substr(0, 40)) +
                     "): kept at its recorded time");
      } else if (uint64_t(n) > (uint64_t(1) << 60) / es) {
        return Error::at(file, sized_at + ".shape", "a tensor size that fits", "too large");
      } else {
        c.bytes = uint64_t(n) * es;
      }
    } else if (c.kind == "barrier") {
      c.bytes = 0; // a barrier moves no tensor
    } else {
      c.bytes_known = false;
      warn.add("collectives of unknown size", label + ": size unknown (no \"dtype\" and \"shape\" on its end event " +
                                                  at(i) +
                                                  ", no \"bytes\" on its begin event): kept at its recorded time");
    }
    t.collectives.push_back(c);
  }
  for (const auto& [pid, stack] : open)
    if (!stack.empty())
      warn.add("unfinished collectives", stack.front().at + " (" + stack.front().name + " " +
                                             (tensor.count(pid) ? tensor[pid] : "pid " + std::to_string(pid)) +
                                             "): never ended (the timeline stops before its \"E\"): dropped");
  if (max_rank >= 0) {
    t.world_size = int(max_rank + 1);
    t.world_size_from = "the ranks its NEGOTIATE phases mark ready";
  }
  // Cycles (HOROVOD_TIMELINE_MARK_CYCLES=1): from one CYCLE_START to the next; the last is cut by the trace's end.
  std::sort(cycles.begin(), cycles.end());
  double end = cycles.empty() ? 0 : cycles.back();
  for (const auto& c : t.collectives)
    end = std::max(end, (c.start + c.duration) * 1e6);
  for (size_t k = 0; k < cycles.size(); ++k) {
    const bool last = k + 1 == cycles.size();
    t.steps.push_back({"cycle " + std::to_string(k + 1), cycles[k] * 1e-6, (last ? end : cycles[k + 1]) * 1e-6, last,
                       last ? "cut by the trace's end: no CYCLE_START after it" : ""});
  }
  if (!cycles.empty()) t.steps_from = "Horovod CYCLE_START marks (cycles of its background loop)";
  warn.into(t.warnings);
  return t;
}

} // namespace tp::traces
