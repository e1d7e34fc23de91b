// PipeDream graph.txt parser (see layer_profile.hpp).
#include "models/workload/layer_profile.hpp"
#include "core/common/file_io.hpp"
#include "core/common/number_rule.hpp"

#include <cstdlib>
#include <fstream>
#include <map>
#include <queue>
#include <set>
#include <sstream>

namespace tp::models {

double LayerProfile::compute_seconds() const
{
  double s = 0;
  for (const auto& l : layers)
    s += l.forward_seconds + l.backward_seconds;
  return s;
}

double LayerProfile::parameter_bytes() const
{
  double s = 0;
  for (const auto& l : layers)
    s += l.parameter_bytes;
  return s;
}

namespace {

std::string trim(const std::string& s)
{
  const auto b = s.find_first_not_of(" \t\r");
  const auto e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

long node_number(const std::string& id)
{
  return std::strtol(id.c_str() + 4, nullptr, 10);
}

bool is_node_id(const std::string& s)
{
  if (s.rfind("node", 0) != 0 || s.size() == 4) return false;
  for (size_t i = 4; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

} // namespace

Result<LayerProfile> parse_pipedream_profile(const std::string& path)
{
  auto text = io::read_file_capped(path, "PipeDream graph.txt", io::input_cap(io::SPEC_INPUT_CAP));
  if (!text.ok()) return text.error();
  std::istringstream in(text.value());
  LayerProfile p;
  p.file = path;
  std::map<std::string, ProfiledLayer> nodes;
  std::vector<std::pair<std::string, std::string>> edges;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string where = "line " + std::to_string(lineno);
    line = trim(line);
    if (line.empty()) continue;
    const auto first = line.find(" -- ");
    if (first == std::string::npos)
      return Error::at(path, where, "'nodeA -- nodeB' or 'nodeN -- Module -- key=value, ...'", "\"" + line + "\"");
    const std::string a = line.substr(0, first);
    const auto last = line.rfind(" -- ");
    if (last == first) { // an edge
      const std::string b = trim(line.substr(first + 4));
      if (!is_node_id(a) || !is_node_id(b))
        return Error::at(path, where, "an edge between two node ids", "\"" + line + "\"");
      edges.emplace_back(a, b);
      continue;
    }
    if (!is_node_id(a)) return Error::at(path, where, "a node id (nodeN)", "\"" + a + "\"");
    ProfiledLayer l;
    l.id = a;
    l.module = line.substr(first + 4, last - first - 4);
    std::set<std::string> seen;
    std::string rest = line.substr(last + 4);
    size_t pos = 0;
    while (pos < rest.size()) {
      auto comma = rest.find(',', pos);
      if (comma == std::string::npos) comma = rest.size();
      const std::string kv = trim(rest.substr(pos, comma - pos));
      pos = comma + 1;
      const auto eq = kv.find('=');
      if (eq == std::string::npos) return Error::at(path, where, "key=value", "\"" + kv + "\"");
      const std::string key = kv.substr(0, eq), val = kv.substr(eq + 1);
      char* end = nullptr;
      const double v = std::strtod(val.c_str(), &end);
      // the number rule (core/common/number_rule.hpp): "nan", "inf", "-0" are refused; times in ms up to an hour,
      // sizes up to 1 PiB
      const bool time = key.ends_with("_time");
      const double hi = time ? 3.6e6 : 1125899906842624.0;
      if (end == val.c_str() || *end != '\0' || !number_ok(v, 0, hi))
        return Error::at(path, where + ": " + key, range_text(0, hi, time ? "milliseconds" : "bytes"),
                         "\"" + val + "\"");
      if (seen.count(key)) return Error::at(path, where + ": " + key, "each key once per node", "a second time");
      if (key == "forward_compute_time")
        l.forward_seconds = v * 1e-3;
      else if (key == "backward_compute_time")
        l.backward_seconds = v * 1e-3;
      else if (key == "activation_size")
        l.activation_bytes = v;
      else if (key == "parameter_size")
        l.parameter_bytes = v;
      else
        return Error::at(path, where, "forward_compute_time, backward_compute_time, activation_size or parameter_size",
                         "\"" + key + "\"");
      seen.insert(key);
    }
    if (seen.size() != 4)
      return Error::at(path, where,
                       "all four of forward_compute_time, backward_compute_time, activation_size, parameter_size",
                       std::to_string(seen.size()) + " of them");
    if (!nodes.emplace(a, l).second) return Error::at(path, where, "each node defined once", a + " again");
  }
  if (nodes.empty()) return Error::at(path, "", "at least one node line", "none");
  // Kahn's algorithm, smallest node number first among the ready ones.
  std::map<std::string, std::vector<std::string>> out;
  std::map<std::string, int> indeg;
  for (const auto& [id, _] : nodes)
    indeg[id] = 0;
  for (const auto& [a, b] : edges) {
    if (!nodes.count(a) || !nodes.count(b))
      return Error::at(path, "edge " + a + " -- " + b, "both ends defined as nodes", "an undefined node");
    out[a].push_back(b);
    ++indeg[b];
  }
  auto later = [](const std::string& x, const std::string& y) { return node_number(x) > node_number(y); };
  std::priority_queue<std::string, std::vector<std::string>, decltype(later)> ready(later);
  for (const auto& [id, d] : indeg)
    if (d == 0) ready.push(id);
  while (!ready.empty()) {
    const std::string id = ready.top();
    ready.pop();
    p.layers.push_back(nodes.at(id));
    for (const auto& b : out[id])
      if (--indeg[b] == 0) ready.push(b);
  }
  if (p.layers.size() != nodes.size()) return Error::at(path, "edges", "an acyclic graph", "a cycle");
  return p;
}

} // namespace tp::models
