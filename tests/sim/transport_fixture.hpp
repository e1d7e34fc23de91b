// Two TensorFlow tasks (a worker and a parameter server) on two simulated machines, wired with a transport
// and a memory strategy, plus helpers to make patterned tensors and compare what arrives.
#pragma once

#include "core/rendezvous/rendezvous_key.hpp"
#include "core/transports/task_runtime.hpp"
#include "sim/simulation.hpp"
#include "test_cluster.hpp"

#include <cstring>

namespace tp::test {

inline const char* const WORKER = "/job:worker/replica:0/task:0";
inline const char* const PS = "/job:ps/replica:0/task:0";

struct TransportFixture {
  std::unique_ptr<sim::Simulation> sim;
  sim::SimProcess* wp = nullptr;
  sim::SimProcess* pp = nullptr;
  std::unique_ptr<transports::TaskRuntime> worker, ps;
  transports::ClusterSpec cluster{{WORKER, "worker"}, {PS, "ps"}};
  int started = 0;

  explicit TransportFixture(const std::string& transport,
                            memory::StrategyKind strategy = memory::StrategyKind::POOL_VISITOR,
                            transports::TransportOptions options = {}, bool materialize = true,
                            models::ClusterProfile cl = test_cluster(2))
  {
    sim::SimOptions so;
    so.materialize = materialize;
    sim = sim::Simulation::create(cl, so).value();
    wp = sim->add_process("node0", "worker").value();
    pp = sim->add_process("node1", "ps").value();
    auto mk = [&](const char* task, sim::SimProcess* p) {
      transports::TaskSpec spec;
      spec.task = task;
      spec.transport = transport;
      spec.memory.kind = strategy;
      spec.memory.gpudirect_gpus = {0}; // GPU0 shares socket 0 with the NIC in the test host
      spec.options = options;
      spec.library_call_seconds = cl.host(0).sockets[0].cpu.mpi_call_overhead; // socket 0's CPU, as the drivers do
      auto t = transports::TaskRuntime::create(spec, p->name(), p->runtime(), &p->device(), p->streams(), cluster);
      REQUIRE(t.ok());
      return std::move(t.value());
    };
    worker = mk(WORKER, wp);
    ps = mk(PS, pp);
    worker->transport().start([this](Status st) {
      REQUIRE(st.ok());
      ++started;
    });
    ps->transport().start([this](Status st) {
      REQUIRE(st.ok());
      ++started;
    });
  }

  static std::string key(const std::string& edge, const std::string& src_task = WORKER,
                         const std::string& src_dev = "CPU:0", const std::string& dst_task = PS,
                         const std::string& dst_dev = "CPU:0", uint64_t inc = 1)
  {
    return rendezvous::create_key(src_task + "/device:" + src_dev, inc, dst_task + "/device:" + dst_dev, edge);
  }

  /// A float tensor of n elements in `task` at `loc`, filled with a pattern derived from `seed`.
  static Tensor make(transports::TaskRuntime& task, int64_t n, Location loc, uint32_t seed,
                     AllocatorAttributes attrs = {true, false, true})
  {
    auto t = task.make_tensor(DataType::FLOAT, TensorShape{{n}}, loc, attrs);
    REQUIRE(t.ok());
    Tensor x = t.value();
    if (x.buffer()->data)
      for (int64_t i = 0; i < n; ++i) {
        float v = float(seed * 1000003u + uint32_t(i) * 7u);
        std::memcpy(x.buffer()->data + 4 * i, &v, 4);
      }
    return x;
  }

  static bool same_bytes(const Tensor& a, const Tensor& b)
  {
    if (!a.buffer() || !b.buffer() || a.total_bytes() != b.total_bytes()) return false;
    if (!a.buffer()->data || !b.buffer()->data) return false;
    return std::memcmp(a.buffer()->data, b.buffer()->data, a.total_bytes()) == 0;
  }
};

} // namespace tp::test
