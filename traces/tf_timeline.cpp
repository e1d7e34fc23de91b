// TensorFlow timelines (Chrome trace JSON from tensorflow.python.client.timeline): "X" op events with their device
// from the "process_name" metadata, and RecvTensor events whose label reads
// "[<size>] [<rate>] <tensor> from <src device> to <dst device>" (in args.name, args.label or the event name). A
// RecvTensor without a size takes it from the same tensor's other RecvTensors in the timeline, or is kept with its
// size unknown; a named warning says which (never dropped).
#include "traces/json_events.hpp"
#include "traces/trace.hpp"

#include <map>
#include <regex>
#include <set>
#include <tuple>

namespace tp::traces {

using namespace detail;

namespace {

/// "/job:worker/replica:0/task:0/device:GPU:0 Compute" -> "/job:worker/replica:0/task:0/device:GPU:0"
std::string device_of(std::string process)
{
  for (const char* suffix : {" Compute", " Tensors", " Memcpy", " (pid "})
    if (auto at = process.find(suffix); at != std::string::npos) process = process.substr(0, at);
  return process;
}

/// RecvTensors without a size: a tensor received with a size elsewhere in the same timeline (another step: TF's
/// graph is static, so an edge carries the same shape each step) between the same devices, always with the same
/// size, gives it; otherwise the size stays unknown. Either way a named warning says which.
void recover_sizes(Trace& t, const std::vector<std::pair<size_t, size_t>>& sizeless)
{
  if (sizeless.empty()) return;
  std::map<std::tuple<std::string, std::string, std::string>, std::set<uint64_t>> sizes;
  for (const auto& x : t.transfers)
    if (x.bytes_known) sizes[{x.tensor, x.src_device, x.dst_device}].insert(x.bytes);
  Warnings warn;
  for (const auto& [xi, event] : sizeless) {
    TraceTransfer& x = t.transfers[xi];
    const auto it = x.tensor == "?" ? sizes.end() : sizes.find({x.tensor, x.src_device, x.dst_device});
    const std::string what = "tf_timeline: " + event_at(event) + " RecvTensor \"" + x.tensor + "\" carries no size";
    if (it != sizes.end() && it->second.size() == 1) {
      x.bytes = *it->second.begin();
      x.bytes_known = true;
      warn.add("tf_timeline: RecvTensor size taken from the same tensor's other RecvTensors",
               what + ": taken as " + std::to_string(x.bytes) + " B, the size of its other RecvTensors from " +
                   x.src_device + " to " + x.dst_device + " in this timeline");
    } else {
      warn.add("tf_timeline: RecvTensor of unknown size",
               what + (it != sizes.end() ? " and its other RecvTensors disagree on it" : "") +
                   ": its size is unknown (kept at its recorded time, not counted as 0 bytes)");
    }
  }
  warn.into(t.warnings);
}

} // namespace

Result<Trace> parse_tf_timeline(const std::string& input, const std::string& file)
{
  Trace t;
  t.format = "tf_timeline";
  t.file = file;
  // One pass over the events as they are parsed (parse_json_events: not held as a document). A device's name comes
  // from its process_name metadata event, which may come after the device's ops: an op keeps its pid until the end.
  std::map<long, std::string> process;
  std::vector<std::optional<long>> op_pid;         // per op
  std::vector<std::pair<size_t, size_t>> sizeless; // (transfer, event) of RecvTensors without a size
  static const std::regex recv(R"(\[([0-9.]+\s*[KMGT]?i?B)\]\s*(?:\[[^\]]*\]\s*)?(\S+)\s+from\s+(\S+)\s+to\s+(\S+))");
  auto read_event = [&](size_t i, const json& e) -> Status {
    if (!e.is_object()) return event_error(file, i, "an event object", e.type_name());
    const std::string ph = text(e, "ph");
    if (ph == "M" && text(e, "name") == "process_name" && e.contains("pid") && e["pid"].is_number_integer())
      process[e["pid"].get<long>()] = text(e.value("args", json::object()), "name");
    if (ph != "X") return ok_status(); // metadata, flows, counters
    auto ts_field = timestamp(e, "ts", file, event_at(i));
    if (!ts_field.ok()) return ts_field.error();
    auto dur_field = duration(e, "dur", file, event_at(i));
    if (!dur_field.ok()) return dur_field.error();
    if (!*ts_field || !*dur_field)
      return event_error(file, i, "\"ts\" and \"dur\" (microseconds, dur >= 0)", e.dump().substr(0, 80));
    const double ts = **ts_field, dur = **dur_field;
    const json args = e.value("args", json::object());
    std::string label = text(args, "label");
    if (label.empty()) label = text(args, "name");
    const std::string name = text(e, "name");
    std::smatch m;
    if ((name == "RecvTensor" || label.find(" from ") != std::string::npos ||
         name.find(" from ") != std::string::npos) &&
        (std::regex_search(label, m, recv) || std::regex_search(name, m, recv))) {
      TraceTransfer x;
      if (!parse_human_bytes(m[1].str(), x.bytes))
        return event_error(file, i, "a RecvTensor size like [4.0MiB]", m[1].str());
      x.tensor = m[2].str();
      x.src_device = m[3].str();
      x.dst_device = m[4].str();
      x.start = ts * 1e-6;
      x.duration = dur * 1e-6;
      t.transfers.push_back(x);
      return ok_status();
    }
    // A RecvTensor whose label gives no size (TF's WorkerCacheLogger writes the transport's details instead of
    // "[size] [rate] ..." when it passes them): its tensor and ends where the label names them; the size is looked
    // for below.
    static const std::regex ends(R"((\S+)\s+from\s+(\S+)\s+to\s+(\S+))");
    const bool named_ends = (label.find(" from ") != std::string::npos && std::regex_search(label, m, ends)) ||
                            (name.find(" from ") != std::string::npos && std::regex_search(name, m, ends));
    if (name == "RecvTensor" || named_ends) {
      TraceTransfer x;
      if (named_ends) {
        x.tensor = m[1].str();
        x.src_device = m[2].str();
        x.dst_device = m[3].str();
      } else {
        x.tensor = label.empty() ? "?" : label;
        x.src_device = x.dst_device = "?";
      }
      x.bytes_known = false;
      x.start = ts * 1e-6;
      x.duration = dur * 1e-6;
      sizeless.push_back({t.transfers.size(), i});
      t.transfers.push_back(x);
      return ok_status();
    }
    TraceOp op;
    op.name = label.empty() ? name : label;
    op.start = ts * 1e-6;
    op.duration = dur * 1e-6;
    t.ops.push_back(op);
    op_pid.push_back(e.contains("pid") && e["pid"].is_number_integer() ? std::optional<long>(e["pid"].get<long>())
                                                                       : std::nullopt);
    return ok_status();
  };
  std::optional<Error> event_error_found; // the first event's, reported once the text is known to be JSON
  auto j = parse_json_events(input, file, [&](size_t i, json&& e) {
    if (event_error_found) return;
    if (auto st = read_event(i, e); !st.ok()) event_error_found = st.error();
  });
  if (!j.ok()) return j.error();
  const json& root = j.value();
  if (!root.is_object() || !root.contains("traceEvents") || !root["traceEvents"].is_array())
    return Error::at(file, "traceEvents", "an array of Chrome trace events (a TF timeline)", "none");
  if (event_error_found) return *event_error_found;
  for (size_t k = 0; k < t.ops.size(); ++k)
    if (op_pid[k]) t.ops[k].device = device_of(process[*op_pid[k]]);
  recover_sizes(t, sizeless);
  return t;
}

} // namespace tp::traces
