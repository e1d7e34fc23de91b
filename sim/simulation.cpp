// Simulation facade: SimGrid engine set-up with explicit network-model settings, processes, run loop.
#include "sim/simulation.hpp"
#include "sim/cpu_pool.hpp"
#include "sim/sim_context.hpp"
#include "sim/sim_device.hpp"
#include "sim/sim_memory.hpp"
#include "sim/sim_runtime.hpp"
#include "sim/sim_stream.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include <xbt/log.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace sg4 = simgrid::s4u;

namespace tp::sim {

class SimProcessImpl final : public SimProcess {
public:
  SimProcessImpl(SimContext& ctx, size_t machine, std::string name) : name_(std::move(name)), machine_(machine)
  {
    const auto& hp = ctx.platform->machine(machine);
    std::vector<SimMemory::Region> regions;
    for (size_t s = 0; s < hp.sockets.size(); ++s)
      regions.push_back({Location::host(int(s)), hp.sockets[s].memory});
    for (size_t g = 0; g < hp.gpus.size(); ++g)
      regions.push_back({Location::gpu(int(g)), hp.gpus[g].gpu.memory});
    memory_ = std::make_unique<SimMemory>(name_, regions, ctx.options.materialize);
    runtime_ = std::make_unique<SimRuntime>(ctx, machine, name_, *memory_);
    streams_ = std::make_unique<SimStreamNetwork>(ctx, machine, name_);
    for (size_t j = 0; j < hp.nics.size(); ++j)
      devices_.push_back(std::make_unique<SimDevice>(ctx, machine, int(j), *memory_, hp.nics[j].socket, name_));
  }
  const std::string& name() const override { return name_; }
  size_t machine() const override { return machine_; }
  Runtime& runtime() override { return *runtime_; }
  MemorySpace& memory() override { return *memory_; }
  StreamNetwork& streams() override { return *streams_; }
  verbs::Device& device(int nic) override { return *devices_.at(size_t(nic)); }
  int device_count() const override { return int(devices_.size()); }

  void kill(bool fin)
  {
    runtime_->kill();
    for (auto& d : devices_)
      d->kill();
    streams_->kill(fin);
  }
  const SimRuntime& sim_runtime() const { return *runtime_; }
  SimStreamNetwork& stream_network() { return *streams_; }
  const SimStreamNetwork& stream_network() const { return *streams_; }

  size_t fail_qps()
  {
    size_t n = 0;
    for (auto& d : devices_)
      n += d->force_error_all_qps();
    return n;
  }

private:
  std::string name_;
  size_t machine_;
  std::unique_ptr<SimMemory> memory_;
  std::unique_ptr<SimRuntime> runtime_;
  std::unique_ptr<SimStreamNetwork> streams_;
  std::vector<std::unique_ptr<SimDevice>> devices_;
};

uint64_t SimContext::start_comm(sg4::Host* from, sg4::Host* to, double bytes, Reactor::Task done)
{
  if (bytes <= 0 || from == to) return reactor.at(reactor.now(), std::move(done));
  if (comm_tracer) {
    const double t0 = reactor.now();
    done = [this, t0, from, to, bytes, done = std::move(done)]() mutable {
      if (comm_tracer) comm_tracer(t0, reactor.now(), bytes, Platform::route_links(from, to));
      done();
    };
  }
  return reactor.start_comm(from, to, uint64_t(bytes + 0.5), std::move(done));
}

uint64_t SimContext::start_exec(sg4::Host* host, double seconds, Reactor::Task done, int threads)
{
  return reactor.start_exec_seconds(host, seconds, threads, std::move(done));
}

void SimContext::cancel(uint64_t id)
{
  if (!reactor.cancel_activity(id)) reactor.cancel_timer(id);
}

SimProcess* SimContext::find_process(const std::string& name) const
{
  for (const auto& p : processes)
    if (p->name() == name) return p.get();
  return nullptr;
}

std::vector<SimProcess*> SimContext::process_list() const
{
  std::vector<SimProcess*> out;
  for (const auto& p : processes)
    out.push_back(p.get());
  return out;
}

void kill_process(SimContext& ctx, const std::string& name, bool fin)
{
  for (auto& p : ctx.processes)
    if (p->name() == name) p->kill(fin);
  if (ctx.on_kill) ctx.on_kill(name, fin);
}

size_t fail_process_qps(SimContext& ctx, const std::string& name)
{
  for (auto& p : ctx.processes)
    if (p->name() == name) return p->fail_qps();
  return 0;
}

namespace {
std::atomic<bool> g_simulation_created{false};

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizedBuild = true;
#else
constexpr bool kSanitizedBuild = false;
#endif
#else
constexpr bool kSanitizedBuild = false;
#endif

/// The context factory to ask SimGrid for: the option, else $TENSORPATH_SIMGRID_CONTEXTS, else "thread" under
/// ASan/TSan (SimGrid's raw and boost contexts switch stacks behind the sanitizers' back), else SimGrid's default.
std::string context_factory(const SimOptions& options)
{
  if (!options.context_factory.empty()) return options.context_factory;
  if (const char* env = std::getenv("TENSORPATH_SIMGRID_CONTEXTS"); env && *env) return env;
  return kSanitizedBuild ? "thread" : "";
}
} // namespace

Result<std::unique_ptr<Simulation>> Simulation::create(const models::ClusterProfile& cluster, const SimOptions& options)
{
  if (cluster.host_count() == 0) return Error::at("", "cluster.hosts", "at least one host", "none");
  if (auto st = Platform::check_cluster(cluster); !st.ok()) return st.error();
  if (g_simulation_created.exchange(true))
    return Error::at("", "Simulation::create", "one simulation per OS process (SimGrid 3.32 cannot reset its engine)",
                     "a second simulation; run each in its own process (ctest does this per test case)");
  auto ctx = std::make_unique<SimContext>();
  ctx->options = options;
  // The context factory goes on the engine's command line: SimGrid picks its factory while the engine is built,
  // and a later set_config("contexts/factory:...") is silently ignored. Static: the engine keeps argv.
  // The --log argument keeps SimGrid from announcing that setting.
  static std::string arg0 = "tensorpath", quiet_cfg = "--log=xbt_cfg.thres:warning", factory_arg;
  static char* argv[] = {arg0.data(), quiet_cfg.data(), nullptr, nullptr};
  static int argc = 2;
  if (const std::string factory = context_factory(options); !factory.empty()) {
    factory_arg = "--cfg=contexts/factory:" + factory;
    argv[argc++] = factory_arg.data();
  }
  ctx->engine = std::make_unique<sg4::Engine>(&argc, argv);
  xbt_log_control_set("xbt_cfg.thres:warning"); // our own settings below are not news to the user
  // RDMA fabrics: no TCP-inspired corrections. LV08's defaults would multiply latencies by 13.01 and scale
  // bandwidth by 0.97 and add 5 % reverse cross-traffic. Latencies are applied by the device model itself.
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/latency-factor:0");
  sg4::Engine::set_config("network/bandwidth-factor:1");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  sg4::Engine::set_config("network/weight-S:0");
  // Device latencies are tens of nanoseconds: keep SimGrid's time arithmetic well below that.
  sg4::Engine::set_config("surf/precision:1e-13");
  for (const auto& c : options.simgrid_config) {
    sg4::Engine::set_config(c);
    // Short comms are timed as CM02 without factors shares a link; another network model times every comm itself,
    // and may give comms a latency phase, which the reactor cannot run ahead of.
    if (c.rfind("network/", 0) == 0) {
      ctx->reactor.set_short_comm_bytes(0);
      ctx->reactor.set_run_ahead(false);
    }
    // Lone execs are timed as Cas01 shares a host's cores; another CPU or host model, or solver, times every exec.
    if (c.rfind("cpu/", 0) == 0 || c.rfind("host/", 0) == 0 || c.rfind("maxmin/", 0) == 0)
      ctx->reactor.set_lone_execs_as_timers(false);
  }
  ctx->platform = std::make_unique<Platform>(cluster);
  if (!options.faults.empty()) {
    ctx->faults = std::make_unique<FaultInjector>(*ctx, options.faults);
    if (auto st = ctx->faults->validate(); !st.ok()) return st.error();
  }
  if (options.tcp_port_buffer > 0 && !options.tcp_incast)
    return Error::at("", "tcp_port_buffer", "tcp_incast set with it (a port buffer without the model does nothing)",
                     std::to_string(options.tcp_port_buffer));
  if (options.tcp_incast) {
    if (options.tcp_port_buffer == 0 && !options.tcp_switch_buffer)
      return Error::at("", "tcp_port_buffer", "a port buffer, or the switch's shared buffer for its share", "neither");
    ctx->incast =
        std::make_unique<IncastPorts>(options.tcp_port_buffer, options.tcp_switch_buffer, options.tcp_min_rto);
  }
  return std::unique_ptr<Simulation>(new Simulation(std::move(ctx)));
}

Simulation::Simulation(std::unique_ptr<SimContext> ctx) : ctx_(std::move(ctx)) {}

Simulation::~Simulation()
{
  ctx_->processes.clear();
}

Result<SimProcess*> Simulation::add_process(const std::string& machine, const std::string& name)
{
  const int m = ctx_->platform->find_machine(machine);
  if (m < 0) {
    std::string known;
    for (size_t i = 0; i < ctx_->platform->machine_count() && i < 8; ++i)
      known += (known.empty() ? "" : ", ") + ctx_->platform->machine_name(i);
    return Error::at("", "add_process",
                     "a machine of the cluster (" + known + (ctx_->platform->machine_count() > 8 ? ", ..." : "") + ")",
                     "\"" + machine + "\"");
  }
  const std::string pname = name.empty() ? machine : name;
  if (ctx_->find_process(pname))
    return Error::at("", "add_process", "a unique process name", "\"" + pname + "\" again");
  ctx_->processes.push_back(std::make_unique<SimProcessImpl>(*ctx_, size_t(m), pname));
  return static_cast<SimProcess*>(ctx_->processes.back().get());
}

SimProcess* Simulation::process(const std::string& name) const
{
  return ctx_->find_process(name);
}

void Simulation::run()
{
  SimContext* ctx = ctx_.get();
  sg4::Host* host = ctx->platform->cpu_host(0, 0);
  sg4::Actor::create("reactor", host, [ctx] { ctx->reactor.run(); });
  ctx->running = true;
  ctx->engine->run();
  ctx->running = false;
}

double Simulation::now() const
{
  return ctx_->reactor.now(); // the reactor's clock may run ahead of SimGrid's
}
const Platform& Simulation::platform() const
{
  return *ctx_->platform;
}

void Simulation::raw_comm(sg4::Host* from, sg4::Host* to, double bytes, std::function<void()> done)
{
  SimContext* ctx = ctx_.get();
  // Started from the reactor (SimGrid comms are created inside the simulation).
  ctx->reactor.post(
      [ctx, from, to, bytes, done = std::move(done)]() mutable { ctx->start_comm(from, to, bytes, std::move(done)); });
}

void Simulation::set_comm_tracer(std::function<void(const CommTrace&)> tracer)
{
  if (!tracer) {
    ctx_->comm_tracer = nullptr;
    return;
  }
  ctx_->comm_tracer = [tracer = std::move(tracer)](double start, double end, double bytes,
                                                   const std::vector<std::string>& links) {
    tracer(CommTrace{start, end, bytes, links});
  };
}

void Simulation::raw_timer(double delay, std::function<void()> f)
{
  ctx_->reactor.after(delay, std::move(f));
}

Status Simulation::arm_faults(int step)
{
  return ctx_->faults ? ctx_->faults->arm(step) : ok_status();
}

const FaultStats* Simulation::fault_stats() const
{
  return ctx_->faults ? &ctx_->faults->stats() : nullptr;
}

std::vector<RetryInterval> Simulation::retry_intervals() const
{
  std::vector<RetryInterval> out = ctx_->faults ? ctx_->faults->retries() : std::vector<RetryInterval>{};
  if (ctx_->incast) out.insert(out.end(), ctx_->incast->windows().begin(), ctx_->incast->windows().end());
  out.insert(out.end(), ctx_->charged_waits.begin(), ctx_->charged_waits.end());
  return out;
}

void Simulation::add_charged_wait(RetryInterval w)
{
  ctx_->charged_waits.push_back(std::move(w));
}

std::string Simulation::incast_error() const
{
  return ctx_->incast ? ctx_->incast->error() : std::string();
}

uint64_t Simulation::incast_bursts_charged() const
{
  return ctx_->incast ? ctx_->incast->bursts_charged() : 0;
}

std::pair<uint64_t, uint64_t> Simulation::incast_port_buffers() const
{
  if (!ctx_->incast) return {0, 0};
  return {ctx_->incast->port_buffer_min(), ctx_->incast->port_buffer_max()};
}

std::vector<std::string> Simulation::never_fired_faults(int last_step, bool failed) const
{
  return ctx_->faults ? ctx_->faults->never_fired(last_step, failed) : std::vector<std::string>{};
}

void Simulation::set_faults_keep_alive(bool on)
{
  ctx_->reactor.set_background_keeps_alive(on);
}

void Simulation::set_kill_listener(std::function<void(const std::string& process, bool fin)> listener)
{
  ctx_->on_kill = std::move(listener);
}

void Simulation::stop()
{
  ctx_->reactor.stop();
}

void Simulation::set_deadline(double t)
{
  ctx_->reactor.set_deadline(t);
}

bool Simulation::deadline_hit() const
{
  return ctx_->reactor.deadline_hit();
}

namespace {

std::string bits_per_second(double bytes_per_second)
{
  const double b = bytes_per_second * 8;
  const char* unit[] = {"b/s", "Kb/s", "Mb/s", "Gb/s", "Tb/s"};
  int u = 0;
  double v = b;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g %s", v, unit[u]);
  return buf;
}

std::string num(double v)
{
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

} // namespace

Simulation::AtDeadline Simulation::at_deadline(double window) const
{
  AtDeadline res;
  if (!deadline_hit()) return res;
  const auto& snap = ctx_->reactor.at_deadline();
  if (snap.activities.empty() && snap.timers == 0) return res;
  const double now = this->now();
  struct Item {
    double seconds_left; ///< at the resource's full rate (a lower bound: it may be shared)
    std::string text;
  };
  std::vector<Item> items;
  size_t comms = 0, execs = 0;
  for (const auto& a : snap.activities) {
    if (a.comm && a.from && a.to) {
      ++comms;
      // The slowest link of its route bounds its rate.
      std::vector<sg4::Link*> links;
      double lat = 0;
      a.from->route_to(a.to, links, &lat);
      const sg4::Link* slow = nullptr;
      for (const auto* l : links)
        if (!slow || l->get_bandwidth() < slow->get_bandwidth()) slow = l;
      const double bw = slow ? slow->get_bandwidth() : 0;
      const double left = bw > 0 ? a.remaining / bw : std::numeric_limits<double>::infinity();
      std::string t = "a transfer " + a.from->get_name() + " -> " + a.to->get_name() +
                      " (started at t=" + num(a.started) + " s) with " + num(a.remaining) + " bytes left";
      if (slow)
        t += ": its slowest link " + slow->get_name() + " at " + bits_per_second(bw) + " needs at least " + num(left) +
             " s more";
      items.push_back({left, t});
      res.slow |= now - a.started + left >= window / 10;
    } else if (!a.comm && a.from) {
      ++execs;
      const double speed = a.from->get_speed();
      const double left = speed > 0 ? a.remaining / speed : std::numeric_limits<double>::infinity();
      items.push_back({left, "a computation on " + a.from->get_name() + " (started at t=" + num(a.started) +
                                 " s) with " + num(left) + " s of work left at the processor's full speed"});
      res.slow |= now - a.started + left >= window / 10;
    }
  }
  // The longest first; equal ones by their text, so that the order does not depend on the order of the activities.
  std::sort(items.begin(), items.end(), [](const Item& x, const Item& y) {
    return x.seconds_left != y.seconds_left ? x.seconds_left > y.seconds_left : x.text < y.text;
  });
  std::string out = std::to_string(comms) + " transfer(s) and " + std::to_string(execs) +
                    " computation(s) in progress, " + std::to_string(snap.timers) + " timer(s) pending";
  if (snap.timers > 0) out += " (the next at t=" + num(snap.next_timer) + " s)";
  for (size_t i = 0; i < items.size() && i < 3; ++i)
    out += std::string(i == 0 ? "; the slowest: " : "; then: ") + items[i].text;
  if (items.size() > 3) out += "; and " + std::to_string(items.size() - 3) + " more";
  if (items.empty())
    out += "; no transfer or computation was in progress: the processes were waiting on timers (retransmission "
           "back-off, time-outs, retries)";
  res.in_progress = out;
  return res;
}

SimStats Simulation::stats() const
{
  SimStats s;
  s.activities = ctx_->reactor.activities_completed();
  s.short_comms = ctx_->reactor.short_comms();
  s.simgrid_rounds = ctx_->reactor.simgrid_rounds();
  s.timers_run_ahead = ctx_->reactor.timers_run_ahead();
  s.simulated_time = now();
  return s;
}

std::vector<ProcessCpu> Simulation::cpu_use() const
{
  std::vector<ProcessCpu> out;
  for (const auto& p : ctx_->processes) {
    ProcessCpu c;
    c.process = p->name();
    c.host = ctx_->platform->machine_name(p->machine());
    for (const CpuPool* pool : p->stream_network().pools()) {
      c.rpc_threads += pool->threads();
      c.rpc_cpu_seconds += pool->use().cpu_seconds;
      c.rpc_waited_seconds += pool->use().waited_seconds;
      c.rpc_messages += pool->use().items;
    }
    c.work_cpu_seconds = p->sim_runtime().work_cpu_seconds();
    c.busy_pollers = p->sim_runtime().busy_pollers();
    out.push_back(std::move(c));
  }
  return out;
}

void Simulation::record_cpu(bool on)
{
  for (auto& p : ctx_->processes)
    p->stream_network().record_cpu(on);
}

std::vector<CpuTrack> Simulation::cpu_tracks() const
{
  std::vector<CpuTrack> out;
  for (const auto& p : ctx_->processes)
    for (const CpuPool* pool : p->stream_network().pools())
      out.push_back({p->name(), pool->name(), pool->threads(), pool->busy_changes()});
  return out;
}

} // namespace tp::sim

namespace tp::sim {
SimContext::~SimContext() = default;
} // namespace tp::sim
