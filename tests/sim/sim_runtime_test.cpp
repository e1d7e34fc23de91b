// Simulated runtime: executor ordering, timers, work-item timing and real effects in materialized mode.
#include "sim/simulation.hpp"
#include "test_cluster.hpp"

#include <cstring>

using namespace tp;

TEST_CASE("Posted tasks run in order, timers fire at their time, cancelled timers do not", "[quick]")
{
  auto s = sim::Simulation::create(test::test_cluster(1)).value();
  Runtime& rt = s->add_process("node0").value()->runtime();
  std::vector<std::string> log;
  rt.after(2e-6, [&] { log.push_back("t2 at " + std::to_string(int(rt.now() * 1e6 + 0.5))); });
  rt.after(1e-6, [&] { log.push_back("t1 at " + std::to_string(int(rt.now() * 1e6 + 0.5))); });
  TimerId gone = rt.after(1.5e-6, [&] { log.push_back("cancelled"); });
  rt.post([&] { log.push_back("p1"); });
  rt.post([&] { log.push_back("p2"); });
  CHECK(rt.cancel(gone));
  CHECK_FALSE(rt.cancel(gone));
  s->run();
  CHECK(log == std::vector<std::string>{"p1", "p2", "t1 at 1", "t2 at 2"});
}

TEST_CASE("Host memcpy, registration and kernels take the model's time", "[quick]")
{
  auto s = sim::Simulation::create(test::test_cluster(1)).value();
  auto* p = s->add_process("node0").value();
  Runtime& rt = p->runtime();
  const auto h = test::test_host();
  auto src = p->memory().allocate(8 << 20, AllocAttr::at(Location::host(0))).value();
  auto dst = p->memory().allocate(8 << 20, AllocAttr::at(Location::host(0))).value();
  double t_copy = -1, t_reg = -1, t_kernel = -1;
  rt.execute(Work::memcpy(dst, src, 8 << 20), [&](Status st) {
    REQUIRE(st.ok());
    t_copy = rt.now();
    rt.execute(Work::registration(src), [&](Status s2) {
      REQUIRE(s2.ok());
      t_reg = rt.now() - t_copy;
      rt.execute(Work::gpu_kernel(1, 3e-3), [&](Status s3) {
        REQUIRE(s3.ok());
        t_kernel = rt.now() - t_copy - t_reg;
      });
    });
  });
  s->run();
  CHECK(t_copy == Approx(h.sockets[0].cpu.memcpy_time(8 << 20)).epsilon(1e-6));
  CHECK(t_reg == Approx(h.registration.register_time(8 << 20)).epsilon(1e-6));
  CHECK(t_kernel == Approx(3e-3).epsilon(1e-6));
}

TEST_CASE("Work on a location the host does not have is an error, not a crash", "[quick]")
{
  auto s = sim::Simulation::create(test::test_cluster(1)).value();
  Runtime& rt = s->add_process("node0").value()->runtime();
  std::string msg;
  rt.execute(Work::gpu_kernel(7, 1e-3), [&](Status st) { msg = st.ok() ? "ok" : st.error().message(); });
  s->run();
  CHECK(msg.find("gpu:7") != std::string::npos);
}

TEST_CASE("Materialized memcpy and reduce change the bytes", "[quick]")
{
  sim::SimOptions o;
  o.materialize = true;
  auto s = sim::Simulation::create(test::test_cluster(1), o).value();
  auto* p = s->add_process("node0").value();
  Runtime& rt = p->runtime();
  auto a = p->memory().allocate(16, AllocAttr::at(Location::host(0))).value();
  auto g = p->memory().allocate(16, AllocAttr::at(Location::gpu(1))).value();
  auto b = p->memory().allocate(16, AllocAttr::at(Location::host(1))).value();
  float va[4] = {1, 2, 3, 4};
  std::memcpy(a.data, va, 16);
  rt.execute(Work::memcpy(g, a, 16), [&](Status st) {
    REQUIRE(st.ok());
    rt.execute(Work::memcpy(b, g, 16), [&](Status s2) {
      REQUIRE(s2.ok());
      rt.execute(Work::reduce(b, a, 16), [&](Status s3) { REQUIRE(s3.ok()); });
    });
  });
  s->run();
  float out[4];
  std::memcpy(out, b.data, 16);
  CHECK(out[0] == 2);
  CHECK(out[3] == 8);
}
