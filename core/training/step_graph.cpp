// Step graph construction and partitioning (see step_graph.hpp).
#include "core/training/step_graph.hpp"

#include "core/rendezvous/rendezvous_key.hpp"

#include <boost/graph/topological_sort.hpp>

#include <algorithm>
#include <cctype>

namespace tp::training {

std::string worker_task(int w)
{
  return "/job:worker/replica:0/task:" + std::to_string(w);
}

std::string ps_task(int s)
{
  return "/job:ps/replica:0/task:" + std::to_string(s);
}

std::string task_of_device(const std::string& device)
{
  const auto p = device.find("/device:");
  return p == std::string::npos ? device : device.substr(0, p);
}

const std::vector<OpId>& StepGraph::ops_of(const std::string& task) const
{
  static const std::vector<OpId> none;
  if (rank_template) {
    const int r = rank_of_task(task);
    if (r < 0 || r >= layout.workers) return none;
    auto it = ops_by_task.find(worker_task(0));
    return it == ops_by_task.end() ? none : it->second;
  }
  auto it = ops_by_task.find(task);
  return it == ops_by_task.end() ? none : it->second;
}

int rank_of_task(const std::string& task)
{
  static const std::string prefix = "/job:worker/replica:0/task:";
  if (task.size() <= prefix.size() || task.compare(0, prefix.size(), prefix) != 0) return -1;
  long r = 0;
  for (size_t i = prefix.size(); i < task.size(); ++i) {
    if (task[i] < '0' || task[i] > '9' || r > 100000000) return -1;
    r = r * 10 + (task[i] - '0');
  }
  return int(r);
}

void index_tasks(StepGraph& sg)
{
  sg.ops_by_task.clear();
  // Ops of one device come in runs: cut the task name once per run of the same device.
  const std::string* last_device = nullptr;
  std::vector<OpId>* ops = nullptr;
  for (auto [it, end] = boost::vertices(sg.graph); it != end; ++it) {
    const std::string& d = sg.graph[*it].device;
    if (!last_device || d != *last_device) {
      ops = &sg.ops_by_task[task_of_device(d)];
      last_device = &d;
    }
    ops->push_back(*it);
  }
}

namespace {

std::string cpu_of(const std::string& task)
{
  return task + "/device:CPU:0";
}

std::string gpu_of(const std::string& task, int gpu)
{
  return task + "/device:GPU:" + std::to_string(gpu);
}

OpId add_op(Graph& g, Op op)
{
  return boost::add_vertex(std::move(op), g);
}

void flow(Graph& g, OpId from, OpId to, const std::string& tensor = {})
{
  boost::add_edge(from, to, Flow{tensor}, g);
}

struct FlatVariable {
  size_t layer;
  ModelVariable var;
};

std::vector<FlatVariable> flatten(const TrainingModel& m)
{
  std::vector<FlatVariable> out;
  for (size_t l = 0; l < m.layers.size(); ++l)
    for (const auto& v : m.layers[l].variables)
      out.push_back({l, v});
  return out;
}

/// Forward and backward chains of one tower; returns (forward ops, backward ops) per layer.
std::pair<std::vector<OpId>, std::vector<OpId>> tower(Graph& g, const TrainingModel& m, const std::string& device,
                                                      const std::string& prefix, const std::string& grad_suffix)
{
  std::vector<OpId> fwd, bwd;
  for (size_t l = 0; l < m.layers.size(); ++l) {
    Op op;
    op.kind = OpKind::FORWARD;
    op.name = prefix + "/fwd/" + m.layers[l].name;
    op.device = device;
    op.seconds = m.layers[l].forward_seconds;
    fwd.push_back(add_op(g, op));
    if (l) flow(g, fwd[l - 1], fwd[l]);
  }
  bwd.resize(m.layers.size());
  for (size_t i = m.layers.size(); i-- > 0;) {
    Op op;
    op.kind = OpKind::BACKWARD;
    op.name = prefix + "/bwd/" + m.layers[i].name;
    op.device = device;
    op.seconds = m.layers[i].backward_seconds;
    for (const auto& v : m.layers[i].variables)
      op.outputs.push_back({"grad/" + v.name + grad_suffix, v.bytes});
    bwd[i] = add_op(g, op);
    flow(g, i + 1 == m.layers.size() ? fwd.back() : bwd[i + 1], bwd[i]);
  }
  return {fwd, bwd};
}

/// Check the layout against the model and the mode, giving each worker GPUs 0..gpus_per_worker-1 when gpu_of is empty.
Status check_and_fill_layout(const TrainingModel& model, StepLayout& layout)
{
  if (model.layers.empty()) return Error::at("", "model", "a model with layers", "none");
  if (layout.workers < 1) return Error::at("", "workers", "at least 1", std::to_string(layout.workers));
  if (layout.gpus_per_worker < 1)
    return Error::at("", "gpus_per_worker", "at least 1", std::to_string(layout.gpus_per_worker));
  if (layout.mode == SyncMode::PARAMETER_SERVER && layout.ps_tasks < 0)
    return Error::at("", "ps_tasks", "0 or more", std::to_string(layout.ps_tasks));
  if (layout.mode == SyncMode::PARAMETER_SERVER && layout.ps_tasks == 0 && layout.workers != 1)
    return Error::at("", "ps_tasks", "at least 1 with several workers (0 keeps variables on the only worker)", "0");
  if (layout.mode == SyncMode::ALLREDUCE && layout.gpus_per_worker != 1)
    return Error::at("", "gpus_per_worker", "1 in allreduce mode (one rank per GPU)",
                     std::to_string(layout.gpus_per_worker));
  if (layout.gpu_of.empty())
    for (int w = 0; w < layout.workers; ++w) {
      std::vector<int> g(size_t(layout.gpus_per_worker));
      for (int k = 0; k < layout.gpus_per_worker; ++k)
        g[size_t(k)] = k;
      layout.gpu_of.push_back(g);
    }
  if (int(layout.gpu_of.size()) != layout.workers)
    return Error::at("", "gpu_of", std::to_string(layout.workers) + " workers", std::to_string(layout.gpu_of.size()));
  for (const auto& g : layout.gpu_of)
    if (int(g.size()) != layout.gpus_per_worker)
      return Error::at("", "gpu_of", std::to_string(layout.gpus_per_worker) + " GPUs per worker",
                       std::to_string(g.size()));
  return ok_status();
}

/// Allreduce mode: per rank a tower on its GPU, and per variable its copy, its gradient's allreduce and its apply.
void add_allreduce_ranks(StepGraph& sg, const TrainingModel& model, const StepLayout& layout,
                         const std::vector<FlatVariable>& vars)
{
  Graph& g = sg.graph;
  for (int r = 0; r < layout.workers; ++r) {
    const std::string task = worker_task(r);
    const std::string dev = gpu_of(task, layout.gpu_of[size_t(r)][0]);
    const std::string suffix = "/rank" + std::to_string(r);
    auto [fwd, bwd] = tower(g, model, dev, "rank" + std::to_string(r), suffix);
    for (const auto& fv : vars) {
      Op var;
      var.kind = OpKind::VARIABLE;
      var.name = "rank" + std::to_string(r) + "/var/" + fv.var.name;
      var.device = dev;
      var.outputs.push_back({fv.var.name + suffix, fv.var.bytes});
      const OpId vid = add_op(g, var);
      flow(g, vid, fwd[fv.layer], fv.var.name + suffix);
      Op ar;
      ar.kind = OpKind::ALLREDUCE;
      ar.name = "rank" + std::to_string(r) + "/allreduce/" + fv.var.name;
      ar.device = layout.allreduce_on_host ? cpu_of(task) : dev;
      ar.collective = "allreduce/" + fv.var.name;
      ar.outputs.push_back({"grad/" + fv.var.name + suffix + "/reduced", fv.var.bytes});
      const OpId aid = add_op(g, ar);
      flow(g, bwd[fv.layer], aid, "grad/" + fv.var.name + suffix);
      Op ap;
      ap.kind = OpKind::APPLY;
      ap.name = "rank" + std::to_string(r) + "/apply/" + fv.var.name;
      ap.device = dev;
      ap.bytes = fv.var.bytes;
      ap.tensor = fv.var.name + suffix;
      flow(g, aid, add_op(g, ap), "grad/" + fv.var.name + suffix + "/reduced");
    }
  }
}

/// A gradient on its way to a variable: the op that produces it and the tensor's name.
using GradientSource = std::pair<OpId, std::string>;

/// Parameter-server mode: the PS tasks and each variable on the least loaded shard (the only worker's CPU without PS
/// tasks); the variables' ops, in the model's order.
std::vector<OpId> add_ps_variables(StepGraph& sg, const StepLayout& layout, const std::vector<FlatVariable>& vars)
{
  Graph& g = sg.graph;
  const int shards = std::max(layout.ps_tasks, 1);
  sg.ps_bytes.assign(size_t(shards), 0);
  for (int s = 0; s < layout.ps_tasks; ++s)
    sg.tasks.push_back(ps_task(s));
  std::vector<OpId> var_op;
  for (const auto& fv : vars) {
    const int s = int(std::min_element(sg.ps_bytes.begin(), sg.ps_bytes.end()) - sg.ps_bytes.begin());
    sg.ps_bytes[size_t(s)] += fv.var.bytes;
    sg.variable_ps.push_back(s);
    Op var;
    var.kind = OpKind::VARIABLE;
    var.name = "var/" + fv.var.name;
    var.device = cpu_of(layout.ps_tasks ? ps_task(s) : worker_task(0));
    var.outputs.push_back({fv.var.name + "/read", fv.var.bytes});
    var_op.push_back(add_op(g, var));
  }
  return var_op;
}

/// Parameter-server mode, worker `w`: its towers, reading each variable from the PS or from the worker's pulled copy,
/// and the gradients it pushes per variable (its towers', or their sum on the worker) appended to `pushes`.
void add_ps_worker(StepGraph& sg, const TrainingModel& model, const StepLayout& layout,
                   const std::vector<FlatVariable>& vars, const std::vector<OpId>& var_op, int w,
                   std::vector<std::vector<GradientSource>>& pushes)
{
  Graph& g = sg.graph;
  const std::string task = worker_task(w);
  std::vector<std::vector<GradientSource>> tower_grads(vars.size());
  // Where this worker's towers read each variable: the PS, or the worker's own pulled copy.
  std::vector<GradientSource> source;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!layout.fetch_per_worker || layout.ps_tasks == 0) {
      source.push_back({var_op[i], vars[i].var.name + "/read"});
      continue;
    }
    Op id;
    id.kind = OpKind::IDENTITY;
    id.name = "worker" + std::to_string(w) + "/cache/" + vars[i].var.name;
    id.device = cpu_of(task);
    const std::string out = vars[i].var.name + "/worker" + std::to_string(w);
    id.outputs.push_back({out, vars[i].var.bytes});
    const OpId c = add_op(g, id);
    flow(g, var_op[i], c, vars[i].var.name + "/read");
    source.push_back({c, out});
  }
  for (int k = 0; k < layout.gpus_per_worker; ++k) {
    const std::string dev = gpu_of(task, layout.gpu_of[size_t(w)][size_t(k)]);
    const std::string prefix = "worker" + std::to_string(w) + "/tower" + std::to_string(k);
    const std::string suffix = "/worker" + std::to_string(w) + "/tower" + std::to_string(k);
    auto [fwd, bwd] = tower(g, model, dev, prefix, suffix);
    for (size_t i = 0; i < vars.size(); ++i) {
      flow(g, source[i].first, fwd[vars[i].layer], source[i].second);
      tower_grads[i].push_back({bwd[vars[i].layer], "grad/" + vars[i].var.name + suffix});
    }
  }
  for (size_t i = 0; i < vars.size(); ++i) {
    if (layout.gpus_per_worker > 1 && layout.aggregate_on_worker) {
      Op agg;
      agg.kind = OpKind::AGGREGATE;
      agg.name = "worker" + std::to_string(w) + "/aggregate/" + vars[i].var.name;
      agg.device = cpu_of(task);
      agg.arity = layout.gpus_per_worker;
      const std::string out = "grad/" + vars[i].var.name + "/worker" + std::to_string(w);
      agg.outputs.push_back({out, vars[i].var.bytes});
      const OpId a = add_op(g, agg);
      for (const auto& [op, tensor] : tower_grads[i])
        flow(g, op, a, tensor);
      pushes[i].push_back({a, out});
    } else {
      for (const auto& p : tower_grads[i])
        pushes[i].push_back(p);
    }
  }
}

/// Parameter-server mode: per variable, the sum of the gradients pushed to it (when more than one) and its apply.
void add_ps_applies(StepGraph& sg, const std::vector<FlatVariable>& vars, const std::vector<OpId>& var_op,
                    const std::vector<std::vector<GradientSource>>& pushes)
{
  Graph& g = sg.graph;
  for (size_t i = 0; i < vars.size(); ++i) {
    const std::string dev = g[var_op[i]].device;
    OpId grad_src;
    std::string grad_tensor;
    if (pushes[i].size() == 1) {
      grad_src = pushes[i][0].first;
      grad_tensor = pushes[i][0].second;
    } else {
      Op agg;
      agg.kind = OpKind::AGGREGATE;
      agg.name = "ps/aggregate/" + vars[i].var.name;
      agg.device = dev;
      agg.arity = int(pushes[i].size());
      grad_tensor = "grad/" + vars[i].var.name + "/sum";
      agg.outputs.push_back({grad_tensor, vars[i].var.bytes});
      grad_src = add_op(g, agg);
      for (const auto& [op, tensor] : pushes[i])
        flow(g, op, grad_src, tensor);
    }
    Op ap;
    ap.kind = OpKind::APPLY;
    ap.name = "apply/" + vars[i].var.name;
    ap.device = dev;
    ap.bytes = vars[i].var.bytes;
    ap.tensor = vars[i].var.name + "/read";
    flow(g, grad_src, add_op(g, ap), grad_tensor);
  }
}

/// `a` in rank 0's template renamed for rank 1 is `b`, rank 1's own op (a collective's name is every rank's).
bool renames_to(const RankNames& names, const Op& a, const Op& b)
{
  if (a.kind != b.kind || a.seconds != b.seconds || a.arity != b.arity || a.collective != b.collective ||
      a.bytes != b.bytes || a.remote != b.remote || a.outputs.size() != b.outputs.size())
    return false;
  for (size_t k = 0; k < a.outputs.size(); ++k)
    if (a.outputs[k].bytes != b.outputs[k].bytes || names(a.outputs[k].tensor) != b.outputs[k].tensor) return false;
  return names(a.name) == b.name && names(a.device) == b.device && names(a.key) == b.key && names(a.tensor) == b.tensor;
}

} // namespace

RankNames::RankNames(const StepLayout& layout, int rank)
    : rank_(rank), gpu_from_(gpu_of(worker_task(0), layout.gpu_of.at(0).at(0))),
      gpu_to_(gpu_of(worker_task(rank), layout.gpu_of.at(size_t(rank)).at(0))), cpu_from_(cpu_of(worker_task(0))),
      cpu_to_(cpu_of(worker_task(rank))), token_to_("rank" + std::to_string(rank))
{
}

std::string RankNames::operator()(const std::string& s) const
{
  if (rank_ == 0 || s.empty()) return s;
  static const std::string token = "rank0";
  auto digit = [&](size_t i) { return i < s.size() && s[i] >= '0' && s[i] <= '9'; };
  auto word = [&](size_t i) { return i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_'); };
  std::string out;
  out.reserve(s.size() + 8);
  // Only a position holding a pattern's first character can start one: the characters before it are copied at once.
  const bool scan = !gpu_from_.empty() && !cpu_from_.empty();
  size_t i = 0;
  while (i < s.size()) {
    if (scan) {
      size_t j = i;
      while (j < s.size() && s[j] != gpu_from_[0] && s[j] != cpu_from_[0] && s[j] != token[0])
        ++j;
      out.append(s, i, j - i);
      i = j;
      if (i == s.size()) break;
    }
    // Whole device names (not a prefix of a longer GPU number), and "rank0" as a whole word after a '/' or at the start
    // (op names "rank0/...", tensors ".../rank0", "...rank0->device", "...rank0@device", keys "...rank0;0:0").
    if (s.compare(i, gpu_from_.size(), gpu_from_) == 0 && !digit(i + gpu_from_.size())) {
      out += gpu_to_;
      i += gpu_from_.size();
    } else if (s.compare(i, cpu_from_.size(), cpu_from_) == 0 && !digit(i + cpu_from_.size())) {
      out += cpu_to_;
      i += cpu_from_.size();
    } else if (s.compare(i, token.size(), token) == 0 && (i == 0 || s[i - 1] == '/') && !word(i + token.size())) {
      out += token_to_;
      i += token.size();
    } else {
      out += s[i++];
    }
  }
  return out;
}

Result<StepGraph> build_partitioned_step_graph(const TrainingModel& model, const StepLayout& layout_in)
{
  StepLayout layout = layout_in;
  if (auto st = check_and_fill_layout(model, layout); !st.ok()) return st.error();
  auto partitioned = [&](const StepLayout& l) -> Result<StepGraph> {
    auto sg = build_step_graph(model, l);
    if (!sg.ok()) return sg.error();
    partition(sg.value());
    return std::move(sg.value());
  };
  if (layout.mode != SyncMode::ALLREDUCE || !layout.one_rank_template || layout.workers < 2) return partitioned(layout);
  StepLayout one = layout, two = layout;
  one.workers = 1;
  one.gpu_of = {layout.gpu_of[0]};
  two.workers = 2;
  two.gpu_of = {layout.gpu_of[0], layout.gpu_of[1]};
  auto t = partitioned(one);
  if (!t.ok()) return t.error();
  auto check = partitioned(two);
  if (!check.ok()) return check.error();
  // Rank 0's ops renamed for rank 1 must be rank 1's, one for one in graph order.
  const RankNames names(layout, 1);
  const auto& mine = t.value().ops_of(worker_task(0));
  const auto& theirs = check.value().ops_of(worker_task(1));
  bool same = mine.size() == theirs.size();
  for (size_t k = 0; same && k < mine.size(); ++k)
    same = renames_to(names, t.value().graph[mine[k]], check.value().graph[theirs[k]]);
  if (!same) return partitioned(layout);
  StepGraph sg = std::move(t.value());
  sg.layout = layout;
  sg.tasks.clear();
  for (int w = 0; w < layout.workers; ++w)
    sg.tasks.push_back(worker_task(w));
  sg.sends *= size_t(layout.workers);
  sg.remote_sends *= size_t(layout.workers);
  sg.remote_bytes *= uint64_t(layout.workers);
  sg.rank_template = true;
  return sg;
}

Result<StepGraph> build_step_graph(const TrainingModel& model, const StepLayout& layout_in)
{
  StepLayout layout = layout_in;
  if (auto st = check_and_fill_layout(model, layout); !st.ok()) return st.error();

  StepGraph sg;
  sg.layout = layout;
  const auto vars = flatten(model);
  for (int w = 0; w < layout.workers; ++w)
    sg.tasks.push_back(worker_task(w));

  if (layout.mode == SyncMode::ALLREDUCE) {
    add_allreduce_ranks(sg, model, layout, vars);
    index_tasks(sg);
    return sg;
  }

  // Parameter-server mode.
  const std::vector<OpId> var_op = add_ps_variables(sg, layout, vars);
  // Per variable: the gradients pushed to its device.
  std::vector<std::vector<GradientSource>> pushes(vars.size());
  for (int w = 0; w < layout.workers; ++w)
    add_ps_worker(sg, model, layout, vars, var_op, w, pushes);
  add_ps_applies(sg, vars, var_op, pushes);
  index_tasks(sg);
  return sg;
}

void partition(StepGraph& sg)
{
  Graph& g = sg.graph;
  struct Cut {
    Graph::edge_descriptor e;
  };
  std::vector<Graph::edge_descriptor> cuts;
  for (auto [it, end] = boost::edges(g); it != end; ++it)
    if (!g[*it].tensor.empty() && g[boost::source(*it, g)].device != g[boost::target(*it, g)].device)
      cuts.push_back(*it);
  std::map<std::pair<std::string, std::string>, std::pair<OpId, OpId>> pairs; // (tensor, dst device) -> send, recv
  std::vector<std::tuple<OpId, OpId, std::string>> rewired;
  for (const auto& e : cuts) {
    const OpId src = boost::source(e, g), dst = boost::target(e, g);
    const std::string tensor = g[e].tensor;
    const std::string sdev = g[src].device, ddev = g[dst].device;
    auto key = std::make_pair(tensor, ddev);
    auto it = pairs.find(key);
    if (it == pairs.end()) {
      uint64_t bytes = 0;
      for (const auto& o : g[src].outputs)
        if (o.tensor == tensor) bytes = o.bytes;
      const std::string rkey = rendezvous::create_key(sdev, 1, ddev, tensor);
      const bool remote = task_of_device(sdev) != task_of_device(ddev);
      Op send;
      send.kind = OpKind::SEND;
      send.name = "send/" + tensor + "->" + ddev;
      send.device = sdev;
      send.key = rkey;
      send.tensor = tensor;
      send.bytes = bytes;
      send.remote = remote;
      Op recv = send;
      recv.kind = OpKind::RECV;
      recv.name = "recv/" + tensor + "@" + ddev;
      recv.device = ddev;
      recv.outputs.push_back({tensor, bytes});
      const OpId s = add_op(g, send), r = add_op(g, recv);
      rewired.emplace_back(src, s, tensor);
      it = pairs.emplace(key, std::make_pair(s, r)).first;
      ++sg.sends;
      if (remote) {
        ++sg.remote_sends;
        sg.remote_bytes += bytes;
      }
    }
    rewired.emplace_back(it->second.second, dst, tensor);
  }
  for (const auto& e : cuts)
    boost::remove_edge(e, g);
  for (const auto& [a, b, t] : rewired)
    flow(g, a, b, t);
  std::vector<OpId> topo;
  boost::topological_sort(g, std::back_inserter(topo));
  int order = 0;
  for (auto it = topo.rbegin(); it != topo.rend(); ++it)
    g[*it].order = order++;
  index_tasks(sg);
}

} // namespace tp::training
