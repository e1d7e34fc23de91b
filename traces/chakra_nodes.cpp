// Chakra nodes (either form) into a Trace: one set of rules for missing attributes, kinds and start times (see
// chakra_nodes.hpp).
#include "traces/chakra_nodes.hpp"
#include "core/common/suggest.hpp"
#include "traces/json_events.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

namespace tp::traces::detail {

namespace {

/// Chakra's CollectiveCommType (et_def.proto) by value; "" for a value the schema does not define.
std::string kind_of_value(int64_t v)
{
  static const char* names[] = {"allreduce", "reduce",        "allgather",          "gather", "scatter", "broadcast",
                                "alltoall",  "reducescatter", "reducescatterblock", "barrier"};
  return v >= 0 && v < 10 ? names[v] : "";
}

/// "ALL_REDUCE", "AllReduce", "all_reduce" -> "allreduce"; "" when it is not one of the schema's names.
std::string kind_of_name(std::string s)
{
  s = to_lower(std::move(s));
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  for (int64_t v = 0; v < 10; ++v)
    if (kind_of_value(v) == s) return s;
  return "";
}

std::string node_label(const ChakraNode& n)
{
  return n.where + " (node " + std::to_string(n.id) + (n.name.empty() ? "" : " \"" + n.name.substr(0, 60) + "\"") + ")";
}

std::string rank_text(const std::optional<int64_t>& r)
{
  return r ? "rank " + std::to_string(*r) : "?";
}

/// Start times from data dependencies (Kahn's order: linear in nodes + edges). Returns the index of a node on a
/// cycle, or -1.
long schedule(std::vector<ChakraNode>& nodes, Warnings& warn, const std::string& form)
{
  std::unordered_map<uint64_t, size_t> index;
  index.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    index.emplace(nodes[i].id, i); // a repeated id: the first node keeps it
  std::vector<size_t> waiting(nodes.size(), 0);
  std::vector<std::vector<size_t>> children(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    for (uint64_t d : nodes[i].data_deps) {
      auto it = index.find(d);
      if (it == index.end()) {
        warn.add("chakra: dependency on a node the file lacks",
                 "chakra: " + node_label(nodes[i]) + " depends on node " + std::to_string(d) +
                     ", which the file lacks: the dependency is ignored");
        continue;
      }
      children[it->second].push_back(i);
      ++waiting[i];
    }
  std::vector<size_t> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (waiting[i] == 0) ready.push_back(i);
  std::vector<double> start(nodes.size(), 0);
  size_t done = 0;
  while (!ready.empty()) {
    const size_t i = ready.back();
    ready.pop_back();
    ++done;
    nodes[i].start_us = start[i];
    const double end = start[i] + nodes[i].duration_us;
    for (size_t c : children[i]) {
      start[c] = std::max(start[c], end);
      if (--waiting[c] == 0) ready.push_back(c);
    }
  }
  if (done == nodes.size()) return -1;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (waiting[i] > 0) return long(i);
  return -1;
}

} // namespace

Result<Trace> chakra_trace(std::vector<ChakraNode> nodes, const std::string& file, const std::string& form)
{
  Trace t;
  t.format = "chakra";
  t.file = file;
  Warnings warn;
  // Keep the nodes a replay uses; say what else there was.
  std::vector<ChakraNode> kept;
  kept.reserve(nodes.size());
  for (auto& n : nodes) {
    if (n.type == COMP_NODE || n.type == COMM_COLL_NODE || n.type == COMM_SEND_NODE || n.type == COMM_RECV_NODE) {
      kept.push_back(std::move(n));
      continue;
    }
    if (n.type == METADATA_NODE) continue; // labels, process-group set-up: no time of their own to replay
    const std::string what = n.type == INVALID_NODE                                ? "INVALID_NODE (no type)"
                             : n.type == MEM_LOAD_NODE || n.type == MEM_STORE_NODE ? "memory"
                                                                                   : "unknown type";
    warn.add("chakra: " + what + " nodes not replayed", "chakra: " + node_label(n) + " is a " + what + " node (type " +
                                                            std::to_string(n.type) + "): not replayed");
  }
  const bool timed = std::any_of(kept.begin(), kept.end(), [](const ChakraNode& n) { return n.start_us > 0; });
  if (!timed && !kept.empty()) {
    const long cycle = schedule(kept, warn, form);
    if (cycle >= 0)
      return Error::at(file, kept[size_t(cycle)].where + ": dataDeps",
                       "data dependencies without a cycle (a node cannot wait for itself)",
                       "a cycle through node " + std::to_string(kept[size_t(cycle)].id));
  }
  // Sends in the file, by (source, destination, bytes): a receive matching one is the same transfer's other end.
  std::map<std::tuple<int64_t, int64_t, uint64_t>, size_t> sends;
  for (const auto& n : kept)
    if (n.type == COMM_SEND_NODE && !n.is_cpu_op && n.comm_src && n.comm_dst && n.comm_size)
      ++sends[{*n.comm_src, *n.comm_dst, *n.comm_size}];
  for (const auto& n : kept) {
    const double start = n.start_us * 1e-6, dur = n.duration_us * 1e-6;
    if (n.type == COMP_NODE || n.is_cpu_op) {
      t.ops.push_back({n.name, "rank", start, dur});
      continue;
    }
    if (!n.comm_size)
      warn.add("chakra: unknown comm_size", "chakra: " + node_label(n) +
                                                " has no comm_size attribute: its size is unknown (kept at its "
                                                "recorded time, not counted as 0 bytes)");
    if (n.type == COMM_COLL_NODE) {
      TraceCollective c;
      c.name = n.name;
      if (n.comm_type)
        c.kind = kind_of_value(*n.comm_type);
      else if (!n.comm_type_name.empty())
        c.kind = kind_of_name(n.comm_type_name);
      if (c.kind.empty()) {
        c.kind = "collective";
        warn.add("chakra: unknown comm_type",
                 "chakra: " + node_label(n) +
                     (n.comm_type || !n.comm_type_name.empty()
                          ? " has comm_type " + (n.comm_type ? std::to_string(*n.comm_type) : n.comm_type_name) +
                                ", which Chakra's schema does not define"
                          : " has no comm_type attribute") +
                     ": its kind is unknown");
      }
      c.bytes = n.comm_size.value_or(0);
      c.bytes_known = n.comm_size.has_value();
      c.group = n.pg_name;
      c.start = start;
      c.duration = dur;
      t.collectives.push_back(c);
      continue;
    }
    if (n.type == COMM_RECV_NODE && n.comm_src && n.comm_dst && n.comm_size) {
      auto it = sends.find({*n.comm_src, *n.comm_dst, *n.comm_size});
      if (it != sends.end() && it->second > 0) {
        --it->second; // the other end of a send in this file
        continue;
      }
    }
    TraceTransfer x;
    x.tensor = n.name;
    x.src_device = rank_text(n.comm_src);
    x.dst_device = rank_text(n.comm_dst);
    x.bytes = n.comm_size.value_or(0);
    x.start = start;
    x.duration = dur;
    if (!n.comm_src || !n.comm_dst)
      warn.add("chakra: point-to-point peer not recorded",
               "chakra: " + node_label(n) + " (" + (n.type == COMM_SEND_NODE ? "send" : "receive") + ") has no " +
                   (!n.comm_src && !n.comm_dst ? "comm_src or comm_dst"
                    : !n.comm_src              ? "comm_src"
                                               : "comm_dst") +
                   ": that end is shown as \"?\"");
    t.transfers.push_back(x);
  }
  warn.into(t.warnings);
  return t;
}

} // namespace tp::traces::detail
