// Collectives over the transports, with real bytes: ring allreduce sums (uneven and empty segments included),
// ring allgather after the sizing allgather, tree broadcast, and the engine: coordinator rounds with ranks
// asking in different orders, mismatched sizes, tensor fusion (and its batched copies), the uncoordinated (MaTEx) mode.
#include "core/collectives/engine.hpp"
#include "core/collectives/ring.hpp"
#include "core/common/isolated_run.hpp"
#include "core/transports/mpi/mpi.hpp"
#include "core/transports/task_runtime.hpp"
#include "core/transports/transport.hpp"
#include "sim/simulation.hpp"
#include "test_cluster.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>

using namespace tp;

namespace {

/// N ranks on N hosts, each a worker task with a transport, a channel and (optionally) an engine.
struct Ring {
  std::unique_ptr<sim::Simulation> sim;
  std::vector<std::unique_ptr<transports::TaskRuntime>> tasks;
  std::vector<std::unique_ptr<collectives::Channel>> channels;
  std::vector<std::unique_ptr<collectives::CollectiveEngine>> engines;
  std::vector<sim::SimProcess*> procs;
  Location loc;
  std::vector<Location> locs;

  Ring(int n, const std::string& transport, Location where = Location::host(0),
       std::optional<collectives::EngineOptions> engine = std::nullopt, int hosts = 0,
       std::vector<Location> per_rank = {}, transports::TransportOptions options = {})
      : loc(where)
  {
    transports::register_builtin_transports();
    sim::SimOptions so;
    so.materialize = true;
    if (hosts == 0) hosts = n;
    sim = sim::Simulation::create(test::test_cluster(std::max(hosts, 2)), so).value();
    if (per_rank.empty()) per_rank.assign(size_t(n), where);
    locs = per_rank;
    transports::ClusterSpec spec;
    std::vector<collectives::RankInfo> ranks;
    std::vector<std::string> names;
    for (int r = 0; r < n; ++r) {
      const std::string task = "/job:worker/replica:0/task:" + std::to_string(r);
      spec[task] = "rank" + std::to_string(r);
      const Location l = per_rank.empty() ? where : per_rank[size_t(r)];
      ranks.push_back({task, task + (l.is_gpu() ? "/device:GPU:" + std::to_string(l.index) : "/device:CPU:0")});
      names.push_back("rank" + std::to_string(r));
    }
    for (int r = 0; r < n; ++r) {
      auto* p = sim->add_process("node" + std::to_string(r % hosts), names[size_t(r)]).value();
      procs.push_back(p);
      transports::TaskSpec ts;
      ts.task = ranks[size_t(r)].task;
      ts.transport = transport;
      ts.memory.gpudirect_gpus = {0};
      ts.options = options;
      ts.collective_library_only = true;
      ts.library_call_seconds = test::test_host().sockets[0].cpu.mpi_call_overhead;
      auto t = transports::TaskRuntime::create(ts, p->name(), p->runtime(), &p->device(), p->streams(), spec);
      REQUIRE(t.ok());
      tasks.push_back(std::move(t.value()));
      channels.push_back(std::make_unique<collectives::Channel>(*tasks.back(), ranks, r));
      if (engine) {
        engines.push_back(
            std::make_unique<collectives::CollectiveEngine>(*tasks.back(), p->streams(), ranks, names, r, *engine));
        REQUIRE(engines.back()->start().ok());
      }
    }
    for (auto& t : tasks)
      t->transport().start([](Status st) { REQUIRE(st.ok()); });
    sim->run();
  }

  Tensor tensor(int r, int64_t n, float base)
  {
    auto t = tasks[size_t(r)]->make_tensor(DataType::FLOAT, TensorShape{{n}}, locs.empty() ? loc : locs[size_t(r)],
                                           {false, false, true});
    REQUIRE(t.ok());
    REQUIRE(t->buffer()->data);
    for (int64_t i = 0; i < n; ++i) {
      const float v = base + 0.25f * float(i % 97);
      std::memcpy(t->buffer()->data + 4 * i, &v, 4);
    }
    return t.value();
  }
};

float at(const Tensor& t, int64_t i)
{
  float v;
  std::memcpy(&v, t.buffer()->data + 4 * i, 4);
  return v;
}

void check_allreduce(const std::string& transport, int n, int64_t count, Location loc = Location::host(0))
{
  INFO(transport << " ranks " << n << " elements " << count);
  Ring ring(n, transport, loc);
  std::vector<Result<Tensor>> out(size_t(n), Error::msg("never finished"));
  for (int r = 0; r < n; ++r)
    collectives::ring_allreduce(*ring.channels[size_t(r)], 1, "g", ring.tensor(r, count, float(r + 1)),
                                [&out, r](Result<Tensor> t) { out[size_t(r)] = std::move(t); });
  ring.sim->run();
  const float ranks_sum = float(n * (n + 1) / 2);
  for (int r = 0; r < n; ++r) {
    REQUIRE(out[size_t(r)].ok());
    const Tensor& t = out[size_t(r)].value();
    REQUIRE(t.shape.num_elements() == count);
    REQUIRE(t.location() == loc);
    for (int64_t i = 0; i < count; ++i)
      REQUIRE(at(t, i) == Approx(ranks_sum + n * 0.25f * float(i % 97)));
  }
}

} // namespace

TEST_CASE("ring segments split the remainder over the first ranks", "[collectives]")
{
  CHECK(collectives::ring_segments(10, 4) == std::vector<int64_t>{0, 3, 6, 8, 10});
  CHECK(collectives::ring_segments(2, 4) == std::vector<int64_t>{0, 1, 2, 2, 2});
}

#define ALLREDUCE_CASE(T)                                                                                              \
  TEST_CASE(T ": ring allreduce sums every rank's tensor", "[collectives]")                                            \
  {                                                                                                                    \
    check_allreduce(T, 4, 1001);                                                                                       \
  }

ALLREDUCE_CASE("grpc")
ALLREDUCE_CASE("verbs_v1")
ALLREDUCE_CASE("verbs_v2")
ALLREDUCE_CASE("gdr")
ALLREDUCE_CASE("mpi")
ALLREDUCE_CASE("ar_grpc")

TEST_CASE("ring allreduce with fewer elements than ranks sends empty segments", "[collectives]")
{
  check_allreduce("verbs_v2", 5, 3);
}

TEST_CASE("ring allreduce of GPU tensors", "[collectives]")
{
  check_allreduce("gdr", 3, 4096, Location::gpu(0));
}

TEST_CASE("ring allgather concatenates uneven parts after the sizing allgather", "[collectives]")
{
  const int n = 3;
  Ring ring(n, "mpi");
  const std::vector<int64_t> mine = {5, 0, 12};
  std::vector<std::vector<int64_t>> sizes(n);
  for (int r = 0; r < n; ++r)
    collectives::allgather_sizes(*ring.channels[size_t(r)], 1, "sz", mine[size_t(r)],
                                 [&sizes, r](Result<std::vector<int64_t>> s) {
                                   REQUIRE(s.ok());
                                   sizes[size_t(r)] = s.value();
                                 });
  ring.sim->run();
  for (int r = 0; r < n; ++r)
    REQUIRE(sizes[size_t(r)] == mine);
  std::vector<Result<Tensor>> out(n, Error::msg("never finished"));
  for (int r = 0; r < n; ++r)
    collectives::ring_allgather(*ring.channels[size_t(r)], 1, "ag", ring.tensor(r, mine[size_t(r)], 100.0f * r),
                                sizes[size_t(r)], [&out, r](Result<Tensor> t) { out[size_t(r)] = std::move(t); });
  ring.sim->run();
  for (int r = 0; r < n; ++r) {
    REQUIRE(out[size_t(r)].ok());
    const Tensor& t = out[size_t(r)].value();
    REQUIRE(t.shape.num_elements() == 17);
    CHECK(at(t, 0) == 0.0f);
    CHECK(at(t, 4) == 1.0f);
    CHECK(at(t, 5) == 200.0f);
    CHECK(at(t, 16) == Approx(200.0f + 0.25f * 11));
  }
}

TEST_CASE("tree broadcast delivers the root's tensor to every rank", "[collectives]")
{
  const int n = 5;
  Ring ring(n, "verbs_v2");
  std::vector<Result<Tensor>> out(n, Error::msg("never finished"));
  for (int r = 0; r < n; ++r)
    collectives::tree_broadcast(*ring.channels[size_t(r)], 1, "b", ring.tensor(r, 300, r == 2 ? 7.0f : -1.0f), 2,
                                [&out, r](Result<Tensor> t) { out[size_t(r)] = std::move(t); });
  ring.sim->run();
  for (int r = 0; r < n; ++r) {
    REQUIRE(out[size_t(r)].ok());
    CHECK(at(out[size_t(r)].value(), 0) == 7.0f);
    CHECK(at(out[size_t(r)].value(), 299) == Approx(7.0f + 0.25f * (299 % 97)));
  }
}

TEST_CASE("coordinator runs allreduces that ranks request in different orders", "[collectives]")
{
  const int n = 3;
  collectives::EngineOptions eo;
  eo.tick_seconds = 1e-3;
  Ring ring(n, "grpc", Location::host(0), eo);
  for (auto& e : ring.engines)
    e->begin_step(1, 2);
  std::map<std::pair<int, std::string>, Result<Tensor>> out;
  auto ask = [&](int r, const std::string& name) {
    ring.engines[size_t(r)]->allreduce(1, name, ring.tensor(r, 64, name == "a" ? 1.0f : 10.0f),
                                       [&out, r, name](Result<Tensor> t) { out.emplace(std::make_pair(r, name), t); });
  };
  ask(0, "a");
  ask(0, "b");
  ask(1, "b");
  ask(1, "a");
  ask(2, "a");
  ring.procs[2]->runtime().after(5e-3, [&] { ask(2, "b"); }); // a few ticks later
  ring.sim->run();
  REQUIRE(out.size() == 6);
  for (const auto& [k, v] : out) {
    REQUIRE(v.ok());
    CHECK(at(v.value(), 0) == (k.second == "a" ? 3.0f : 30.0f));
  }
  CHECK(ring.engines[0]->stats().rounds >= 5);
  CHECK(ring.engines[0]->stats().collectives == 2);
  CHECK(ring.sim->now() > 5e-3);
}

TEST_CASE("coordinator answers mismatched sizes with an error on every rank", "[collectives]")
{
  const int n = 2;
  Ring ring(n, "grpc", Location::host(0), collectives::EngineOptions{});
  for (auto& e : ring.engines)
    e->begin_step(1, 1);
  std::vector<Result<Tensor>> out(n, Error::msg("never finished"));
  for (int r = 0; r < n; ++r)
    ring.engines[size_t(r)]->allreduce(1, "w", ring.tensor(r, 10 + r, 1.0f),
                                       [&out, r](Result<Tensor> t) { out[size_t(r)] = std::move(t); });
  ring.sim->run();
  for (int r = 0; r < n; ++r) {
    REQUIRE_FALSE(out[size_t(r)].ok());
    CHECK(out[size_t(r)].error().message().find("mismatched") != std::string::npos);
  }
}

TEST_CASE("tensor fusion packs small ready tensors into one allreduce", "[collectives]")
{
  const int n = 3;
  collectives::EngineOptions eo;
  eo.fusion_threshold = 1 << 20;
  Ring ring(n, "verbs_v2", Location::host(0), eo);
  for (auto& e : ring.engines)
    e->begin_step(1, 3);
  std::map<std::pair<int, int>, Result<Tensor>> out;
  for (int r = 0; r < n; ++r)
    for (int k = 0; k < 3; ++k)
      ring.engines[size_t(r)]->allreduce(1, "t" + std::to_string(k), ring.tensor(r, 100 + k, float(k)),
                                         [&out, r, k](Result<Tensor> t) { out.emplace(std::make_pair(r, k), t); });
  ring.sim->run();
  REQUIRE(out.size() == 9);
  for (const auto& [rk, v] : out) {
    REQUIRE(v.ok());
    CHECK(v->shape.num_elements() == 100 + rk.second);
    CHECK(at(v.value(), 0) == float(3 * rk.second));
    CHECK(at(v.value(), 99) == Approx(3 * (rk.second + 0.25f * 2)));
  }
  CHECK(ring.engines[1]->stats().collectives == 1);
  CHECK(ring.engines[1]->stats().fused_tensors == 3);
}

TEST_CASE("without a coordinator allreduces run in request order", "[collectives]")
{
  const int n = 3;
  collectives::EngineOptions eo;
  eo.coordinator = false;
  Ring ring(n, "mpi", Location::host(0), eo);
  std::map<std::pair<int, int>, Result<Tensor>> out;
  for (int r = 0; r < n; ++r)
    for (int k = 0; k < 2; ++k)
      ring.engines[size_t(r)]->allreduce(1, "t" + std::to_string(k), ring.tensor(r, 50, float(k + 1)),
                                         [&out, r, k](Result<Tensor> t) { out.emplace(std::make_pair(r, k), t); });
  ring.sim->run();
  REQUIRE(out.size() == 6);
  for (const auto& [rk, v] : out) {
    REQUIRE(v.ok());
    CHECK(at(v.value(), 0) == float(3 * (rk.second + 1)));
  }
  CHECK(ring.engines[0]->stats().rounds == 0);
}

TEST_CASE("MPI ranks on one machine copy GPU to GPU without the NIC", "[collectives]")
{
  // Two ranks on node0 (GPU 0 and GPU 1): CUDA-aware MPI moves the rendezvous payload by a peer copy, not by
  // RDMA through the NIC, whose peer reads of GPU memory are capped at 4 GB/s in the test host. The GPUs sit on
  // different sockets: the copy is staged through host memory by the driver. MPI_OPTIMAL_PATH: no TF-level copies.
  const int64_t count = 16 << 20; // 64 MiB
  transports::TransportOptions o;
  o.own<transports::MpiOptions>().optimal_path = true;
  Ring ring(2, "mpi", Location::gpu(0), std::nullopt, 1, {Location::gpu(0), Location::gpu(1)}, o);
  std::vector<Result<Tensor>> out(2, Error::msg("never finished"));
  const double t0 = ring.sim->now();
  for (int r = 0; r < 2; ++r)
    collectives::ring_allreduce(*ring.channels[size_t(r)], 1, "g", ring.tensor(r, count, float(r + 1)),
                                [&out, r](Result<Tensor> t) { out[size_t(r)] = std::move(t); });
  ring.sim->run();
  const double elapsed = ring.sim->now() - t0;
  for (int r = 0; r < 2; ++r) {
    REQUIRE(out[size_t(r)].ok());
    CHECK(at(out[size_t(r)].value(), 5) == Approx(3 + 2 * 0.25f * 5));
    CHECK(at(out[size_t(r)].value(), count - 1) == Approx(3 + 2 * 0.25f * float((count - 1) % 97)));
  }
  // Two 32 MiB halves each way; through the NIC they could not go faster than 4 GB/s.
  CHECK(elapsed < 2 * (32 << 20) / 4e9);
}

namespace {

/// Seconds from the first request to the last output of one fused round of `count` GPU tensors on 3 ranks, with
/// `batched` tensors per copy kernel (0: one copy each); and whether every rank's outputs came back in order.
std::pair<double, bool> fused_round_seconds(int count, uint32_t batched)
{
  auto r = run_isolated([&]() -> Result<std::string> {
    const int n = 3;
    collectives::EngineOptions eo;
    eo.fusion_threshold = 64 << 20;
    eo.batched_copies = batched;
    Ring ring(n, "mpi", Location::gpu(0), eo);
    for (auto& e : ring.engines)
      e->begin_step(1, size_t(count));
    const double t0 = ring.sim->now();
    double last = 0;
    bool in_order = true;
    std::vector<int> done(n, 0);
    for (int r = 0; r < n; ++r)
      for (int k = 0; k < count; ++k)
        ring.engines[size_t(r)]->allreduce(1, "t" + std::to_string(k), ring.tensor(r, 4096, float(k)),
                                           [&, r, k](Result<Tensor> t) {
                                             if (!t.ok() || done[size_t(r)]++ != k) in_order = false;
                                             last = ring.sim->now();
                                           });
    ring.sim->run();
    for (int d : done)
      if (d != count) return Error::msg("a round did not finish");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g %d", last - t0, in_order ? 1 : 0);
    return std::string(buf);
  });
  REQUIRE(r.ok());
  double s = 0;
  int ordered = 0;
  REQUIRE(std::sscanf(r->c_str(), "%lf %d", &s, &ordered) == 2);
  return {s, ordered == 1};
}

} // namespace

TEST_CASE("a GPU fusion round pays one copy kernel launch per batch in and out (Horovod's batched D2D copies)",
          "[collectives]")
{
  // The copies in and out of the fusion buffer run one after the other on one stream; with batching, only the first
  // of each batch launches a kernel. Nothing else runs on the GPUs, so the rounds differ by exactly the launches.
  const double launch = test::test_host().gpus[0].gpu.kernel_launch_overhead;
  REQUIRE(launch > 0);
  const auto one_each = fused_round_seconds(8, 0);
  const auto all_in_one = fused_round_seconds(8, 160);
  const auto by_three = fused_round_seconds(8, 3); // batches of 3, 3 and 2
  CHECK(one_each.second);
  CHECK(all_in_one.second);
  CHECK(by_three.second);
  CHECK(one_each.first - all_in_one.first == Approx(2 * 7 * launch).epsilon(1e-6));
  CHECK(one_each.first - by_three.first == Approx(2 * 5 * launch).epsilon(1e-6));
}
