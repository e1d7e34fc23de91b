// PyTorch profiler (Kineto) traces: Chrome trace JSON. GPU kernels ("cat": "kernel") are compute ops on their
// device; NCCL calls are the "nccl:<collective>" record-function events whose args give the message as an element
// count and a dtype ("In msg nelems", "dtype", "Group size"); their time is that of the NCCL kernel that follows
// (the call's own event is the CPU-side launch).
#include "traces/json_events.hpp"
#include "traces/trace.hpp"

#include <algorithm>

namespace tp::traces {

using namespace detail;

namespace {

std::string collective_kind(std::string name)
{
  std::transform(name.begin(), name.end(), name.begin(), ::tolower);
  name.erase(std::remove(name.begin(), name.end(), '_'), name.end());
  for (const char* k : {"allreduce", "allgather", "reducescatter", "broadcast", "alltoall", "reduce", "send", "recv"})
    if (name.find(k) != std::string::npos) return k;
  return "collective";
}

} // namespace

Result<Trace> parse_kineto(const std::string& input, const std::string& file)
{
  auto j = parse_json(input, file);
  if (!j.ok()) return j.error();
  const json& root = j.value();
  if (!root.is_object() || !root.contains("traceEvents") || !root["traceEvents"].is_array())
    return Error::at(file, "traceEvents", "an array of Chrome trace events (a PyTorch profiler trace)", "none");
  const json& ev = root["traceEvents"];
  Trace t;
  t.format = "kineto";
  t.file = file;
  size_t awaiting_kernel = size_t(-1); // the last nccl: call whose GPU kernel has not been seen
  for (size_t i = 0; i < ev.size(); ++i) {
    const json& e = ev[i];
    if (!e.is_object()) return event_error(file, i, "an event object", e.type_name());
    if (text(e, "ph") != "X") continue;
    const std::string name = text(e, "name"), cat = text(e, "cat");
    const json args = e.value("args", json::object());
    const bool nccl = name.rfind("nccl:", 0) == 0 || name.find("ncclKernel") != std::string::npos ||
                      name.find("ncclDevKernel") != std::string::npos;
    if (!nccl && cat != "kernel") continue;
    auto ts_field = timestamp(e, "ts", file, event_at(i));
    if (!ts_field.ok()) return ts_field.error();
    auto dur_field = duration(e, "dur", file, event_at(i));
    if (!dur_field.ok()) return dur_field.error();
    if (!*ts_field || !*dur_field)
      return event_error(file, i, "\"ts\" and \"dur\" (microseconds, dur >= 0)", e.dump().substr(0, 80));
    const double ts = **ts_field, dur = **dur_field;
    if (nccl) {
      const std::string at_args = event_at(i) + ".args";
      auto in_n = numeric(args, "In msg nelems", 0, MAX_COUNT, true, file, at_args);
      if (!in_n.ok()) return in_n.error();
      auto out_n = numeric(args, "Out msg nelems", 0, MAX_COUNT, true, file, at_args);
      if (!out_n.ok()) return out_n.error();
      const bool sized = *in_n || *out_n;
      const double nelems = *in_n ? **in_n : *out_n ? **out_n : 0;
      if (!sized && name.rfind("nccl:", 0) != 0) {
        // An NCCL kernel without sizes: the GPU time of the nccl: call launched before it (the call's own event
        // is only the CPU-side launch).
        if (awaiting_kernel < t.collectives.size()) {
          t.collectives[awaiting_kernel].start = ts * 1e-6;
          t.collectives[awaiting_kernel].duration = dur * 1e-6;
          awaiting_kernel = size_t(-1);
        }
        continue;
      }
      if (!sized) return event_error(file, i, "\"In msg nelems\" on an nccl: event", args.dump().substr(0, 80));
      const size_t es = dtype_bytes(text(args, "dtype"));
      if (es == 0) return event_error(file, i, "a known \"dtype\"", "\"" + text(args, "dtype") + "\"");
      TraceCollective c;
      c.name = name;
      c.kind = collective_kind(name.rfind("nccl:", 0) == 0 ? name.substr(5) : name);
      uint64_t n = 0;
      if (!count_of(nelems, n) || n > (uint64_t(1) << 56))
        return event_error(file, i, "an element count that fits", args.dump().substr(0, 80));
      c.bytes = n * es;
      // a group of ranks: 1 .. 2^24 - 1 (absent: not recorded, 0)
      auto group = numeric(args, "Group size", 1, double((1u << 24) - 1), true, file, at_args);
      if (!group.ok()) return group.error();
      c.ranks = *group ? int(**group) : 0;
      c.start = ts * 1e-6;
      c.duration = dur * 1e-6;
      t.collectives.push_back(c);
      if (name.rfind("nccl:", 0) == 0) awaiting_kernel = t.collectives.size() - 1;
      continue;
    }
    TraceOp op;
    op.name = name;
    auto dev = numeric(args, "device", 0, 65535, true, file, event_at(i) + ".args"); // a CUDA device index
    if (!dev.ok()) return dev.error();
    op.device = *dev ? "cuda:" + std::to_string(uint64_t(**dev)) : "gpu";
    op.start = ts * 1e-6;
    op.duration = dur * 1e-6;
    t.ops.push_back(op);
  }
  return t;
}

} // namespace tp::traces
