// Fault injection into the simulated fabric (see fault_injector.hpp).
#include "sim/fault_injector.hpp"
#include "sim/sim_context.hpp"

#include <cmath>
#include <cstdio>

namespace tp::sim {

namespace {

std::string seconds(double t)
{
  if (std::isinf(t)) return "never";
  char b[48];
  std::snprintf(b, sizeof b, "%.6f s", t);
  return b;
}

bool needs_host(FaultKind k)
{
  return k == FaultKind::LINK_DOWN || k == FaultKind::PACKET_LOSS || k == FaultKind::HOST_DEATH;
}

} // namespace

FaultInjector::FaultInjector(SimContext& ctx, FaultPlan plan)
    : ctx_(ctx), plan_(std::move(plan)), rng_state_(plan_.seed ^ 0x9E3779B97F4A7C15ull)
{
  fired_.assign(plan_.faults.size(), 0);
  due_.assign(plan_.faults.size(), std::numeric_limits<double>::quiet_NaN());
}

Status FaultInjector::validate() const
{
  const Platform& pf = *ctx_.platform;
  for (const auto& f : plan_.faults) {
    const std::string where = f.where.empty() ? std::string("faults") : f.where;
    if (f.step < 1) return Error::at("", where + ".step", "a step number >= 1", std::to_string(f.step));
    if (!(f.at >= 0) || std::isinf(f.at))
      return Error::at("", where + ".at", "a time >= 0 seconds", std::to_string(f.at));
    if (!(f.duration > 0)) return Error::at("", where + ".duration", "a duration > 0", std::to_string(f.duration));
    if (f.kind == FaultKind::PACKET_LOSS && !(f.probability >= 0 && f.probability <= 1))
      return Error::at("", where + ".probability", "a probability in [0, 1]", std::to_string(f.probability));
    if (needs_host(f.kind)) {
      const int m = pf.find_machine(f.host);
      if (m < 0) return Error::at("", where + ".host", "a machine of the cluster", "\"" + f.host + "\"");
      if (f.nic < 0 || size_t(f.nic) >= pf.machine(size_t(m)).nics.size())
        return Error::at("", where + ".nic",
                         "a NIC index below " + std::to_string(pf.machine(size_t(m)).nics.size()) + " on " + f.host,
                         std::to_string(f.nic));
    } else if (f.process.empty()) {
      return Error::at("", where + ".process", "the name of a simulated process (worker0, ps0, ...)", "none");
    }
  }
  return ok_status();
}

Status FaultInjector::arm(int step)
{
  const double now = ctx_.reactor.now();
  const Platform& pf = *ctx_.platform;
  Reactor& r = ctx_.reactor;
  for (size_t i = 0; i < plan_.faults.size(); ++i) {
    const Fault& f = plan_.faults[i];
    if (f.step != step) continue;
    if (!needs_host(f.kind) && !ctx_.find_process(f.process)) {
      std::string known;
      for (const SimProcess* p : ctx_.process_list())
        known += (known.empty() ? "" : ", ") + p->name();
      return Error::at("", (f.where.empty() ? std::string("faults") : f.where) + ".process",
                       "a process of this job (" + known + ")", "\"" + f.process + "\"");
    }
    const double t0 = now + f.at;
    const double t1 = t0 + f.duration;
    const Port port{size_t(std::max(0, pf.find_machine(f.host))), f.nic};
    const std::string name = needs_host(f.kind) ? f.host + "/nic" + std::to_string(f.nic) : f.process;
    due_[i] = t0;
    // Background timers: a fault keeps nothing alive. The windows below are consulted by time; the simulation only
    // reaches a window's time while it still has work, so a window after the work has ended changes nothing.
    switch (f.kind) {
    case FaultKind::LINK_DOWN:
      down_[port].push_back({t0, t1, 0});
      r.at_background(t0, [this, i, name, t1] {
        mark_fired(i);
        log("link " + name + " down until " + seconds(t1));
      });
      if (!std::isinf(t1)) r.at_background(t1, [this, name] { log("link " + name + " up"); });
      break;
    case FaultKind::PACKET_LOSS:
      lossy_[port].push_back({t0, t1, f.probability});
      r.at_background(t0, [this, i, name, p = f.probability, t1] {
        mark_fired(i);
        log("packet loss " + std::to_string(p) + " on " + name + " until " + seconds(t1));
      });
      break;
    case FaultKind::NO_RECEIVE:
      no_receive_[f.process].push_back({t0, t1, 0});
      r.at_background(t0, [this, i, name, t1] {
        mark_fired(i);
        log(name + " posts no receives until " + seconds(t1));
      });
      break;
    case FaultKind::QP_ERROR:
    case FaultKind::PROCESS_DEATH:
    case FaultKind::HOST_DEATH:
      r.at_background(t0, [this, i, f] {
        mark_fired(i);
        fire(f);
      });
      break;
    }
  }
  return ok_status();
}

std::vector<std::string> FaultInjector::never_fired(int last_step, bool failed) const
{
  std::vector<std::string> out;
  const double end = ctx_.reactor.now();
  for (size_t i = 0; i < plan_.faults.size(); ++i) {
    const Fault& f = plan_.faults[i];
    if (fired_[i]) continue;
    const std::string what =
        std::string(to_string(f.kind)) + " on " +
        (needs_host(f.kind)
             ? f.host + (f.kind == FaultKind::HOST_DEATH ? std::string() : "/nic" + std::to_string(f.nic))
             : f.process);
    if (f.step > last_step || std::isnan(due_[i]))
      out.push_back(what + " at step " + std::to_string(f.step) + " (the job ran " + std::to_string(last_step) + ")");
    else
      out.push_back(what + " at step " + std::to_string(f.step) + " + " + seconds(f.at) + " (t=" + seconds(due_[i]) +
                    "): " +
                    (failed ? "the job had stopped at its failure (t=" + seconds(end) + ")"
                            : "the job's work had ended (t=" + seconds(end) + "); it changed nothing"));
  }
  return out;
}

void FaultInjector::fire(const Fault& f)
{
  switch (f.kind) {
  case FaultKind::QP_ERROR: {
    const size_t n = fail_process_qps(ctx_, f.process);
    stats_.qps_failed += n;
    log(std::to_string(n) + " QP(s) of " + f.process + " forced into the error state");
    break;
  }
  case FaultKind::PROCESS_DEATH:
    dead_.insert(f.process);
    log(f.process + " killed (its sockets are closed by the kernel, its QPs destroyed)");
    kill_process(ctx_, f.process, true);
    break;
  case FaultKind::HOST_DEATH: {
    const Platform& pf = *ctx_.platform;
    const size_t m = size_t(pf.find_machine(f.host));
    dead_machines_.insert(m);
    const double now = ctx_.reactor.now();
    for (size_t j = 0; j < pf.machine(m).nics.size(); ++j)
      down_[{m, int(j)}].push_back({now, std::numeric_limits<double>::infinity(), 0});
    std::vector<std::string> victims;
    for (const SimProcess* p : ctx_.process_list())
      if (p->machine() == m) victims.push_back(p->name());
    log("host " + f.host + " lost power (" + std::to_string(victims.size()) + " process(es); no FIN, no answers)");
    for (const auto& v : victims) {
      dead_.insert(v);
      kill_process(ctx_, v, false);
    }
    break;
  }
  default:
    break;
  }
}

bool FaultInjector::port_down(size_t machine, int nic, double t) const
{
  auto it = down_.find({machine, nic});
  if (it == down_.end()) return false;
  for (const auto& w : it->second)
    if (t >= w.start && t < w.end) return true;
  return false;
}

double FaultInjector::down_within(size_t ma, int na, size_t mb, int nb, double t0, double t1) const
{
  double first = -1;
  for (const Port& p : {Port{ma, na}, Port{mb, nb}}) {
    auto it = down_.find(p);
    if (it == down_.end()) continue;
    for (const auto& w : it->second)
      if (w.start <= t1 && w.end > t0) {
        const double t = std::max(w.start, t0);
        if (first < 0 || t < first) first = t;
      }
  }
  return first;
}

double FaultInjector::both_up_at(size_t ma, int na, size_t mb, int nb, double t) const
{
  // Windows may overlap or chain: advance until no window covers t.
  for (int guard = 0; guard < 10000; ++guard) {
    double next = t;
    for (const Port& p : {Port{ma, na}, Port{mb, nb}}) {
      auto it = down_.find(p);
      if (it == down_.end()) continue;
      for (const auto& w : it->second)
        if (next >= w.start && next < w.end) next = w.end;
    }
    if (next == t) return t;
    if (std::isinf(next)) return next;
    t = next;
  }
  return t;
}

double FaultInjector::loss_probability(size_t ma, int na, size_t mb, int nb, double t) const
{
  double keep = 1;
  for (const Port& p : {Port{ma, na}, Port{mb, nb}}) {
    auto it = lossy_.find(p);
    if (it == lossy_.end()) continue;
    for (const auto& w : it->second)
      if (t >= w.start && t < w.end) keep *= 1 - w.probability;
  }
  return 1 - keep;
}

double FaultInjector::uniform()
{
  // splitmix64: a fixed, portable sequence for a seed (std:: distributions differ between standard libraries).
  uint64_t z = (rng_state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (double(z >> 11) + 1.0) * 0x1.0p-53; // (0, 1]
}

bool FaultInjector::draw(double p)
{
  return p > 0 && uniform() <= p;
}

uint64_t FaultInjector::first_lost(double p, uint64_t packets)
{
  if (p <= 0 || packets == 0) return packets;
  if (p >= 1) return 0;
  const double k = std::floor(std::log(uniform()) / std::log1p(-p)); // geometric: packets kept before a loss
  return k >= double(packets) ? packets : uint64_t(k);
}

bool FaultInjector::withholds_receives(const std::string& process, double t) const
{
  auto it = no_receive_.find(process);
  if (it == no_receive_.end()) return false;
  for (const auto& w : it->second)
    if (t >= w.start && t < w.end) return true;
  return false;
}

void FaultInjector::note_retry(double start, double end, const std::string& process, const std::string& peer)
{
  if (end <= start) return;
  stats_.retry_seconds += end - start;
  retries_.push_back({start, end, process, peer});
}

void FaultInjector::log(const std::string& what)
{
  stats_.events.push_back("t=" + seconds(ctx_.reactor.now()) + ": " + what);
}

} // namespace tp::sim
