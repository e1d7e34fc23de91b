// The three fabric modes of a ring allreduce (see fabric_modes.hpp).
#include "sim/fabric_modes.hpp"

#include "core/collectives/ring.hpp"
#include "core/common/isolated_run.hpp"
#include "core/common/progress.hpp"
#include "core/transports/mpi/mpi.hpp"
#include "core/transports/task_runtime.hpp"
#include "sim/analytical_fabric.hpp"
#include "sim/job_estimate.hpp"
#include "sim/platform.hpp"
#include "sim/sim_job_backend.hpp"
#include "sim/simulation.hpp"

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>

namespace tp::sim {

namespace {

namespace sg4 = simgrid::s4u;

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

/// One stage of a message's path: its bytes through a SimGrid route (a NIC's DMA and the wire, or a GPU copy
/// engine's DMA), or a memcpy by a CPU core.
struct Leg {
  sg4::Host* from = nullptr; ///< a comm from -> to (both null: a CPU copy)
  sg4::Host* to = nullptr;
  double fixed = 0; ///< seconds before its bytes move (DMA round trips, the wire, a copy's launch, a hand-off)
  double rate = std::numeric_limits<double>::infinity(); ///< the slowest link of the route
  std::vector<sg4::Link*> links;
  bool cpu_copy = false;
  models::CpuProfile cpu; ///< CPU copy: memcpy_time
  double numa_rate = 0;   ///< CPU copy across NUMA nodes: the socket link's rate (0: one node)
  bool copy = false;      ///< a copy (none for an empty payload)

  double seconds(double n) const
  {
    if (cpu_copy) {
      const double t = cpu.memcpy_time(n);
      return numa_rate > 0 ? std::max(t, n / numa_rate) : t;
    }
    return n > 0 && rate < std::numeric_limits<double>::infinity() ? n / rate : 0.0;
  }
};

/// A message's path: its legs move blocks of `block` bytes one after the other, each block through every leg in
/// turn (pipelined): a message not larger than a block is stored and forwarded, block 0 runs the legs side by side.
/// Uncontended it takes every fixed cost, the slowest leg's time for the whole message, and every other leg's
/// time for one block (the pipeline's fill and drain).
struct Path {
  std::vector<Leg> legs;
  double block = std::numeric_limits<double>::infinity();

  bool used(const Leg& l, double n) const { return n > 0 || !l.copy; }
  size_t slowest(double n) const
  {
    size_t m = 0;
    for (size_t i = 1; i < legs.size(); ++i)
      if (legs[i].seconds(n) > legs[m].seconds(n)) m = i;
    return m;
  }
  /// Fixed costs plus the fill: everything but the slowest leg's time for the whole message.
  double fill(double n) const
  {
    if (legs.empty()) return 0;
    const size_t m = slowest(n);
    const double b = std::min(n, block);
    double t = 0;
    for (size_t i = 0; i < legs.size(); ++i)
      if (used(legs[i], n)) t += legs[i].fixed + (i == m ? 0.0 : legs[i].seconds(b));
    return t;
  }
  double seconds(double n) const { return legs.empty() ? 0.0 : fill(n) + legs[slowest(n)].seconds(n); }
  bool store_and_forward(double n) const { return n <= block; }
};

Leg comm_leg(sg4::Host* from, sg4::Host* to, double fixed, bool copy)
{
  Leg l;
  l.from = from;
  l.to = to;
  l.fixed = fixed;
  l.copy = copy;
  double lat = 0;
  from->route_to(to, l.links, &lat);
  for (auto* k : l.links)
    l.rate = std::min(l.rate, k->get_bandwidth());
  return l;
}

/// A copy between two locations of machine m as the simulated runtime does it (SimRuntime::execute): host to host
/// on a CPU core; GPU to GPU on one socket a peer copy; across sockets staged through pinned host memory of the
/// destination's socket, both halves at once; host <-> GPU by the GPU's copy engine.
Path copy_path(const Platform& pf, size_t m, Location a, Location b)
{
  const auto& hp = pf.machine(m);
  Path p;
  if (a.is_host() && b.is_host()) {
    Leg l;
    l.cpu_copy = true;
    l.copy = true;
    l.cpu = hp.sockets[size_t(a.index)].cpu;
    l.fixed = l.cpu.work_handoff_latency;
    if (a != b) l.numa_rate = hp.socket_link.bandwidth;
    p.legs.push_back(l);
    return p;
  }
  const Location gpu_side = a.is_gpu() ? a : b;
  const double fixed = hp.gpus[size_t(gpu_side.index)].gpu.memcpy_launch_overhead + pf.local_copy_latency(m, a, b);
  if (a.is_gpu() && b.is_gpu() && pf.socket_of(m, a) != pf.socket_of(m, b)) {
    const Location staging = Location::host(pf.socket_of(m, b));
    p.legs.push_back(comm_leg(pf.local_host(m, a), pf.local_host(m, staging), fixed, true));
    p.legs.push_back(comm_leg(pf.local_host(m, staging), pf.local_host(m, b), 0, true));
    p.block = 0; // side by side
    return p;
  }
  p.legs.push_back(comm_leg(pf.local_host(m, a), pf.local_host(m, b), fixed, true));
  return p;
}

void append(Path& p, const Path& more)
{
  p.legs.insert(p.legs.end(), more.legs.begin(), more.legs.end());
}

int nic_socket(const Platform& pf, size_t m)
{
  const auto& hp = pf.machine(m);
  return hp.nics.empty() ? 0 : hp.nics[0].socket;
}

/// The NIC moving bytes from `a` (read by machine ma's NIC) to `b` (written by machine mb's NIC).
Leg nic_leg(const Platform& pf, size_t ma, Location a, size_t mb, Location b)
{
  return comm_leg(pf.nic_endpoint(ma, 0, a, false), pf.nic_endpoint(mb, 0, b, true),
                  pf.dma_read_latency(ma, 0, a) + pf.wire_latency(ma, 0, mb, 0) + pf.dma_write_latency(mb, 0, b),
                  false);
}

/// The path of a ring message of that kind from rank a to rank b, as the mpi transport moves it.
Path message_path(const Platform& pf, const Endpoint& a, const Endpoint& b, DataPath::Kind kind, const DataPath& dp)
{
  const Location host_a = Location::host(nic_socket(pf, a.machine)); // bounce, staging and proto buffers
  const Location host_b = Location::host(nic_socket(pf, b.machine));
  const bool same = a.machine == b.machine;
  Path p; // one leg after the other unless pipelined below
  if (kind == DataPath::PROTO_EAGER || kind == DataPath::PROTO_RENDEZVOUS) {
    append(p, copy_path(pf, a.machine, a.loc, host_a));  // AsProtoTensorContent
    append(p, copy_path(pf, a.machine, host_a, host_a)); // SerializeToString
    if (kind == DataPath::PROTO_EAGER) {
      append(p, copy_path(pf, a.machine, host_a, host_a)); // into the bounce buffer
      p.legs.push_back(nic_leg(pf, a.machine, host_a, b.machine, host_b));
      append(p, copy_path(pf, b.machine, host_b, host_b)); // out of the bounce buffer
    } else if (same && dp.peer_copy) {
      append(p, copy_path(pf, a.machine, host_a, host_b));
    } else {
      p.legs.push_back(nic_leg(pf, a.machine, host_a, b.machine, host_b));
    }
    append(p, copy_path(pf, b.machine, host_b, host_b)); // ParseFromString
    append(p, copy_path(pf, b.machine, host_b, b.loc));  // MakeTensorFromProto
    return p;
  }
  if (kind == DataPath::EAGER) {
    append(p, copy_path(pf, a.machine, a.loc, host_a));
    p.legs.push_back(nic_leg(pf, a.machine, host_a, b.machine, host_b));
    append(p, copy_path(pf, b.machine, host_b, b.loc));
    return p;
  }
  if (same && dp.peer_copy) return copy_path(pf, a.machine, a.loc, b.loc);
  const Location from = a.loc.is_gpu() ? host_a : a.loc;
  const Location to = b.loc.is_gpu() ? host_b : b.loc;
  if (a.loc.is_gpu()) append(p, copy_path(pf, a.machine, a.loc, from));
  p.legs.push_back(nic_leg(pf, a.machine, from, b.machine, to));
  if (b.loc.is_gpu()) append(p, copy_path(pf, b.machine, to, b.loc));
  if (a.loc.is_gpu() && dp.staging_block > 0) p.block = double(dp.staging_block);
  return p;
}

struct RingPaths {
  std::vector<Path> paths[DataPath::KINDS]; ///< per kind, [r]: rank r -> rank r + 1
  DataPath dp;
  const Path& path(int src, double bytes) const { return paths[dp.kind(bytes)][size_t(src)]; }
};

RingPaths ring_paths(const Platform& pf, const std::vector<Endpoint>& ranks, const DataPath& dp)
{
  RingPaths out;
  out.dp = dp;
  const size_t n = ranks.size();
  for (int k = 0; k < DataPath::KINDS; ++k)
    for (size_t r = 0; r < n; ++r)
      out.paths[k].push_back(message_path(pf, ranks[r], ranks[(r + 1) % n], DataPath::Kind(k), dp));
  return out;
}

class FlowFabric final : public collectives::MessageFabric {
public:
  FlowFabric(Simulation& sim, RingPaths ring) : sim_(sim), ring_(std::move(ring)) {}
  double now() const override { return sim_.now(); }
  void send(int src, int dst, double bytes, std::function<void()> delivered) override
  {
    (void)dst; // the ring only sends to the right neighbour
    const Path& p = ring_.path(src, bytes);
    if (p.store_and_forward(bytes)) return leg_after_leg(p, 0, bytes, std::move(delivered));
    // Pipelined (or side by side): the fixed costs and the fill, then every leg's bytes at once.
    sim_.raw_timer(p.fill(bytes), [this, &p, bytes, delivered = std::move(delivered)]() mutable {
      auto left = std::make_shared<size_t>(p.legs.size());
      auto done = std::make_shared<std::function<void()>>(std::move(delivered));
      for (const Leg& l : p.legs)
        move(l, bytes, [left, done] {
          if (--*left == 0) (*done)();
        });
    });
  }
  void after(double seconds, std::function<void()> f) override { sim_.raw_timer(seconds, std::move(f)); }
  void run() override { sim_.run(); }

private:
  void move(const Leg& l, double bytes, std::function<void()> done)
  {
    if (l.cpu_copy)
      sim_.raw_timer(l.seconds(bytes), std::move(done));
    else
      sim_.raw_comm(l.from, l.to, bytes, std::move(done));
  }
  void leg_after_leg(const Path& p, size_t i, double bytes, std::function<void()> delivered)
  {
    if (i == p.legs.size()) return delivered();
    const Leg& l = p.legs[i];
    if (!p.used(l, bytes)) return leg_after_leg(p, i + 1, bytes, std::move(delivered));
    sim_.raw_timer(l.fixed, [this, &p, &l, i, bytes, delivered = std::move(delivered)]() mutable {
      move(l, bytes, [this, &p, i, bytes, delivered = std::move(delivered)]() mutable {
        leg_after_leg(p, i + 1, bytes, std::move(delivered));
      });
    });
  }
  Simulation& sim_;
  RingPaths ring_;
};

AnalyticalRoute analytical_route(const Path& p, std::vector<AnalyticalLink>& links,
                                 std::map<const sg4::Link*, int>& index)
{
  AnalyticalRoute out;
  double rate = std::numeric_limits<double>::infinity();
  for (const Leg& l : p.legs)
    for (auto* k : l.links) {
      auto it = index.find(k);
      if (it == index.end()) {
        it = index.emplace(k, int(links.size())).first;
        links.push_back(
            {k->get_name(), k->get_bandwidth(), k->get_sharing_policy() != sg4::Link::SharingPolicy::FATPIPE});
      }
      if (std::find(out.links.begin(), out.links.end(), it->second) == out.links.end()) {
        out.links.push_back(it->second);
        rate = std::min(rate, k->get_bandwidth());
      }
    }
  // The fabric holds the links for bytes / rate; the rest of the path's time is its delay.
  // A ring's segments have one or two sizes (the first count mod N one element longer): remember two.
  out.delay = [p, rate, seen = std::array<std::pair<double, double>, 2>{{{-1.0, 0.0}, {-1.0, 0.0}}},
               next = 0](double bytes) mutable {
    for (const auto& [b, d] : seen)
      if (b == bytes) return d;
    const double busy = bytes > 0 && rate < std::numeric_limits<double>::infinity() ? bytes / rate : 0.0;
    const double d = std::max(0.0, p.seconds(bytes) - busy);
    seen[size_t(next)] = {bytes, d};
    next ^= 1;
    return d;
  };
  return out;
}
/// Counts the ring's messages on their way into a fabric and reports them (core/common/progress.hpp): in its own
/// count, or in `sent` when several fabrics time one ring (the steady-state tries, then maybe the whole ring).
class CountingFabric final : public collectives::MessageFabric {
public:
  CountingFabric(collectives::MessageFabric& f, double total, uint64_t* sent = nullptr)
      : f_(f), total_(total), sent_(sent ? sent : &own_)
  {
  }
  double now() const override { return f_.now(); }
  void send(int src, int dst, double bytes, std::function<void()> delivered) override
  {
    if ((++*sent_ & 1023) == 0) report_progress(double(*sent_), total_);
    f_.send(src, dst, bytes, std::move(delivered));
  }
  void after(double seconds, std::function<void()> f) override { f_.after(seconds, std::move(f)); }
  void run() override { f_.run(); }

private:
  collectives::MessageFabric& f_;
  double total_;
  uint64_t own_ = 0;
  uint64_t* sent_;
};

/// A fresh analytical fabric of a ring's routes, counting its messages for the progress line.
class CountedAnalyticalFabric final : public collectives::MessageFabric {
public:
  CountedAnalyticalFabric(const RingRoutes& ring, double total, uint64_t* sent)
      : fabric_(ring.links, [&ring](int src, int, double b) -> const AnalyticalRoute& { return ring.route(src, b); }),
        counted_(fabric_, total, sent)
  {
  }
  double now() const override { return counted_.now(); }
  void send(int src, int dst, double bytes, std::function<void()> delivered) override
  {
    counted_.send(src, dst, bytes, std::move(delivered));
  }
  void after(double seconds, std::function<void()> f) override { counted_.after(seconds, std::move(f)); }
  void run() override { counted_.run(); }

private:
  AnalyticalFabric fabric_;
  CountingFabric counted_;
};

} // namespace

DataPath mpi_data_path(const transports::TransportOptions& options)
{
  const auto o = transports::mpi_messenger_options();
  DataPath d;
  d.proto_below = options.of<transports::MpiOptions>().optimal_path ? double(transports::MPI_OPTIMAL_MIN_BYTES)
                                                                    : std::numeric_limits<double>::infinity();
  d.eager_limit = o.eager_threshold;
  d.peer_copy = o.intra_node_copy;
  d.staging_block = o.staging_block;
  return d;
}

Status check_fabric_options(const transports::TransportOptions& options)
{
  const char* why = "(the fabric modes model no MPI thread: a blocking receive serializes the ring's steps)";
  if (!options.of<transports::MpiOptions>().optimal_path)
    return Error::at("", "mpi_optimal_path", std::string("true for a flow or analytical ring ") + why, "false");
  if (!options.of<transports::MpiOptions>().nonblocking_recv)
    return Error::at("", "mpi_nonblocking_recv", std::string("true for a flow or analytical ring ") + why, "false");
  return ok_status();
}

RingRoutes ring_routes(const Platform& pf, const std::vector<RankEndpoint>& ranks, const DataPath& path)
{
  std::vector<Endpoint> eps;
  for (const auto& r : ranks)
    eps.push_back({r.machine, r.loc});
  const RingPaths paths = ring_paths(pf, eps, path);
  RingRoutes out;
  out.path = path;
  std::map<const sg4::Link*, int> index;
  for (int k = 0; k < DataPath::KINDS; ++k)
    for (const Path& p : paths.paths[k])
      out.routes[k].push_back(analytical_route(p, out.links, index));
  return out;
}

collectives::RingScheduleOptions ring_adds(const models::HostProfile& h, Location loc)
{
  collectives::RingScheduleOptions o;
  if (loc.is_gpu()) {
    const models::GpuProfile g = h.gpus[size_t(loc.index)].gpu;
    o.reduce_time = [g](double n) { return g.reduce_time(n); };
    o.copy_time = [g](double n) { return g.kernel_launch_overhead + 2.0 * n / g.memory_bandwidth; };
  } else {
    const models::CpuProfile c = h.sockets[size_t(loc.index)].cpu;
    o.reduce_time = [c](double n) { return c.reduce_time(n, 1) + c.work_handoff_latency; };
    o.copy_time = [c](double n) { return c.memcpy_time(n) + c.work_handoff_latency; };
  }
  return o;
}

namespace {

/// The ranks (ascending, each once) whose messages of the sizes `segs` hold each shared link of the ring's routes
/// (none for a link that is not shared or that no message holds).
std::vector<std::vector<int>> shared_link_holders(const RingRoutes& ring, std::initializer_list<double> segs)
{
  std::vector<std::vector<int>> holders(ring.links.size());
  for (const double seg : segs)
    for (int r = 0; r < int(ring.ranks()); ++r)
      for (int l : ring.route(r, seg).links) {
        auto& h = holders[size_t(l)];
        if (ring.links[size_t(l)].shared && (h.empty() || h.back() != r)) h.push_back(r);
      }
  if (segs.size() > 1) // a rank can hold a link at either size
    for (auto& h : holders) {
      std::sort(h.begin(), h.end());
      h.erase(std::unique(h.begin(), h.end()), h.end());
    }
  return holders;
}

} // namespace

bool ring_links_unshared(const RingRoutes& ring, double bytes, int segments)
{
  const int n = int(ring.ranks());
  if (n < 2) return true;
  if (segments <= 0) segments = n;
  const collectives::RingSegmentSizes sizes = collectives::ring_segment_sizes(bytes, segments);
  std::vector<int> owner(ring.links.size(), -1);
  for (const double seg : {sizes.larger, sizes.smaller})
    for (int r = 0; r < n; ++r)
      for (int l : ring.route(r, seg).links) {
        if (!ring.links[size_t(l)].shared) continue;
        if (owner[size_t(l)] >= 0 && owner[size_t(l)] != r) return false;
        owner[size_t(l)] = r;
      }
  return true;
}

double ring_contention_bound(const RingRoutes& ring, double bytes, int segments)
{
  const int n = int(ring.ranks());
  if (n < 2) return 0;
  if (segments <= 0) segments = n;
  const collectives::RingSegmentSizes sizes = collectives::ring_segment_sizes(bytes, segments);
  // The ranks whose messages hold each shared link, and the longest any message holds its links.
  const std::vector<std::vector<int>> users = shared_link_holders(ring, {sizes.larger, sizes.smaller});
  double longest = 0;
  for (const double seg : {sizes.larger, sizes.smaller})
    for (int r = 0; r < n; ++r)
      longest = std::max(longest, ring_hop_time(ring, r, seg).busy);
  // A message waits for at most one message of every other rank that shares a link of its route (a rank has one in
  // flight: it sends the next once its own has landed), each holding the link at most `longest`; and the fabric
  // moves a message past a free gap shorter than itself (AnalyticalFabric::send), so each wait is at most twice that.
  double worst = 0;
  for (const double seg : {sizes.larger, sizes.smaller})
    for (int r = 0; r < n; ++r) {
      std::vector<int> others;
      for (int l : ring.route(r, seg).links)
        if (ring.links[size_t(l)].shared)
          for (int u : users[size_t(l)])
            if (u != r) others.push_back(u);
      std::sort(others.begin(), others.end());
      others.erase(std::unique(others.begin(), others.end()), others.end());
      worst = std::max(worst, double(others.size()) * 2 * longest);
    }
  // A chain of the ring's dependencies holds one message per step: 2 (N - 1) steps of the whole ring.
  return 2.0 * double(segments - 1) * worst;
}

collectives::RingHopTime ring_hop_time(const RingRoutes& ring, int rank, double bytes)
{
  // As AnalyticalFabric::send times a message that finds its links free.
  const AnalyticalRoute& r = ring.route(rank, bytes);
  double rate = std::numeric_limits<double>::infinity();
  for (int l : r.links)
    rate = std::min(rate, ring.links[size_t(l)].bandwidth);
  collectives::RingHopTime h;
  h.busy = bytes > 0 && rate < std::numeric_limits<double>::infinity() ? bytes / rate : 0.0;
  h.delay = r.latency + (r.delay ? r.delay(bytes) : 0.0);
  return h;
}

std::vector<RankEndpoint> ring_period_candidate(const std::vector<RankEndpoint>& ranks, size_t hosts)
{
  size_t end = 0;
  std::vector<size_t> seen;
  for (; end < ranks.size(); ++end) {
    const size_t h = ranks[end].machine;
    if (std::find(seen.begin(), seen.end(), h) != seen.end()) continue;
    if (seen.size() == hosts) break;
    seen.push_back(h);
  }
  if (end == ranks.size()) return {};
  return std::vector<RankEndpoint>(ranks.begin(), ranks.begin() + std::ptrdiff_t(end));
}

std::optional<RingPeriod> ring_period(const Platform& pf, const std::vector<RankEndpoint>& ranks, const DataPath& path)
{
  const auto two = ring_period_candidate(ranks, 2), four = ring_period_candidate(ranks, 4);
  if (two.empty() || four.empty()) return std::nullopt;
  return RingPeriod{ring_routes(pf, two, path), ring_routes(pf, four, path)};
}

bool ring_period_repeats(const RingRoutes& ring, const RingRoutes& period, double bytes)
{
  const int n = int(ring.ranks()), p = int(period.ranks());
  if (p < 1 || n < 2 * p || n % p != 0) return false;
  const collectives::RingSegmentSizes sizes = collectives::ring_segment_sizes(bytes, n);
  if (!sizes.one_size()) return false; // segments unlike from host to host
  const double seg = sizes.larger;
  if (ring.path.kind(seg) != period.path.kind(seg)) return false;
  std::vector<int> image(ring.links.size(), -1); // ring's link -> period's
  for (int r = 0; r < n; ++r) {
    const AnalyticalRoute& a = ring.route(r, seg);
    const AnalyticalRoute& b = period.route(r % p, seg);
    if (a.links.size() != b.links.size() || a.latency != b.latency ||
        (a.delay ? a.delay(seg) : 0.0) != (b.delay ? b.delay(seg) : 0.0))
      return false;
    for (size_t i = 0; i < a.links.size(); ++i) {
      const int l = a.links[i], m = b.links[i];
      const AnalyticalLink &x = ring.links[size_t(l)], &y = period.links[size_t(m)];
      if (x.bandwidth != y.bandwidth || x.shared != y.shared) return false;
      if (image[size_t(l)] < 0)
        image[size_t(l)] = m;
      else if (image[size_t(l)] != m)
        return false;
    }
  }
  // A shared link's holders, as residues mod P: distinct, and the same as its image's holders in the period.
  const auto holders = shared_link_holders(ring, {seg}), period_holders = shared_link_holders(period, {seg});
  for (size_t l = 0; l < holders.size(); ++l) {
    if (holders[l].empty()) continue;
    std::vector<int> residues = holders[l];
    for (int& r : residues)
      r %= p;
    std::sort(residues.begin(), residues.end());
    if (std::adjacent_find(residues.begin(), residues.end()) != residues.end() ||
        residues != period_holders[size_t(image[l])])
      return false;
  }
  return true;
}

collectives::RingScheduleResult analytical_ring(const RingRoutes& ring, double bytes,
                                                const collectives::RingScheduleOptions& opt, bool* closed_form,
                                                int ring_ranks, const RingPeriod* period)
{
  const int k = int(ring.ranks());
  const int n = ring_ranks > 0 ? ring_ranks : k;
  if (n > k) {
    // Folded: every period of ranks must see the same segments, so a tensor whose segments have two sizes is timed
    // with every segment of the larger one (at most one element more each; an empty segment's work then counts). The
    // recurrence could take two sizes exactly, but only over every rank (N^2 steps): this keeps it to one period.
    const collectives::RingSegmentSizes sizes = collectives::ring_segment_sizes(bytes, n);
    if (!sizes.one_size()) bytes = sizes.larger * double(n);
  }
  const bool unshared = ring_links_unshared(ring, bytes, n);
  if (closed_form) *closed_form = unshared;
  // Rank r's route is rank (r mod k)'s: the recurrence over all n ranks, as with every route built, computed over one
  // period of ranks where the hops repeat with one (k = two hosts' ranks: a host's ranks when the hosts are odd).
  auto recurrence = [&] {
    return collectives::ring_allreduce_uncontended(
        n, bytes, [&ring, k](int r, double b) { return ring_hop_time(ring, r % k, b); }, opt, std::gcd(n, k));
  };
  if (unshared) return recurrence();
  // Segments of two sizes (the larger going round: no steady state to count) of a latency-bound ring, such as a
  // tensor of fewer elements than ranks: what sharing a link adds is at most ring_contention_bound, and contention
  // only delays (a message starts no earlier than with its links free, and every step waits for the ones before it),
  // so the recurrence that leaves it out is timed instead of every message, where that bound is at most
  // RING_CONTENTION_TOLERANCE of its time (measured on 256 and 1,024 DGX A100 ranks, 4 to 12 bytes a segment: 1.7e-6
  // of it at most, the bound 2.8e-4 to 8.4e-4). A bandwidth-bound ring's bound is far above that: it runs whole.
  const collectives::RingSegmentSizes sizes = collectives::ring_segment_sizes(bytes, n);
  const double slack =
      !sizes.one_size() ? ring_contention_bound(ring, bytes, n) : std::numeric_limits<double>::infinity();
  if (std::isfinite(slack)) {
    auto rec = recurrence();
    if (slack <= RING_CONTENTION_TOLERANCE * rec.seconds) {
      rec.contention_bound = slack;
      return rec;
    }
  }
  // One segment size on routes that repeat every period of ranks: message by message, folded onto one period, where
  // a fold onto twice as many ranks agrees (else the ties settle into a longer pattern: the whole ring).
  uint64_t folds = 0;
  if (period && ring_ranks <= 0 && sizes.one_size() && ring_period_repeats(ring, period->routes, bytes) &&
      ring_period_repeats(ring, period->doubled, bytes)) {
    auto once = analytical_ring(period->routes, bytes, opt, nullptr, n);
    const auto twice = analytical_ring(period->doubled, bytes, opt, nullptr, n);
    folds = once.simulated_messages + twice.simulated_messages;
    if (std::abs(once.seconds - twice.seconds) <= 1e-12 * twice.seconds) {
      once.messages = 2 * uint64_t(n - 1) * uint64_t(n);
      once.simulated_messages = folds;
      once.folded_ranks = int(period->routes.ranks());
      return once;
    }
  }
  // Message by message, the steps that repeat counted (collectives::run_steady_ring_allreduce). The progress line
  // counts every try's messages against the most they can take (the tries and the whole ring).
  const double most = 2.0 * double(k) * double(n - 1) + double(collectives::ring_steady_tries_messages(k, n, bytes));
  uint64_t sent = 0;
  auto whole = collectives::run_steady_ring_allreduce(
      [&ring, most, &sent]() -> std::unique_ptr<collectives::MessageFabric> {
        return std::make_unique<CountedAnalyticalFabric>(ring, most, &sent);
      },
      k, n, bytes, opt);
  whole.simulated_messages += folds;
  return whole;
}

namespace {

/// alpha and beta of rank 0 -> 1 at one segment (for the alpha-beta reference).
void alpha_beta_of(const RingPaths& paths, double seg, AllreduceResult& out)
{
  const Path& p = paths.path(0, seg);
  double bw = std::numeric_limits<double>::infinity();
  for (const Leg& l : p.legs)
    if (p.used(l, seg) && l.seconds(seg) > 0 && seg / l.seconds(seg) < bw) {
      bw = seg / l.seconds(seg);
      out.beta_link = "cpu memcpy";
      if (!l.cpu_copy && !l.links.empty())
        out.beta_link = (*std::min_element(l.links.begin(), l.links.end(), [](const sg4::Link* x, const sg4::Link* y) {
                          return x->get_bandwidth() < y->get_bandwidth();
                        }))->get_name();
    }
  out.beta = bw;
  out.alpha = p.seconds(seg) - (bw < std::numeric_limits<double>::infinity() ? seg / bw : 0.0);
}

} // namespace

std::string to_text(const AllreduceResult& r)
{
  std::ostringstream o;
  o.precision(17);
  o << r.seconds << ' ' << r.messages << ' ' << r.wall_seconds << ' ' << r.setup_wall_seconds << ' ' << r.alpha << ' '
    << r.beta << ' ' << int(r.closed_form) << ' ' << r.platform_machines << ' ' << r.contention_bound << ' '
    << r.folded_ranks << ' ' << r.simulated_messages << ' ' << r.beta_link;
  return o.str();
}

Result<AllreduceResult> allreduce_result_from_text(const std::string& text)
{
  AllreduceResult out;
  std::istringstream in(text);
  std::string f[11]; // strtod reads "inf" (beta where no stage moved bytes), which operator>> does not
  for (auto& x : f)
    in >> x;
  std::getline(in >> std::ws, out.beta_link);
  try {
    out.seconds = std::stod(f[0]);
    out.messages = std::stoull(f[1]);
    out.wall_seconds = std::stod(f[2]);
    out.setup_wall_seconds = std::stod(f[3]);
    out.alpha = std::stod(f[4]);
    out.beta = std::stod(f[5]);
    out.closed_form = std::stoi(f[6]) != 0;
    out.platform_machines = std::stoi(f[7]);
    out.contention_bound = std::stod(f[8]);
    out.folded_ranks = std::stoi(f[9]);
    out.simulated_messages = std::stoull(f[10]);
  } catch (const std::exception&) {
    return Error::msg("allreduce: unreadable result '" + text + "'");
  }
  return out;
}

bool analytical_foldable(const models::ClusterProfile& cluster, const AllreduceJob& job)
{
  return cluster.groups.size() == 1 && !(cluster.topology && cluster.topology->tiers > 1) && job.ranks_per_host > 0 &&
         job.ranks % job.ranks_per_host == 0 && job.ranks / job.ranks_per_host > FOLDED_MACHINES;
}

namespace {

/// The analytical ring on identical hosts behind one switch, with every host full (ranks a multiple of the ranks per
/// host), read from a platform of three of them: then rank r's route to its right is the same as rank r mod K's
/// (K ranks per host: r mod K < K - 1 within a host, K - 1 to the next host; every pair of hosts alike through one
/// switch), and whether two routes share a link shows on three hosts (a host's own routes, the one into it and the one
/// out of it) as on all of them. Where they share none the ring is timed by its recurrence with those routes: the same
/// result as building every host (tests/sim/fabric_modes_test.cpp), in memory and time linear in the ranks.
/// Nothing (the caller builds every host) where the cluster is not like that or a link is shared.
Result<std::optional<AllreduceResult>> folded_analytical(const models::ClusterProfile& cluster, const AllreduceJob& job,
                                                         std::chrono::steady_clock::time_point w0)
{
  using clock = std::chrono::steady_clock;
  const int k = job.ranks_per_host;
  models::ClusterProfile small = cluster;
  small.groups[0].count = FOLDED_MACHINES;
  auto simr = Simulation::create(small);
  if (!simr.ok()) return simr.error();
  const Platform& pf = simr.value()->platform();
  AllreduceJob rep = job;
  rep.ranks = FOLDED_MACHINES * k;
  std::vector<Endpoint> ep;
  std::vector<RankEndpoint> eps;
  for (int r = 0; r < rep.ranks; ++r) {
    ep.push_back(endpoint_of(small, rep, r));
    eps.push_back({ep.back().machine, ep.back().loc});
  }
  const DataPath dp = mpi_data_path(job.options);
  const RingRoutes rr = ring_routes(pf, eps, dp);
  if (!ring_links_unshared(rr, job.bytes, job.ranks)) return std::optional<AllreduceResult>{};
  AllreduceResult out;
  alpha_beta_of(ring_paths(pf, ep, dp), job.bytes / job.ranks, out);
  const collectives::RingScheduleOptions adds =
      job.local_work ? ring_adds(small.host(0), ep[0].loc) : collectives::RingScheduleOptions{};
  out.setup_wall_seconds = std::chrono::duration<double>(clock::now() - w0).count();
  const auto t0 = clock::now();
  const auto r = collectives::ring_allreduce_uncontended(
      job.ranks, job.bytes, [&rr, k](int rank, double n) { return ring_hop_time(rr, rank % k, n); }, adds, k);
  out.seconds = r.seconds;
  out.messages = r.messages;
  out.closed_form = true;
  out.platform_machines = FOLDED_MACHINES;
  out.wall_seconds = std::chrono::duration<double>(clock::now() - t0).count();
  return std::optional<AllreduceResult>{out};
}

} // namespace

Result<AllreduceResult> run_allreduce(const models::ClusterProfile& cluster, const AllreduceJob& job)
{
  using clock = std::chrono::steady_clock;
  const auto w0 = clock::now();
  if (job.warmup < 0) return Error::at("", "warmup", "0 or more allreduces", std::to_string(job.warmup));
  if (job.mode != FabricMode::PROTOCOL) TP_TRY(check_fabric_options(job.options));
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
  if (auto st = check_budget(estimate_allreduce(cluster, job), job.mode == FabricMode::ANALYTICAL
                                                                   ? "use fewer ranks"
                                                                   : "use fewer ranks or the analytical mode");
      !st.ok())
    return st.error();
  if (job.mode == FabricMode::ANALYTICAL && job.fold_alike_hosts && analytical_foldable(cluster, job)) {
    // In a child process: SimGrid allows one platform per process, and this one may have to build every host after.
    auto folded = run_isolated([&]() -> Result<std::string> {
      auto r = folded_analytical(cluster, job, w0);
      if (!r.ok()) return r.error();
      return r.value() ? to_text(*r.value()) : std::string();
    });
    if (!folded.ok()) return folded.error();
    if (!folded.value().empty()) return allreduce_result_from_text(folded.value());
    // Routes share a link: every host, message by message (a ring of one segment size folded onto two hosts' ranks
    // where their routes repeat), under its own estimate.
    AllreduceJob every = job;
    every.fold_alike_hosts = false;
    if (auto st = check_budget(estimate_allreduce(cluster, every),
                               "use fewer ranks (their routes share links: the ring runs message by message on every "
                               "host's platform, on every rank unless its segments have one size and it folds onto two "
                               "hosts' ranks)");
        !st.ok())
      return st.error();
  }
  auto simr = Simulation::create(cluster);
  if (!simr.ok()) return simr.error();
  Simulation& sim = *simr.value();
  const Platform& pf = sim.platform();
  std::vector<Endpoint> ep;
  for (int r = 0; r < job.ranks; ++r)
    ep.push_back(endpoint_of(cluster, job, r));
  const DataPath dp = mpi_data_path(job.options);
  RingPaths paths = ring_paths(pf, ep, dp);
  const collectives::RingScheduleOptions adds =
      job.local_work ? ring_adds(cluster.host(ep[0].machine), ep[0].loc) : collectives::RingScheduleOptions{};

  AllreduceResult out;
  out.platform_machines = int(cluster.host_count());
  if (job.ranks > 1) alpha_beta_of(paths, job.bytes / job.ranks, out);

  // Time the schedule on a fabric (the set-up until now is reported apart).
  auto schedule_on = [&](collectives::MessageFabric& f) {
    out.setup_wall_seconds = std::chrono::duration<double>(clock::now() - w0).count();
    const auto t0 = clock::now();
    CountingFabric counted(f, 2.0 * job.ranks * (job.ranks - 1));
    auto r = collectives::run_ring_allreduce(counted, job.ranks, job.bytes, adds);
    out.seconds = r.seconds;
    out.messages = r.messages;
    out.simulated_messages = r.messages;
    out.wall_seconds = std::chrono::duration<double>(clock::now() - t0).count();
    return out;
  };
  if (job.mode == FabricMode::FLOW) {
    FlowFabric f(sim, std::move(paths));
    return schedule_on(f);
  }
  if (job.mode == FabricMode::ANALYTICAL) {
    // Read the ring's routes from the platform once; then no SimGrid at all.
    std::vector<RankEndpoint> eps;
    for (const auto& e : ep)
      eps.push_back({e.machine, e.loc});
    RingRoutes rr = ring_routes(pf, eps, dp);
    // Where routes share links, a ring of one segment size folded onto the first hosts' ranks (not with
    // --every-host, the check of folding).
    const std::optional<RingPeriod> period = job.fold_rings ? ring_period(pf, eps, dp) : std::nullopt;
    out.setup_wall_seconds = std::chrono::duration<double>(clock::now() - w0).count();
    const auto t0 = clock::now();
    const auto r = analytical_ring(rr, job.bytes, adds, &out.closed_form, 0, period ? &*period : nullptr);
    out.seconds = r.seconds;
    out.messages = r.messages;
    out.contention_bound = r.contention_bound;
    out.folded_ranks = r.folded_ranks;
    out.simulated_messages = out.closed_form || r.contention_bound > 0 ? 0 : r.simulated_messages;
    out.wall_seconds = std::chrono::duration<double>(clock::now() - t0).count();
    return out;
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
    ts.collective_library_only = true; // the ring's messages are a collective library's, not TF's rendezvous
    complete_task_spec(ts, host);
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
  // The warm-up allreduces register their buffers and grow the staging pools (first use, as a training run's
  // first step); the last one is timed: the steady state the fabric modes model.
  const int64_t elems = int64_t(job.bytes / 4);
  double t0 = 0;
  auto t0w = clock::now();
  for (int it = 0; it <= job.warmup; ++it) {
    if (it == job.warmup) {
      out.setup_wall_seconds = std::chrono::duration<double>(clock::now() - w0).count();
      t0w = clock::now();
    }
    t0 = sim.now();
    int done = 0;
    for (int r = 0; r < job.ranks; ++r) {
      auto t = tasks[size_t(r)]->make_tensor(DataType::FLOAT, TensorShape{{elems}}, ep[size_t(r)].loc,
                                             AllocatorAttributes{false, false, true});
      if (!t.ok()) return t.error();
      collectives::ring_allreduce(*channels[size_t(r)], 1 + it, "allreduce", t.value(), [&](Result<Tensor> x) {
        if (!x.ok() && !failure) failure = x.error();
        ++done;
      });
    }
    sim.run();
    if (failure) return *failure;
    if (done != job.ranks)
      return Error::msg("ring allreduce: " + std::to_string(job.ranks - done) + " ranks never finished");
  }
  out.seconds = sim.now() - t0;
  out.messages = uint64_t(2 * (job.ranks - 1)) * uint64_t(job.ranks);
  out.wall_seconds = std::chrono::duration<double>(clock::now() - t0w).count();
  return out;
}

} // namespace tp::sim
