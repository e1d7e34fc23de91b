// The emulator: a real event loop on real bytes, and every transport moving real bytes between emulated processes
// with the same source files the simulator runs. The software device's own semantics: the device contract suite
// (tests/device/soft_threads_contract_test.cpp, tests/device/soft_processes_contract_test.cpp).
#include "core/rendezvous/rendezvous_key.hpp"
#include "core/transports/task_runtime.hpp"
#include "core/transports/transport.hpp"
#include "emulator/emulation.hpp"
#include "emulator/transfer_job.hpp"
#include "models/cpu_model.hpp"

#include "tests/test_time.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdio>
#include <cstring>

using namespace tp;
using namespace tp::emu;

namespace {

const double kTimeout = tp::test::wall_seconds(10.0);

} // namespace

TEST_CASE("emulator loop runs timers in time order and work on real bytes", "[emulator]")
{
  Emulation emu;
  auto& p = emu.add_process("p");
  std::mutex mu;
  std::vector<int> order;
  std::atomic<bool> copied{false};
  auto src = p.memory->allocate(1 << 20, AllocAttr::at(Location::host(0))).value();
  auto dst = p.memory->allocate(1 << 20, AllocAttr::at(Location::gpu(1))).value();
  std::memset(src.data, 0x5a, src.size);
  emu.on(p, [&] {
    p.runtime->after(0.02, [&] {
      std::lock_guard<std::mutex> l(mu);
      order.push_back(2);
    });
    p.runtime->after(0.01, [&] {
      std::lock_guard<std::mutex> l(mu);
      order.push_back(1);
    });
    p.runtime->execute(Work::memcpy(dst, src, src.size), [&](Status st) { copied = st.ok(); });
  });
  REQUIRE(Emulation::wait_until(
      [&] {
        std::lock_guard<std::mutex> l(mu);
        return order.size() == 2 && copied;
      },
      kTimeout));
  CHECK(order == std::vector<int>{1, 2});
  CHECK(std::memcmp(dst.data, src.data, src.size) == 0);
}

namespace {

void check_transport(const std::string& transport, Location src, Location dst)
{
  transports::register_builtin_transports();
  Emulation emu;
  auto& wp = emu.add_process("worker");
  auto& pp = emu.add_process("ps");
  const std::string W = "/job:worker/replica:0/task:0", P = "/job:ps/replica:0/task:0";
  transports::ClusterSpec cluster{{W, "worker"}, {P, "ps"}};
  std::unique_ptr<transports::TaskRuntime> worker, ps;
  std::atomic<int> started{0};
  auto make = [&](EmuProcess& p, const std::string& task, std::unique_ptr<transports::TaskRuntime>& out) {
    emu.on(p, [&] {
      transports::TaskSpec spec;
      spec.task = task;
      spec.transport = transport;
      spec.memory.gpudirect_gpus = {0};
      spec.library_call_seconds = models::CpuProfile{}.mpi_call_overhead;
      auto t = transports::TaskRuntime::create(spec, p.name, *p.runtime, p.device.get(), *p.streams, cluster);
      if (!t.ok()) return;
      out = std::move(t.value());
      out->transport().start([&](Status st) {
        if (st.ok()) ++started;
      });
    });
  };
  make(wp, W, worker);
  make(pp, P, ps);
  REQUIRE(Emulation::wait_until([&] { return started == 2; }, kTimeout));
  auto dev = [](Location l) { return l.is_gpu() ? "GPU:" + std::to_string(l.index) : std::string("CPU:0"); };
  std::atomic<int> received{0}, good{0};
  for (int64_t n : {int64_t(3), int64_t(250000)}) {
    const std::string key =
        rendezvous::create_key(P + "/device:" + dev(src), 1, W + "/device:" + dev(dst), "t" + std::to_string(n));
    auto parsed = rendezvous::parse_key(key).value();
    std::vector<uint8_t> pattern(size_t(n) * 4);
    for (size_t i = 0; i < pattern.size(); ++i)
      pattern[i] = uint8_t(i * 131 + n);
    emu.on(wp, [&, parsed, pattern] {
      rendezvous::RecvArgs args;
      args.dst_location = dst;
      args.alloc_attrs.nic_compatible = true;
      worker->rendezvous().recv_async(1, parsed, args, [&, pattern](Result<rendezvous::RecvOutcome> r) {
        if (r.ok() && r->tensor.buffer() && r->tensor.total_bytes() == pattern.size() &&
            std::memcmp(r->tensor.buffer()->data, pattern.data(), pattern.size()) == 0)
          ++good;
        else if (!r.ok())
          std::fprintf(stderr, "recv failed: %s\n", r.error().message().c_str());
        else if (!r->tensor.buffer() || r->tensor.total_bytes() != pattern.size())
          std::fprintf(stderr, "recv size %llu expected %zu\n", (unsigned long long)r->tensor.total_bytes(),
                       pattern.size());
        else {
          size_t i = 0;
          while (i < pattern.size() && r->tensor.buffer()->data[i] == pattern[i])
            ++i;
          const uint8_t* d = r->tensor.buffer()->data;
          std::fprintf(stderr, "recv bytes differ from offset %zu of %zu: got %u %u %u %u want %u %u %u %u loc %s\n", i,
                       pattern.size(), d[0], d[1], d[2], d[3], pattern[0], pattern[1], pattern[2], pattern[3],
                       r->tensor.location().to_string().c_str());
        }
        ++received; // last: the test thread reads `good` once this reaches 2
      });
    });
    bool sent = false;
    emu.on(pp, [&, parsed, pattern, n] {
      auto t = ps->make_tensor(DataType::FLOAT, TensorShape{{n}}, src, AllocatorAttributes{false, false, true});
      if (!t.ok()) return;
      std::memcpy(t->buffer()->data, pattern.data(), pattern.size());
      sent = ps->rendezvous().send(1, parsed, t.value(), false).ok();
    });
    REQUIRE(sent);
  }
  REQUIRE(Emulation::wait_until([&] { return received == 2; }, kTimeout));
  CHECK(good == 2);
  emu.on(wp, [&] { worker->transport().shutdown(); });
  emu.on(pp, [&] { ps->transport().shutdown(); });
  // Drop the tasks on their own loops (their destructors touch loop-owned state).
  emu.on(wp, [&] { worker.reset(); });
  emu.on(pp, [&] { ps.reset(); });
}

} // namespace

#define EMU_TRANSPORT_CASE(T)                                                                                          \
  TEST_CASE(T ": tensors cross emulated processes with their bytes intact", "[emulator]")                              \
  {                                                                                                                    \
    check_transport(T, Location::host(0), Location::host(0));                                                          \
  }                                                                                                                    \
  TEST_CASE(T ": GPU-placed tensors cross emulated processes", "[emulator]")                                           \
  {                                                                                                                    \
    check_transport(T, Location::gpu(1), Location::gpu(0));                                                            \
  }

EMU_TRANSPORT_CASE("grpc")
EMU_TRANSPORT_CASE("verbs_v1")
EMU_TRANSPORT_CASE("verbs_v2")
EMU_TRANSPORT_CASE("gdr")
EMU_TRANSPORT_CASE("mpi")
EMU_TRANSPORT_CASE("ar_grpc")

TEST_CASE("emulated transfer job checks every byte on every transport", "[emulator]")
{
  for (const std::string t : {"grpc", "verbs_v2", "mpi"}) {
    emu::EmuTransferJob j;
    j.transport = t;
    j.sizes = {4096, 1 << 20};
    j.steps = 2;
    j.src = Location::gpu(1);
    auto r = emu::run_emulated_transfer(j);
    INFO(t);
    REQUIRE(r.ok());
    REQUIRE(r->points.size() == 2);
    for (const auto& p : r->points) {
      CHECK(p.bytes_ok);
      CHECK(p.steady_latency > 0);
    }
    size_t consumer = 0;
    for (const auto& rec : r->records.records())
      consumer += rec.side == transports::Side::CONSUMER;
    CHECK(consumer == 4);
  }
}

namespace {

/// The consumer waits for a tensor the producer will never send; then the producer process dies (its transport,
/// connections, QPs and loop go away). The consumer must get an error within 5 s, not hang.
bool consumer_fails_when_producer_dies(const std::string& transport, std::string& error)
{
  transports::register_builtin_transports();
  Emulation emu;
  auto& wp = emu.add_process("worker");
  auto& pp = emu.add_process("ps");
  const std::string W = "/job:worker/replica:0/task:0", P = "/job:ps/replica:0/task:0";
  transports::ClusterSpec cluster{{W, "worker"}, {P, "ps"}};
  std::unique_ptr<transports::TaskRuntime> worker, ps;
  std::atomic<int> started{0};
  for (auto* p : {&wp, &pp})
    emu.on(*p, [&, p] {
      transports::TaskSpec spec;
      spec.task = p == &wp ? W : P;
      spec.transport = transport;
      spec.library_call_seconds = models::CpuProfile{}.mpi_call_overhead;
      auto t = transports::TaskRuntime::create(spec, p->name, *p->runtime, p->device.get(), *p->streams, cluster);
      if (!t.ok()) return;
      (p == &wp ? worker : ps) = std::move(t.value());
      (p == &wp ? worker : ps)->transport().start([&](Status st) { started += st.ok(); });
    });
  if (!Emulation::wait_until([&] { return started == 2; }, kTimeout)) return false;
  // A first tensor crosses (channels up), then the consumer asks for one that never comes.
  std::atomic<int> phase{0};
  std::string err;
  std::mutex mu;
  auto key = [&](const std::string& n) {
    return rendezvous::parse_key(rendezvous::create_key(P + "/device:CPU:0", 1, W + "/device:CPU:0", n)).value();
  };
  emu.on(wp, [&] {
    worker->rendezvous().recv_async(1, key("first"), {}, [&](Result<rendezvous::RecvOutcome>) { phase = 1; });
  });
  emu.on(pp, [&] {
    auto t = ps->make_tensor(DataType::FLOAT, TensorShape{{1024}}, Location::host(0), {false, false, true});
    if (t.ok()) (void)ps->rendezvous().send(1, key("first"), t.value(), false);
  });
  if (!Emulation::wait_until([&] { return phase == 1; }, kTimeout)) return false;
  emu.on(wp, [&] {
    worker->rendezvous().recv_async(1, key("never"), {}, [&](Result<rendezvous::RecvOutcome> r) {
      std::lock_guard<std::mutex> l(mu);
      err = r.ok() ? "no error" : r.error().message();
      phase = 2;
    });
  });
  Emulation::wait_until([&] { return false; }, 0.05); // the request is on its way
  const auto t0 = std::chrono::steady_clock::now();
  emu.on(pp, [&] { ps.reset(); }); // the producer's transport, connections and QPs go away
  pp.runtime->stop();
  pp.device.reset();
  const bool failed = Emulation::wait_until([&] { return phase == 2; }, tp::test::wall_seconds(5.0));
  {
    std::lock_guard<std::mutex> l(mu);
    error = err;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  emu.on(wp, [&] { worker.reset(); });
  return failed && secs <= tp::test::wall_seconds(5.0) && error != "no error";
}

} // namespace

#define PEER_DIES_CASE(T)                                                                                              \
  TEST_CASE(T ": a producer dying mid-transfer fails the receive within 5 s", "[emulator]")                            \
  {                                                                                                                    \
    std::string error;                                                                                                 \
    CHECK(consumer_fails_when_producer_dies(T, error));                                                                \
    INFO(error);                                                                                                       \
    CHECK_FALSE(error.empty());                                                                                        \
  }

PEER_DIES_CASE("grpc")
PEER_DIES_CASE("verbs_v1")
PEER_DIES_CASE("verbs_v2")
PEER_DIES_CASE("gdr")
PEER_DIES_CASE("mpi")
PEER_DIES_CASE("ar_grpc")
