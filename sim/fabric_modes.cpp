// The three fabric modes of a ring allreduce (see fabric_modes.hpp).
#include "sim/fabric_modes.hpp"

#include "core/collectives/ring.hpp"
#include "core/transports/task_runtime.hpp"
#include "sim/analytical_fabric.hpp"
#include "sim/platform.hpp"
#include "sim/simulation.hpp"

#include <simgrid/s4u.hpp>

#include <chrono>
#include <limits>
#include <map>

namespace tp::sim {

Result<FabricMode> parse_fabric_mode(const std::string& s)
{
  if (s == "protocol") return FabricMode::PROTOCOL;
  if (s == "flow") return FabricMode::FLOW;
  if (s == "analytical") return FabricMode::ANALYTICAL;
  return Error::at("", "mode", "protocol, flow or analytical", "\"" + s + "\"");
}

const char* to_string(FabricMode m)
{
  switch (m) {
  case FabricMode::PROTOCOL:
    return "protocol";
  case FabricMode::FLOW:
    return "flow";
  case FabricMode::ANALYTICAL:
    return "analytical";
  }
  return "?";
}

namespace {

struct Endpoint {
  size_t machine;
  Location loc;
};

/// Where a rank's tensor lives.
Endpoint endpoint_of(const models::ClusterProfile& cl, const AllreduceJob& job, int r)
{
  const size_t m = size_t(r / job.ranks_per_host);
  const auto& h = cl.host(m);
  const int k = r % job.ranks_per_host;
  if (job.gpu) return {m, Location::gpu(k)};
  return {m, Location::host(h.nics.empty() ? 0 : h.nics[0].socket)};
}

/// The route of one message: SimGrid hosts at both ends and the latency the device model would add.
struct Hop {
  simgrid::s4u::Host* from = nullptr;
  simgrid::s4u::Host* to = nullptr;
  double latency = 0;
};

Hop hop(const Platform& pf, const Endpoint& a, const Endpoint& b)
{
  if (a.machine == b.machine)
    return {pf.local_host(a.machine, a.loc), pf.local_host(b.machine, b.loc),
            pf.local_copy_latency(a.machine, a.loc, b.loc)};
  return {pf.nic_endpoint(a.machine, 0, a.loc, false), pf.nic_endpoint(b.machine, 0, b.loc, true),
          pf.dma_read_latency(a.machine, 0, a.loc) + pf.wire_latency(a.machine, 0, b.machine, 0) +
              pf.dma_write_latency(b.machine, 0, b.loc)};
}

class FlowFabric final : public collectives::MessageFabric {
public:
  FlowFabric(Simulation& sim, std::vector<Hop> ring) : sim_(sim), ring_(std::move(ring)) {}
  double now() const override { return sim_.now(); }
  void send(int src, int dst, double bytes, std::function<void()> delivered) override
  {
    const Hop& h = ring_[size_t(src)]; // the ring only sends to the right neighbour
    (void)dst;
    sim_.raw_timer(h.latency, [this, h, bytes, delivered = std::move(delivered)]() mutable {
      sim_.raw_comm(h.from, h.to, bytes, std::move(delivered));
    });
  }
  void after(double seconds, std::function<void()> f) override { sim_.raw_timer(seconds, std::move(f)); }
  void run() override { sim_.run(); }

private:
  Simulation& sim_;
  std::vector<Hop> ring_;
};

} // namespace

RingRoutes ring_routes(const Platform& pf, const std::vector<RankEndpoint>& ranks)
{
  RingRoutes out;
  std::map<const simgrid::s4u::Link*, int> index;
  const size_t n = ranks.size();
  out.routes.resize(n);
  for (size_t r = 0; r < n; ++r) {
    const Hop h = hop(pf, {ranks[r].machine, ranks[r].loc}, {ranks[(r + 1) % n].machine, ranks[(r + 1) % n].loc});
    std::vector<simgrid::s4u::Link*> ls;
    double lat = 0;
    if (h.from != h.to) h.from->route_to(h.to, ls, &lat);
    out.routes[r].latency = h.latency + lat;
    for (auto* l : ls) {
      auto it = index.find(l);
      if (it == index.end()) {
        it = index.emplace(l, int(out.links.size())).first;
        out.links.push_back(
            {l->get_name(), l->get_bandwidth(), l->get_sharing_policy() != simgrid::s4u::Link::SharingPolicy::FATPIPE});
      }
      out.routes[r].links.push_back(it->second);
    }
  }
  return out;
}

double analytical_ring_seconds(const RingRoutes& ring, double bytes, const collectives::RingScheduleOptions& opt)
{
  AnalyticalFabric f(ring.links, [&ring](int src, int) -> const AnalyticalRoute& { return ring.routes[size_t(src)]; });
  return collectives::run_ring_allreduce(f, int(ring.routes.size()), bytes, opt).seconds;
}

Result<AllreduceResult> run_allreduce(const models::ClusterProfile& cluster, const AllreduceJob& job)
{
  using clock = std::chrono::steady_clock;
  const auto w0 = clock::now();
  if (job.ranks < 1 || job.ranks_per_host < 1)
    return Error::at("", "ranks", "at least one rank and one rank per host", std::to_string(job.ranks));
  const int hosts = (job.ranks + job.ranks_per_host - 1) / job.ranks_per_host;
  if (int(cluster.host_count()) < hosts)
    return Error::at("", "ranks", std::to_string(hosts) + " hosts in the cluster",
                     std::to_string(cluster.host_count()));
  for (int h = 0; h < hosts; ++h)
    if (job.gpu && int(cluster.host(size_t(h)).gpus.size()) < job.ranks_per_host)
      return Error::at(cluster.host(size_t(h)).file, "gpus", std::to_string(job.ranks_per_host) + " GPUs per host",
                       std::to_string(cluster.host(size_t(h)).gpus.size()));
  auto simr = Simulation::create(cluster);
  if (!simr.ok()) return simr.error();
  Simulation& sim = *simr.value();
  const Platform& pf = sim.platform();
  std::vector<Endpoint> ep;
  for (int r = 0; r < job.ranks; ++r)
    ep.push_back(endpoint_of(cluster, job, r));
  std::vector<Hop> ring;
  for (int r = 0; r < job.ranks; ++r)
    ring.push_back(hop(pf, ep[size_t(r)], ep[size_t((r + 1) % job.ranks)]));

  AllreduceResult out;
  // alpha and beta of rank 0 -> 1 (for the alpha-beta reference).
  if (job.ranks > 1) {
    std::vector<simgrid::s4u::Link*> links;
    double lat = 0;
    ring[0].from->route_to(ring[0].to, links, &lat);
    double bw = std::numeric_limits<double>::infinity();
    for (auto* l : links)
      bw = std::min(bw, l->get_bandwidth());
    out.alpha = ring[0].latency + lat;
    out.beta = bw;
  }

  // Time the schedule on a fabric (the set-up until now is reported apart).
  auto schedule_on = [&](collectives::MessageFabric& f) {
    out.setup_wall_seconds = std::chrono::duration<double>(clock::now() - w0).count();
    const auto t0 = clock::now();
    auto r = collectives::run_ring_allreduce(f, job.ranks, job.bytes, job.schedule);
    out.seconds = r.seconds;
    out.messages = r.messages;
    out.wall_seconds = std::chrono::duration<double>(clock::now() - t0).count();
    return out;
  };
  if (job.mode == FabricMode::FLOW) {
    FlowFabric f(sim, ring);
    return schedule_on(f);
  }
  if (job.mode == FabricMode::ANALYTICAL) {
    // Read the ring's routes from the platform once; then no SimGrid at all.
    std::vector<RankEndpoint> eps;
    for (const auto& e : ep)
      eps.push_back({e.machine, e.loc});
    RingRoutes rr = ring_routes(pf, eps);
    AnalyticalFabric f(rr.links, [&rr](int src, int) -> const AnalyticalRoute& { return rr.routes[size_t(src)]; });
    return schedule_on(f);
  }

  // Protocol mode: one task per rank with its transport; the ring through the rendezvous.
  transports::register_builtin_transports();
  transports::ClusterSpec spec;
  std::vector<collectives::RankInfo> ranks;
  for (int r = 0; r < job.ranks; ++r) {
    const std::string task = "/job:worker/replica:0/task:" + std::to_string(r);
    spec[task] = "rank" + std::to_string(r);
    const Location l = ep[size_t(r)].loc;
    ranks.push_back({task, task + (l.is_gpu() ? "/device:GPU:" + std::to_string(l.index) : "/device:CPU:0")});
  }
  const auto names = cluster.host_names();
  std::vector<std::unique_ptr<transports::TaskRuntime>> tasks;
  std::vector<std::unique_ptr<collectives::Channel>> channels;
  for (int r = 0; r < job.ranks; ++r) {
    auto p = sim.add_process(names[ep[size_t(r)].machine], "rank" + std::to_string(r));
    if (!p.ok()) return p.error();
    const auto& host = cluster.host(ep[size_t(r)].machine);
    transports::TaskSpec ts;
    ts.task = ranks[size_t(r)].task;
    ts.transport = job.transport;
    ts.options = job.options;
    ts.memory.nic_socket = host.nics.empty() ? 0 : host.nics[0].socket;
    ts.cpu_numa_node = ts.memory.nic_socket;
    for (size_t g = 0; g < host.gpus.size(); ++g)
      if (!host.nics.empty() && host.gpus[g].socket == host.nics[0].socket) ts.memory.gpudirect_gpus.push_back(int(g));
    auto t = transports::TaskRuntime::create(ts, p.value()->name(), p.value()->runtime(),
                                             p.value()->device_count() ? &p.value()->device() : nullptr,
                                             p.value()->streams(), spec);
    if (!t.ok()) return t.error();
    tasks.push_back(std::move(t.value()));
    channels.push_back(std::make_unique<collectives::Channel>(*tasks.back(), ranks, r));
  }
  std::optional<Error> failure;
  for (auto& t : tasks)
    t->transport().start([&](Status st) {
      if (!st.ok() && !failure) failure = st.error();
    });
  sim.run();
  if (failure) return *failure;
  out.setup_wall_seconds = std::chrono::duration<double>(clock::now() - w0).count();
  const auto t0w = clock::now();
  const double t0 = sim.now();
  int done = 0;
  const int64_t elems = int64_t(job.bytes / 4);
  for (int r = 0; r < job.ranks; ++r) {
    auto t = tasks[size_t(r)]->make_tensor(DataType::FLOAT, TensorShape{{elems}}, ep[size_t(r)].loc,
                                           AllocatorAttributes{false, false, true});
    if (!t.ok()) return t.error();
    collectives::ring_allreduce(*channels[size_t(r)], 1, "allreduce", t.value(), [&](Result<Tensor> x) {
      if (!x.ok() && !failure) failure = x.error();
      ++done;
    });
  }
  sim.run();
  if (failure) return *failure;
  if (done != job.ranks)
    return Error::msg("ring allreduce: " + std::to_string(job.ranks - done) + " ranks never finished");
  out.seconds = sim.now() - t0;
  out.messages = uint64_t(2 * (job.ranks - 1)) * uint64_t(job.ranks);
  out.wall_seconds = std::chrono::duration<double>(clock::now() - t0w).count();
  return out;
}

} // namespace tp::sim
