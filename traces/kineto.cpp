// PyTorch profiler (Kineto) traces, as PyTorch 1.8 to today writes them: Chrome trace JSON. GPU kernels ("cat":
// "kernel") are compute ops on their device. A collective is a CPU-side call: an "nccl:<collective>" record
// function, or the "record_param_comms" op that encloses it (PyTorch >= 1.13); calls nested on one thread are one
// collective. Its size is "In msg nelems" x "dtype" (PyTorch >= 2.0), else the tensors of "Input Dims" x "Input
// type" (PyTorch 1.x: [[1024, 256]] of "float"); its ranks "Group size", "Process Group Ranks" or distributedInfo; a
// send's or recv's peer "Dst Rank" / "Src Rank" where newer releases write them.
// Its time is that of its NCCL kernel, found through the kernel's "correlation" (the cudaLaunchKernel with that
// correlation id was called inside the collective's call, on the same thread) or, failing that, its "External id"
// — never by file order: Kineto writes the CPU events first and the kernels after them. A record_param_comms
// "wait" (a wait on an earlier collective; PyTorch 2.0 writes it with no "Collective name", scalars only and no
// kernel) is not a collective; GPU-side copies of the calls (gpu_user_annotation)
// are not read. What cannot be read in full (an unknown dtype, no size, no kernel) is a warning naming the event.
// The iterations are the "ProfilerStep#N" spans (cpu_op or user_annotation); a kernel belongs to the step whose span
// holds its launch, a collective to the one that holds its call.
#include "core/common/suggest.hpp"
#include "traces/json_events.hpp"
#include "traces/trace.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace tp::traces {

using namespace detail;

namespace {

constexpr double MAX_RANKS = double((1u << 24) - 1);

std::string collective_kind(std::string name)
{
  name = to_lower(name);
  name.erase(std::remove(name.begin(), name.end(), '_'), name.end());
  for (const char* k : {"allreduce", "allgather", "reducescatter", "broadcast", "alltoall", "reduce", "sendrecv",
                        "send", "recv", "gather", "scatter", "barrier"})
    if (name.find(k) != std::string::npos) return k;
  return "collective";
}

/// An id (correlation, External id) as a map key: an integer or a string; "" when absent.
std::string id_of(const json& args, const char* key)
{
  if (!args.is_object() || !args.contains(key)) return {};
  const json& v = args[key];
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_string()) return v.get<std::string>();
  return {};
}

/// The thread an event ran on: its pid and tid (numbers or strings).
std::string thread_of(const json& e)
{
  return (e.contains("pid") ? e["pid"].dump() : "") + "/" + (e.contains("tid") ? e["tid"].dump() : "");
}

/// A list of ranks, as an array or a string "[0, 1, 2]"; false when unreadable.
bool rank_list(const json& v, std::vector<int>& out)
{
  out.clear();
  if (v.is_array()) {
    for (const auto& r : v) {
      if (!r.is_number_integer() || r.get<int64_t>() < 0 || r.get<int64_t>() > int64_t(MAX_RANKS)) return false;
      out.push_back(int(r.get<int64_t>()));
    }
    return true;
  }
  if (!v.is_string()) return false;
  const std::string s = v.get<std::string>();
  for (size_t i = 0; i < s.size();) {
    if (isdigit(static_cast<unsigned char>(s[i]))) {
      int64_t n = 0;
      while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) {
        n = n * 10 + (s[i++] - '0');
        if (n > int64_t(MAX_RANKS)) return false;
      }
      out.push_back(int(n));
    } else if (s[i] == '[' || s[i] == ']' || s[i] == ',' || s[i] == ' ') {
      ++i;
    } else {
      return false;
    }
  }
  return true;
}

/// A size read from one event's args.
struct Size {
  bool found = false; ///< the event says something about the size
  bool known = false; ///< ... and it could be read
  uint64_t bytes = 0;
  std::string why; ///< when found but not known: the field and what is wrong with it
};

/// "In msg nelems" (or "Out msg nelems") x "dtype".
Result<Size> size_from_nelems(const json& args, const std::string& file, const std::string& at)
{
  Size s;
  auto in_n = numeric(args, "In msg nelems", 0, MAX_COUNT, true, file, at);
  if (!in_n.ok()) return in_n.error();
  auto out_n = numeric(args, "Out msg nelems", 0, MAX_COUNT, true, file, at);
  if (!out_n.ok()) return out_n.error();
  if (!*in_n && !*out_n) return s;
  s.found = true;
  const double nelems = *in_n ? **in_n : **out_n;
  const std::string dtype = text(args, "dtype");
  const size_t es = dtype_bytes(dtype);
  if (es == 0) {
    s.why = at + ".dtype: " + (dtype.empty() ? "absent" : "unknown dtype \"" + dtype + "\"");
    return s;
  }
  uint64_t n = 0;
  if (!count_of(nelems, n) || n > (uint64_t(1) << 56))
    return Error::at(file, at + (*in_n ? ".In msg nelems" : ".Out msg nelems"), "an element count that fits",
                     args.dump().substr(0, 80));
  s.known = true;
  s.bytes = n * es;
  return s;
}

/// The tensors of "Input Dims" ([[1024, 256], [], ...]) with their "Input type" (["float", "Scalar", ...]): the
/// bytes of every tensor argument. Arguments without dimensions (scalars, empty tensor lists) are skipped.
Result<Size> size_from_input_dims(const json& args, const std::string& file, const std::string& at)
{
  Size s;
  if (!args.is_object() || !args.contains("Input Dims") || !args["Input Dims"].is_array()) return s;
  const json& dims = args["Input Dims"];
  const json types = args.contains("Input type") && args["Input type"].is_array() ? args["Input type"] : json::array();
  uint64_t total = 0;
  std::string unknown;
  const std::string where = at + ".Input Dims";
  auto elements = [&](const json& shape, uint64_t& n) -> Status {
    n = 1;
    for (const auto& d : shape) {
      uint64_t v = 0;
      if (!d.is_number() || !count_of(d.get<double>(), v) || (v > 0 && n > (uint64_t(1) << 56) / v))
        return Error::at(file, where, "tensor dimensions (integers >= 0) that fit", shape.dump().substr(0, 80));
      n *= v;
    }
    return ok_status();
  };
  for (size_t k = 0; k < dims.size(); ++k) {
    const json& shape = dims[k];
    if (!shape.is_array() || shape.empty()) continue; // a scalar, None, an empty list
    const std::string type = k < types.size() && types[k].is_string() ? types[k].get<std::string>() : "";
    std::vector<const json*> tensors;
    if (shape[0].is_array()) // a tensor list
      for (const auto& sub : shape)
        tensors.push_back(&sub);
    else
      tensors.push_back(&shape);
    const size_t es = dtype_bytes(type);
    for (const json* tensor : tensors) {
      if (!tensor->is_array()) continue;
      uint64_t n = 0;
      if (auto st = elements(*tensor, n); !st.ok()) return st.error();
      s.found = true;
      if (es == 0) {
        if (unknown.empty()) unknown = type;
        continue;
      }
      if (n > ((uint64_t(1) << 60) - total) / es)
        return Error::at(file, where, "tensors whose size fits", shape.dump().substr(0, 80));
      total += n * es;
    }
  }
  if (!s.found) return s;
  if (!unknown.empty() || types.empty()) {
    s.why = at + ".Input type: " + (types.empty() ? std::string("absent") : "unknown dtype \"" + unknown + "\"");
    return s;
  }
  s.known = true;
  s.bytes = total;
  return s;
}

/// Whether a call's "Input type" names no tensor (every entry "Scalar" or empty); false when it has none.
bool tensorless(const json& call)
{
  const json args = call.value("args", json::object());
  auto types = args.find("Input type");
  if (types == args.end() || !types->is_array() || types->empty()) return false;
  for (const json& t : *types)
    if (!t.is_string() || !(t.get<std::string>().empty() || t.get<std::string>() == "Scalar")) return false;
  return true;
}

/// What is read again, after the pass over the events, of a collective call or an NCCL kernel: its name and the args
/// the reader uses (a record_param_comms event carries a few dozen others, which would hold memory for nothing).
json kept_part(json&& e)
{
  json part = json::object();
  if (auto name = e.find("name"); name != e.end()) part["name"] = std::move(*name);
  auto args = e.find("args");
  if (args == e.end()) return part;
  if (!args->is_object()) {
    part["args"] = std::move(*args);
    return part;
  }
  json& kept = part["args"] = json::object();
  for (const char* key :
       {"External id", "external id", "correlation", "Collective name", "In msg nelems", "Out msg nelems", "dtype",
        "Input Dims", "Input type", "Group size", "Process Group Name", "Process Group Ranks", "Dst Rank", "Src Rank"})
    if (auto v = args->find(key); v != args->end()) kept[key] = std::move(*v);
  return part;
}

struct Call {
  size_t event; ///< index in traceEvents
  std::string thread;
  double ts, dur; ///< microseconds
};

struct Group {                 ///< one collective: nested calls on one thread, and the kernels they launched
  std::vector<size_t> calls;   ///< indices in `calls`, outermost first
  std::vector<size_t> kernels; ///< indices in traceEvents
  double ts, end;
};

constexpr double SLACK_US = 1e-3; ///< timestamps written with three decimals

/// A Kineto trace being read: the trace so far, and what the pass over the events keeps to read the collectives from
/// after it (the calls, the kernel launches, the NCCL kernels).
struct KinetoReader {
  explicit KinetoReader(const std::string& file_name) : file(file_name)
  {
    trace.format = "kineto";
    trace.file = file;
  }

  /// One event of the pass over traceEvents: what is needed of it is kept, and the whole event only for collective
  /// calls and NCCL kernels, read again after the pass.
  Status read_event(size_t i, json&& e)
  {
    static const json NO_ARGS = json::object();
    if (!e.is_object()) return event_error(file, i, "an event object", e.type_name());
    if (text(e, "ph") != "X") return ok_status();
    const std::string name = text(e, "name"), cat = to_lower(text(e, "cat"));
    const bool kernel = cat == "kernel";
    const bool launch = cat == "cuda_runtime" || cat == "runtime" || cat == "cuda_driver";
    // A collective call: not its GPU-side mirror (gpu_user_annotation) nor its kernel.
    const bool call = !kernel && !launch && cat != "gpu_user_annotation" &&
                      (name.rfind("nccl:", 0) == 0 || name == "record_param_comms");
    // An iteration: the profiler's "ProfilerStep#N" span on the CPU (not its GPU-side mirror)
    const bool step = (cat == "cpu_op" || cat == "user_annotation") && name.rfind("ProfilerStep#", 0) == 0;
    if (!kernel && !launch && !call && !step) return ok_status();
    auto ts_field = timestamp(e, "ts", file, event_at(i));
    if (!ts_field.ok()) return ts_field.error();
    auto dur_field = duration(e, "dur", file, event_at(i));
    if (!dur_field.ok()) return dur_field.error();
    if (!*ts_field || !*dur_field)
      return event_error(file, i, "\"ts\" and \"dur\" (microseconds, dur >= 0)", e.dump().substr(0, 80));
    const double ts = **ts_field, dur = **dur_field;
    const auto found = e.find("args");
    const json& args = found != e.end() ? *found : NO_ARGS;
    if (step) {
      if (step_names.insert(name).second) trace.steps.push_back({name, ts * 1e-6, (ts + dur) * 1e-6, false, ""});
      return ok_status();
    }
    if (launch) {
      const std::string corr = id_of(args, "correlation");
      if (!corr.empty()) launches[corr] = {thread_of(e), ts};
      return ok_status();
    }
    if (call) {
      calls.push_back({i, thread_of(e), ts, dur});
      kept.emplace(i, kept_part(std::move(e)));
      return ok_status();
    }
    if (to_lower(name).find("nccl") != std::string::npos) {
      nccl_kernels.push_back(i);
      kernel_time[i] = {ts, dur};
      kept.emplace(i, kept_part(std::move(e)));
      return ok_status();
    }
    TraceOp op;
    op.name = name;
    auto dev = numeric(args, "device", 0, 65535, true, file, event_at(i) + ".args"); // a CUDA device index
    if (!dev.ok()) return dev.error();
    op.device = *dev ? "cuda:" + std::to_string(uint64_t(**dev)) : "gpu";
    op.start = ts * 1e-6;
    op.duration = dur * 1e-6;
    trace.ops.push_back(op);
    op_correlation.push_back(id_of(args, "correlation"));
    return ok_status();
  }

  /// The job: distributedInfo {"backend", "rank", "world_size", "pg_config": [{"pg_name", "ranks"}, ...]}.
  Status read_distributed_info(const json& di)
  {
    auto ws = numeric(di, "world_size", 1, MAX_RANKS, true, file, "distributedInfo");
    if (!ws.ok()) return ws.error();
    auto rk = numeric(di, "rank", 0, MAX_RANKS, true, file, "distributedInfo");
    if (!rk.ok()) return rk.error();
    if (*ws) trace.world_size = int(**ws), trace.world_size_from = "distributedInfo.world_size";
    if (*rk) trace.rank = int(**rk);
    if (*ws && *rk && trace.rank >= trace.world_size)
      return Error::at(file, "distributedInfo.rank", "a rank below world_size " + std::to_string(trace.world_size),
                       std::to_string(trace.rank));
    if (di.contains("pg_config") && di["pg_config"].is_array())
      for (size_t k = 0; k < di["pg_config"].size(); ++k) {
        const json& pg = di["pg_config"][k];
        std::vector<int> ranks;
        if (pg.is_object() && pg.contains("pg_name") && pg.contains("ranks") && rank_list(pg["ranks"], ranks))
          pg_ranks[pg["pg_name"].is_string() ? pg["pg_name"].get<std::string>() : pg["pg_name"].dump()] = ranks;
        else
          warn.add("unreadable process groups", "distributedInfo.pg_config[" + std::to_string(k) +
                                                    "]: no \"pg_name\" with a list of \"ranks\": ignored");
      }
    return ok_status();
  }

  /// Calls nested on one thread (record_param_comms > nccl:all_reduce) are one collective: the groups, each thread's
  /// by start, and the group of each call's External id.
  void group_calls()
  {
    std::vector<size_t> order(calls.size());
    for (size_t k = 0; k < order.size(); ++k)
      order[k] = k;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const Call &x = calls[a], &y = calls[b];
      if (x.thread != y.thread) return x.thread < y.thread;
      if (x.ts != y.ts) return x.ts < y.ts;
      return x.dur > y.dur; // the outer one first
    });
    for (size_t k : order) {
      const Call& c = calls[k];
      auto& mine = by_thread[c.thread];
      if (!mine.empty() && c.ts >= groups[mine.back()].ts && c.ts + c.dur <= groups[mine.back()].end + SLACK_US) {
        groups[mine.back()].calls.push_back(k);
      } else {
        mine.push_back(groups.size());
        groups.push_back({{k}, {}, c.ts, c.ts + c.dur});
      }
      const json& args = kept.at(c.event).value("args", json::object());
      for (const char* key : {"External id", "external id"})
        if (auto id = id_of(args, key); !id.empty()) by_external[id] = mine.back();
    }
  }

  /// Each NCCL kernel to the call that launched it (by its launch's correlation, else by External id); the kernels
  /// linked to no call are the orphans.
  void link_kernels()
  {
    for (size_t i : nccl_kernels) {
      const json& args = kept.at(i).value("args", json::object());
      size_t g = size_t(-1);
      if (auto it = launches.find(id_of(args, "correlation")); it != launches.end()) {
        const auto& [thread, ts] = it->second;
        if (auto th = by_thread.find(thread); th != by_thread.end()) {
          const auto& mine = th->second; // by start: the last group starting at or before the launch
          auto after =
              std::upper_bound(mine.begin(), mine.end(), ts, [&](double v, size_t gi) { return v < groups[gi].ts; });
          if (after != mine.begin() && ts <= groups[*(after - 1)].end + SLACK_US) g = *(after - 1);
        }
      }
      if (g == size_t(-1))
        for (const char* key : {"External id", "external id"})
          if (auto it = by_external.find(id_of(args, key)); g == size_t(-1) && it != by_external.end()) g = it->second;
      if (g == size_t(-1))
        orphans.push_back(i);
      else
        groups[g].kernels.push_back(i);
    }
  }

  /// The ranks of a collective from its events' args.
  Status ranks_of(const std::vector<size_t>& events, TraceCollective& c)
  {
    for (size_t i : events) {
      const json& args = kept.at(i).value("args", json::object());
      const std::string at = event_at(i) + ".args";
      auto group = numeric(args, "Group size", 1, MAX_RANKS, true, file, at);
      if (!group.ok()) return group.error();
      if (*group && c.ranks == 0) c.ranks = int(**group);
      // A send's peer is its "Dst Rank", a recv's its "Src Rank" (a global rank; the other key, where a trace has
      // both, is the recording rank itself); a batched sendrecv takes the first either names.
      const std::vector<const char*> peer_keys = c.kind == "send"   ? std::vector<const char*>{"Dst Rank"}
                                                 : c.kind == "recv" ? std::vector<const char*>{"Src Rank"}
                                                                    : std::vector<const char*>{"Dst Rank", "Src Rank"};
      for (const char* key : peer_keys) {
        if (!args.is_object() || !args.contains(key)) continue;
        auto peer = numeric(args, key, 0, MAX_RANKS, true, file, at);
        if (!peer.ok()) return peer.error();
        if (!*peer) {
          warn.add("unreadable peers", at + "." + key + ": not a rank (" + args[key].dump().substr(0, 40) +
                                           "): the peer is taken as unknown");
          continue;
        }
        if (trace.world_size > 0 && **peer >= trace.world_size)
          return Error::at(file, at + "." + key, "a rank below world_size " + std::to_string(trace.world_size),
                           args[key].dump());
        if (c.peer < 0) c.peer = int(**peer);
      }
      if (c.group.empty() && args.contains("Process Group Name"))
        c.group = args["Process Group Name"].is_string() ? args["Process Group Name"].get<std::string>()
                                                         : args["Process Group Name"].dump();
      if (c.group_ranks.empty() && args.contains("Process Group Ranks") &&
          !rank_list(args["Process Group Ranks"], c.group_ranks))
        warn.add("unreadable group ranks", at + ".Process Group Ranks: not a list of ranks (" +
                                               args["Process Group Ranks"].dump().substr(0, 40) + "): ignored");
    }
    if (c.group_ranks.empty() && !c.group.empty() && pg_ranks.count(c.group)) c.group_ranks = pg_ranks[c.group];
    if (c.ranks == 0 && !c.group_ranks.empty()) c.ranks = int(c.group_ranks.size());
    if (c.ranks == 0 && c.group.empty() && trace.world_size > 0) c.ranks = trace.world_size; // the default group
    return ok_status();
  }

  /// The size of a collective: "In msg nelems" on any of its events first, then "Input Dims" (the nccl: call's
  /// first: record_param_comms of PyTorch 1.x lists its tensors as an empty TensorList).
  Status size_of(const std::vector<size_t>& events, TraceCollective& c, const std::string& label)
  {
    std::vector<size_t> dims_order = events;
    std::stable_partition(dims_order.begin(), dims_order.end(),
                          [&](size_t i) { return text(kept.at(i), "name").rfind("nccl:", 0) == 0; });
    std::string why;
    for (int pass = 0; pass < 2; ++pass)
      for (size_t i : pass == 0 ? events : dims_order) {
        const json& args = kept.at(i).value("args", json::object());
        auto s = pass == 0 ? size_from_nelems(args, file, event_at(i) + ".args")
                           : size_from_input_dims(args, file, event_at(i) + ".args");
        if (!s.ok()) return s.error();
        if (s->known) {
          c.bytes = s->bytes;
          return ok_status();
        }
        if (s->found && why.empty()) why = s->why;
      }
    c.bytes_known = false;
    warn.add("collectives of unknown size",
             label + ": size unknown (" +
                 (why.empty() ? "neither \"In msg nelems\" nor \"Input Dims\" with \"Input type\"" : why) +
                 "): kept at its recorded time");
    return ok_status();
  }

  /// The collective of a group of calls (none for a record_param_comms "wait"): its name, kind, size and ranks, and
  /// its time, its kernels' where it has any.
  Status add_group_collective(const Group& g)
  {
    TraceCollective c;
    std::vector<size_t> events; // the calls, outermost first, then the kernels
    std::string nccl_name, coll_name;
    for (size_t k : g.calls) {
      const size_t i = calls[k].event;
      events.push_back(i);
      const std::string name = text(kept.at(i), "name");
      if (nccl_name.empty() && name.rfind("nccl:", 0) == 0) nccl_name = name;
      if (coll_name.empty()) coll_name = text(kept.at(i).value("args", json::object()), "Collective name");
    }
    events.insert(events.end(), g.kernels.begin(), g.kernels.end());
    // record_param_comms "wait" (PyTorch >= 2.1) is the wait on an earlier collective's work, not data movement
    if (nccl_name.empty() && coll_name == "wait") return ok_status();
    // PyTorch 2.0 records the same wait without a "Collective name": a lone record_param_comms whose inputs are
    // scalars only (no tensor: "Input type" ["Scalar", "Scalar", "Scalar", "", ...]) and that launched no kernel (its
    // one runtime call a cudaStreamWaitEvent: param's dlrm_kineto traces).
    if (nccl_name.empty() && coll_name.empty() && g.kernels.empty() && g.calls.size() == 1 &&
        tensorless(kept.at(calls[g.calls.front()].event)) && !launched_inside(calls[g.calls.front()])) {
      tensorless_waits.push_back(calls[g.calls.front()].event);
      return ok_status();
    }
    const size_t first = calls[g.calls.front()].event;
    c.name = !nccl_name.empty() ? nccl_name : coll_name.empty() ? text(kept.at(first), "name") : "nccl:" + coll_name;
    c.kind = collective_kind(!coll_name.empty() ? coll_name : nccl_name.empty() ? "" : nccl_name.substr(5));
    const std::string label = event_at(first) + " (" + c.name + ")";
    if (c.kind == "collective")
      warn.add("unknown collective kinds",
               label + ": unknown collective (\"Collective name\" \"" + coll_name + "\"): kept at its recorded time");
    if (auto st = size_of(events, c, label); !st.ok()) return st.error();
    if (auto st = ranks_of(events, c); !st.ok()) return st.error();
    c.issued = g.ts * 1e-6;
    if (g.kernels.empty()) {
      c.start = g.ts * 1e-6;
      c.duration = calls[g.calls.front()].dur * 1e-6; // the outermost call
      warn.add("collectives without a kernel",
               label + ": no NCCL kernel linked to it (by \"correlation\" or \"External id\"): its time is the CPU "
                       "call's");
    } else {
      double lo = INFINITY, span = 0;
      for (size_t i : g.kernels)
        lo = std::min(lo, kernel_time.at(i).first);
      for (size_t i : g.kernels) { // (ts - lo) + dur: an epoch timestamp's rounding stays out of the duration
        const auto [ts, dur] = kernel_time.at(i);
        span = std::max(span, (ts - lo) + dur);
      }
      c.start = lo * 1e-6;
      c.duration = span * 1e-6;
    }
    trace.collectives.push_back(c);
    return ok_status();
  }

  /// Whether a kernel was launched on the call's thread during the call (a barrier's allreduce, say: then the call is
  /// not a wait). The launches by thread and time are gathered once, when first asked.
  bool launched_inside(const Call& c)
  {
    if (!launch_times_built) { // the launches of kernels: of compute ops and of NCCL kernels, by correlation
      launch_times_built = true;
      auto add = [this](const std::string& corr) {
        if (auto it = launches.find(corr); it != launches.end())
          launch_times[it->second.first].push_back(it->second.second);
      };
      for (const std::string& corr : op_correlation)
        add(corr);
      for (size_t i : nccl_kernels)
        add(id_of(kept.at(i).value("args", json::object()), "correlation"));
      for (auto& [thread, times] : launch_times)
        std::sort(times.begin(), times.end());
    }
    auto it = launch_times.find(c.thread);
    if (it == launch_times.end()) return false;
    auto first = std::lower_bound(it->second.begin(), it->second.end(), c.ts - SLACK_US);
    return first != it->second.end() && *first <= c.ts + c.dur + SLACK_US;
  }

  /// An NCCL kernel whose call is not in the trace: a collective of its own, with what its args say.
  Status add_orphan_collective(size_t i)
  {
    const json& e = kept.at(i);
    TraceCollective c;
    c.name = text(e, "name");
    const std::string coll = text(e.value("args", json::object()), "Collective name");
    std::string kernel = c.name.substr(0, c.name.find('('));
    c.kind = collective_kind(!coll.empty() ? coll : kernel);
    const std::string label = event_at(i) + " (" + kernel + ")";
    warn.add("NCCL kernels without a call",
             label + ": an NCCL kernel linked to no nccl: call (no launch with its \"correlation\" inside one, no "
                     "call with its \"External id\")");
    if (auto st = size_of({i}, c, label); !st.ok()) return st.error();
    if (auto st = ranks_of({i}, c); !st.ok()) return st.error();
    c.start = kernel_time.at(i).first * 1e-6;
    c.duration = kernel_time.at(i).second * 1e-6;
    if (auto it = launches.find(id_of(e.value("args", json::object()), "correlation")); it != launches.end())
      c.issued = it->second.second * 1e-6;
    trace.collectives.push_back(c);
    return ok_status();
  }

  const std::string& file;
  Trace trace;
  Warnings warn;
  std::vector<Call> calls;
  std::unordered_map<std::string, std::pair<std::string, double>> launches; // correlation -> (thread, ts)
  std::vector<size_t> nccl_kernels;
  std::vector<std::string> op_correlation; // per op: its kernel's correlation id
  std::set<std::string> step_names;        // a step written twice (cpu_op and user_annotation) is one step
  std::unordered_map<size_t, std::pair<double, double>> kernel_time; // NCCL kernel -> (ts, dur), microseconds
  std::unordered_map<size_t, json> kept; // collective calls and NCCL kernels (kept_part), by index in traceEvents
  std::map<std::string, std::vector<int>> pg_ranks; // process group name -> its ranks (distributedInfo)
  std::vector<Group> groups;
  std::map<std::string, std::vector<size_t>> by_thread; // thread -> groups, by start
  std::unordered_map<std::string, size_t> by_external;  // External id of any call -> group
  std::vector<size_t> orphans;                          // NCCL kernels linked to no call
  std::vector<size_t> tensorless_waits;                 // record_param_comms read as waits (no "Collective name")
  std::unordered_map<std::string, std::vector<double>> launch_times; // thread -> its launches' times (launched_inside)
  bool launch_times_built = false;
};

} // namespace

Result<Trace> parse_kineto(const std::string& input, const std::string& file)
{
  KinetoReader r(file);
  Trace& t = r.trace;
  Warnings& warn = r.warn;

  // One pass over the events as they are parsed (parse_json_events: the events are not held as a document): what is
  // needed of each is kept, and the whole event only for collective calls and NCCL kernels, read again below.
  std::optional<Error> event_error_found; // the first event's, reported once the text is known to be JSON
  auto j = parse_json_events(input, file, [&](size_t i, json&& e) {
    if (event_error_found) return;
    if (auto st = r.read_event(i, std::move(e)); !st.ok()) event_error_found = st.error();
  });
  if (!j.ok()) return j.error();
  const json& root = j.value();
  if (!root.is_object() || !root.contains("traceEvents") || !root["traceEvents"].is_array())
    return Error::at(file, "traceEvents", "an array of Chrome trace events (a PyTorch profiler trace)", "none");

  if (root.contains("distributedInfo") && root["distributedInfo"].is_object())
    if (auto st = r.read_distributed_info(root["distributedInfo"]); !st.ok()) return st.error();

  if (event_error_found) return *event_error_found;
  if (!t.steps.empty()) t.steps_from = "ProfilerStep# annotations (a kernel is in the step that launched it)";
  // A kernel belongs to the step that launched it (the GPU runs behind the CPU): its launch's time, where known.
  for (size_t k = 0; k < t.ops.size(); ++k)
    if (auto it = r.launches.find(r.op_correlation[k]); it != r.launches.end())
      t.ops[k].issued = it->second.second * 1e-6;

  r.group_calls();
  r.link_kernels();
  for (const Group& g : r.groups)
    if (auto st = r.add_group_collective(g); !st.ok()) return st.error();
  for (size_t i : r.orphans)
    if (auto st = r.add_orphan_collective(i); !st.ok()) return st.error();
  if (!r.tensorless_waits.empty()) // one line: they are many, and the same
    warn.add("waits on collectives",
             std::to_string(r.tensorless_waits.size()) +
                 " record_param_comms with no tensor, no \"Collective name\" "
                 "and no kernel launched (" +
                 event_at(*std::min_element(r.tensorless_waits.begin(), r.tensorless_waits.end())) +
                 (r.tensorless_waits.size() > 1 ? ", ..." : "") +
                 ") read as waits on earlier collectives (PyTorch 2.0 records them so): no data moved, left out");
  std::stable_sort(t.collectives.begin(), t.collectives.end(),
                   [](const TraceCollective& a, const TraceCollective& b) { return a.start < b.start; });
  warn.into(t.warnings);
  return std::move(t);
}

} // namespace tp::traces
