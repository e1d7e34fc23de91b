// Critical-path breakdown of a step (see critical_path.hpp).
#include "core/training/critical_path.hpp"

#include "core/training/step_graph.hpp"

#include <algorithm>
#include <unordered_map>

namespace tp::training {

namespace {

bool runs_on_device(OpKind k)
{
  return k == OpKind::FORWARD || k == OpKind::BACKWARD || k == OpKind::AGGREGATE || k == OpKind::APPLY;
}

} // namespace

namespace {

/// Length of [a, b] covered by the windows that `match` accepts (overlapping windows counted once).
template <class Match> double covered(const std::vector<RetryWindow>& ws, double a, double b, Match match)
{
  std::vector<std::pair<double, double>> parts;
  for (const auto& w : ws)
    if (w.end > a && w.start < b && match(w)) parts.emplace_back(std::max(a, w.start), std::min(b, w.end));
  std::sort(parts.begin(), parts.end());
  double total = 0, reach = a;
  for (const auto& [s, e] : parts) {
    const double from = std::max(s, reach);
    if (e > from) total += e - from;
    reach = std::max(reach, e);
  }
  return total;
}

} // namespace

CriticalPath critical_path(const StepGraph& sg, const std::vector<OpTiming>& timings,
                           const std::vector<transports::TransferRecord>& records, double step_start, double step_end,
                           const std::vector<RetryWindow>& retries, const RankNames* rank)
{
  const RankNames same;
  const RankNames& names = rank ? *rank : same;
  const Graph& g = sg.graph;
  CriticalPath cp;
  std::unordered_map<std::string, OpId> id_of;
  std::unordered_map<std::string, OpId> send_of_key;
  for (auto [it, end] = boost::vertices(g); it != end; ++it) {
    id_of[g[*it].name] = *it;
    if (g[*it].kind == OpKind::SEND) send_of_key[g[*it].key] = *it;
  }
  std::unordered_map<OpId, OpTiming> t;
  std::vector<OpId> in_order; // the timed ops in the order of `timings` (ties go to the first)
  for (const auto& x : timings) {
    auto it = id_of.find(x.name);
    if (it == id_of.end() || x.end < 0) continue;
    if (t.emplace(it->second, x).second)
      in_order.push_back(it->second);
    else
      t[it->second] = x;
  }
  std::unordered_map<std::string, const transports::TransferRecord*> rec;
  for (const auto& r : records)
    if (r.side == transports::Side::CONSUMER) rec[r.key] = &r;
  // Ops per device, for "who held the device".
  std::unordered_map<std::string, std::vector<OpId>> on_device;
  for (const OpId id : in_order)
    if (runs_on_device(g[id].kind)) on_device[g[id].device].push_back(id);

  auto charge = [&](OpId v, double a, double b) {
    const double d = b - a;
    if (d <= 0) return;
    const Op& op = g[v];
    switch (op.kind) {
    case OpKind::FORWARD:
    case OpKind::BACKWARD:
      cp.compute += d;
      return;
    case OpKind::AGGREGATE:
    case OpKind::APPLY:
      cp.aggregate_apply += d;
      return;
    case OpKind::ALLREDUCE: {
      // A collective waits for every rank (the ring, the coordinator's negotiation): a resend between any two
      // tasks of the job holds it up.
      const double r = std::min(d, covered(retries, a, b, [](const RetryWindow&) { return true; }));
      cp.retry += r;
      cp.network += d - r;
      return;
    }
    case OpKind::RECV: {
      const std::string key = names(op.key);
      auto it = rec.find(key);
      if (it == rec.end() || it->second->total() <= 0) {
        // A device copy inside the task (no transport): PCIe between host and GPU, else a memcpy.
        const bool gpu_src = op.key.substr(0, op.key.find(';')).find("device:GPU") != std::string::npos;
        const bool gpu_dst = op.device.find("device:GPU") != std::string::npos;
        (gpu_src != gpu_dst ? cp.pcie : cp.copy) += d;
        return;
      }
      const auto& r = *it->second;
      const double f = d / r.total();
      using transports::Phase;
      cp.copy += f * (r.seconds[size_t(Phase::SERIALIZE)] + r.seconds[size_t(Phase::COPY)]);
      cp.registration += f * r.seconds[size_t(Phase::REGISTRATION)];
      cp.pcie += f * r.seconds[size_t(Phase::PCIE)];
      cp.cpu += f * r.seconds[size_t(Phase::CPU)];
      const double net = f * (r.seconds[size_t(Phase::WIRE)] + r.wait());
      double lost = 0;
      if (!retries.empty() && net > 0) {
        const std::string me = task_of_device(names(op.device));
        const std::string src = task_of_device(key.substr(0, key.find(';')));
        lost = std::min(net, covered(retries, a, b, [&](const RetryWindow& w) {
                          return (w.task == me && w.peer_task == src) || (w.task == src && w.peer_task == me);
                        }));
      }
      cp.retry += lost;
      cp.network += net - lost;
      return;
    }
    default:
      cp.waiting += d;
    }
  };

  // The op that finished last (on a tie, the first in `timings`: the first task's).
  OpId cur{};
  double last = -1;
  for (const OpId id : in_order)
    if (t[id].end > last) {
      last = t[id].end;
      cur = id;
    }
  if (last < 0) {
    cp.waiting = step_end - step_start;
    return cp;
  }
  cp.waiting += std::max(0.0, step_end - last);
  double horizon = last;
  for (size_t guard = 0; guard < t.size() * 4 + 8; ++guard) {
    const OpTiming& x = t[cur];
    cp.ops.push_back(names(g[cur].name));
    // Latest-arriving input (a RECV's input is its SEND on the peer task).
    OpId pred{};
    double pred_end = -1;
    auto consider = [&](OpId p) {
      auto it = t.find(p);
      if (it != t.end() && it->second.end > pred_end && it->second.end <= horizon + 1e-12) {
        pred_end = it->second.end;
        pred = p;
      }
    };
    for (auto [e, eend] = boost::in_edges(cur, g); e != eend; ++e)
      consider(boost::source(*e, g));
    if (g[cur].kind == OpKind::RECV) {
      auto s = send_of_key.find(g[cur].key);
      if (s != send_of_key.end()) consider(s->second);
    }
    const double ready = std::max(x.ready, pred_end);
    const double start = std::max(x.start, ready);
    const double end = std::min(x.end, horizon);
    charge(cur, start, end);
    // Waited for the device: continue with the op that held it.
    if (start - ready > 1e-12 && runs_on_device(g[cur].kind)) {
      OpId holder{};
      double holder_end = -1;
      for (OpId u : on_device[g[cur].device]) {
        const double ue = t[u].end;
        if (u != cur && ue <= start + 1e-12 && ue > ready && ue > holder_end) {
          holder_end = ue;
          holder = u;
        }
      }
      if (holder_end > 0) {
        cp.waiting += start - holder_end;
        horizon = holder_end;
        cur = holder;
        continue;
      }
      cp.waiting += start - ready;
    }
    if (pred_end < 0) {
      cp.waiting += std::max(0.0, std::min(ready, horizon) - step_start);
      break;
    }
    cp.waiting += std::max(0.0, ready - pred_end);
    horizon = pred_end;
    cur = pred;
  }
  return cp;
}

} // namespace tp::training
