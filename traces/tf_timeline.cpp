// TensorFlow timelines (Chrome trace JSON from tensorflow.python.client.timeline): "X" op events with their device
// from the "process_name" metadata, and RecvTensor events whose label reads
// "[<size>] [<rate>] <tensor> from <src device> to <dst device>" (in args.name, args.label or the event name).
#include "traces/json_events.hpp"
#include "traces/trace.hpp"

#include <map>
#include <regex>

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

} // namespace

Result<Trace> parse_tf_timeline(const std::string& input, const std::string& file)
{
  auto j = parse_json(input, file);
  if (!j.ok()) return j.error();
  const json& root = j.value();
  if (!root.is_object() || !root.contains("traceEvents") || !root["traceEvents"].is_array())
    return Error::at(file, "traceEvents", "an array of Chrome trace events (a TF timeline)", "none");
  const json& ev = root["traceEvents"];
  Trace t;
  t.format = "tf_timeline";
  t.file = file;
  std::map<long, std::string> process;
  for (size_t i = 0; i < ev.size(); ++i)
    if (ev[i].is_object() && text(ev[i], "ph") == "M" && text(ev[i], "name") == "process_name" &&
        ev[i].contains("pid") && ev[i]["pid"].is_number_integer())
      process[ev[i]["pid"].get<long>()] = text(ev[i].value("args", json::object()), "name");
  static const std::regex recv(R"(\[([0-9.]+\s*[KMGT]?i?B)\]\s*(?:\[[^\]]*\]\s*)?(\S+)\s+from\s+(\S+)\s+to\s+(\S+))");
  for (size_t i = 0; i < ev.size(); ++i) {
    const json& e = ev[i];
    if (!e.is_object()) return event_error(file, i, "an event object", e.type_name());
    if (text(e, "ph") != "X") continue; // metadata, flows, counters
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
    std::string device;
    if (e.contains("pid") && e["pid"].is_number_integer()) device = device_of(process[e["pid"].get<long>()]);
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
      continue;
    }
    if (name == "RecvTensor") continue; // a RecvTensor without a size: nothing to replay
    TraceOp op;
    op.name = label.empty() ? name : label;
    op.device = device;
    op.start = ts * 1e-6;
    op.duration = dur * 1e-6;
    t.ops.push_back(op);
  }
  return t;
}

} // namespace tp::traces
