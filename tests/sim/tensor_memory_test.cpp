// Memory strategies on a simulated process: what gets registered, when, what gets staged, and the BFC-like
// region growth of the pools.
#include "core/memory/region_pool.hpp"
#include "core/memory/tensor_memory.hpp"
#include "sim/sim_memory.hpp"
#include "test_cluster.hpp"

using namespace tp;
using memory::StrategyKind;

namespace {

struct Proc {
  std::unique_ptr<sim::Simulation> sim;
  sim::SimProcess* p = nullptr;
  std::unique_ptr<memory::TensorMemory> mem;
  explicit Proc(memory::StrategyOptions o)
  {
    sim = sim::Simulation::create(test::test_cluster(1)).value();
    p = sim->add_process("node0").value();
    mem = memory::make_tensor_memory(p->runtime(), &p->device(), o);
  }
  Tensor tensor(uint64_t floats, Location loc, AllocatorAttributes a = {})
  {
    auto t = mem->allocate(DataType::FLOAT, TensorShape{{int64_t(floats)}}, loc, a);
    REQUIRE(t.ok());
    return t.value();
  }
  memory::NicBuffer acquire(const Tensor& t)
  {
    std::optional<memory::NicBuffer> out;
    mem->acquire(*t.buffer(), verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_READ,
                 [&](Result<memory::NicBuffer> r) {
                   REQUIRE(r.ok());
                   out = r.value();
                 });
    sim->run();
    REQUIRE(out.has_value());
    return *out;
  }
};

} // namespace

TEST_CASE("Region pools grow from 2 MiB by doubling and reuse freed chunks", "[quick]")
{
  sim::SimMemory space("p", {{Location::host(0), 1e12}}, false);
  std::vector<size_t> created;
  memory::RegionPool pool(space, AllocAttr::at(Location::host(0)), 2 << 20,
                          [&](size_t i, const Buffer& b) { created.push_back(b.size); });
  auto a = pool.allocate(1 << 20).value();
  auto b = pool.allocate(1 << 20).value();
  CHECK(created == std::vector<size_t>{2u << 20});
  auto c = pool.allocate(100).value(); // needs a second region: twice the first
  CHECK(created == std::vector<size_t>{2u << 20, 4u << 20});
  auto big = pool.allocate(40u << 20).value(); // oversized: its own region, doubled until it fits
  CHECK(created.back() == 64u << 20);
  CHECK(pool.free(a));
  auto again = pool.allocate(1 << 20).value();
  CHECK(again.addr == a.addr); // the freed chunk is reused
  (void)b;
  (void)c;
  (void)big;
}

TEST_CASE("on_demand registers for every acquisition and deregisters at release", "[quick]")
{
  memory::StrategyOptions o;
  o.kind = StrategyKind::ON_DEMAND;
  Proc p(o);
  Tensor t = p.tensor(1 << 18, Location::host(0));
  auto v1 = p.acquire(t);
  CHECK_FALSE(v1.staged);
  p.mem->release(v1);
  auto v2 = p.acquire(t);
  p.mem->release(v2);
  p.sim->run();
  CHECK(p.mem->stats().registrations == 2);
  CHECK(p.mem->stats().deregistrations == 2);
  CHECK(p.mem->stats().registration_seconds > 0);
}

TEST_CASE("The registration cache never evicts an entry in use", "[quick]")
{
  memory::StrategyOptions o;
  o.kind = StrategyKind::ON_DEMAND_CACHED;
  o.cache_entries = 2;
  Proc p(o);
  std::vector<Tensor> ts;
  std::vector<memory::NicBuffer> views;
  for (int i = 0; i < 4; ++i) {
    ts.push_back(p.tensor(1 << 20, Location::host(0))); // 4 MiB apart: no sharing of registrations
    views.push_back(p.acquire(ts.back()));
  }
  CHECK(p.mem->stats().deregistrations == 0); // 4 entries in use, capacity 2
  for (auto& v : views)
    p.mem->release(v);
  p.sim->run();
  CHECK(p.mem->stats().deregistrations == 2); // back to capacity once released
  auto again = p.acquire(ts[3]);              // most recently used: still cached
  CHECK(p.mem->stats().cache_hits == 1);
  p.mem->release(again);
}

TEST_CASE("staging_copy always stages", "[quick]")
{
  memory::StrategyOptions s;
  s.kind = StrategyKind::STAGING_COPY;
  Proc ps(s);
  auto v = ps.acquire(ps.tensor(1000, Location::host(0)));
  CHECK(v.staged);
}

TEST_CASE("pool_visitor registers each region once", "[quick]") // one simulation per test case (per process)
{
  memory::StrategyOptions o;
  o.kind = StrategyKind::POOL_VISITOR;
  o.gpudirect_gpus = {0};
  Proc pp(o);
  Tensor a = pp.tensor(1000, Location::host(0));
  Tensor b = pp.tensor(2000, Location::host(0));
  auto va = pp.acquire(a);
  auto vb = pp.acquire(b);
  CHECK_FALSE(va.staged);
  CHECK(va.mr.lkey == vb.mr.lkey); // one region, one registration
  CHECK(pp.mem->stats().registrations == 1);
  CHECK_FALSE(pp.acquire(pp.tensor(1000, Location::gpu(0))).staged); // GPUDirect-capable GPU: registered pool
  CHECK(pp.acquire(pp.tensor(1000, Location::gpu(1))).staged);       // the other GPU: pinned host staging
}

TEST_CASE("graph_aware registers only NIC-compatible tensors", "[quick]")
{
  memory::StrategyOptions o;
  o.kind = StrategyKind::GRAPH_AWARE;
  Proc p(o);
  AllocatorAttributes nic;
  nic.nic_compatible = true;
  CHECK_FALSE(p.acquire(p.tensor(1000, Location::host(0), nic)).staged);
  CHECK(p.acquire(p.tensor(1000, Location::host(0))).staged); // a tensor that never crosses hosts
  CHECK(memory::parse_strategy("graph_aware").value() == StrategyKind::GRAPH_AWARE);
  CHECK_FALSE(memory::parse_strategy("magic").ok());
}
