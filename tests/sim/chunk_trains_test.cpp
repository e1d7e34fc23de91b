// Chunk trains (MessengerOptions::read_train; AR-gRPC's default in the simulator, `--ar-chunk-by-chunk` turns them off;
// docs/model.md "Chunk trains"): several rendezvous chunks read by one RDMA READ and acknowledged by one FIN. The bytes
// that land are the bytes sent, every sender learns its payload was read, and the times agree with the chunk-by-chunk
// protocol within the bound the docs state, on transfers alone, many at once, and a parameter-server training step,
// with fewer simulated activities.
#include "core/transports/ar_grpc/ar_grpc.hpp"
#include "number_in_child.hpp"
#include "sim/training_job.hpp"
#include "transport_fixture.hpp"

using namespace tp;
using rendezvous::RecvOutcome;
using tp::test::PS;
using tp::test::TransportFixture;
using tp::test::WORKER;

namespace {

transports::TransportOptions with_trains(bool on)
{
  transports::TransportOptions o;
  o.own<transports::ArGrpcOptions>().chunk_trains = on;
  return o;
}

struct Arrival {
  Result<RecvOutcome> got = Error::msg("not received");
  double at = -1;
};

std::shared_ptr<Arrival> send_recv(TransportFixture& f, int64_t step, const std::string& edge, const Tensor& t,
                                   Location dst = Location::host(0), const std::string& dst_dev = "CPU:0")
{
  auto a = std::make_shared<Arrival>();
  auto k = rendezvous::parse_key(TransportFixture::key(edge, WORKER, "CPU:0", PS, dst_dev)).value();
  REQUIRE(f.worker->rendezvous().send(step, k, t, false).ok());
  rendezvous::RecvArgs args;
  args.dst_location = dst;
  args.alloc_attrs.nic_compatible = true;
  f.ps->rendezvous().recv_async(step, k, args, [&f, a](Result<RecvOutcome> r) {
    a->got = std::move(r);
    a->at = f.pp->runtime().now();
  });
  return a;
}

/// Float counts of the payloads: under one chunk, around multiples of a train (4 chunks of AR-gRPC's smallest tuned
/// chunk, 64 KiB), a partial last train, and 64 MiB.
const std::vector<int64_t> SIZES = {20000, 65536, 65537, 70000, 300000, 1250000, 16 << 20};

/// In a child process (one simulation per process): every payload alone (its own step, its time from the Recv to its
/// arrival), then all of them and their copies at once (arrival times), then the SimGrid activities of the whole run.
/// Fails if a byte differs or a producer never learns its payload was read (its FINs counted short).
std::vector<double> transfer_times(bool trains)
{
  const std::vector<double> v = test::numbers_in_child([trains]() -> Result<std::vector<double>> {
    TransportFixture f("ar_grpc", memory::StrategyKind::POOL_VISITOR, with_trains(trains));
    std::vector<double> out;
    int64_t step = 1;
    for (int64_t n : SIZES) {
      Tensor t = TransportFixture::make(*f.worker, n, Location::host(0), uint32_t(n));
      const double t0 = f.sim->now();
      auto a = send_recv(f, step++, "alone", t);
      f.sim->run();
      if (!a->got.ok()) return a->got.error();
      if (!TransportFixture::same_bytes(t, a->got->tensor))
        return Error::msg("bytes differ alone, " + std::to_string(n));
      out.push_back(a->at - t0);
    }
    std::vector<std::pair<Tensor, std::shared_ptr<Arrival>>> runs;
    const double t0 = f.sim->now();
    for (int copy = 0; copy < 2; ++copy)
      for (int64_t n : SIZES) {
        Tensor t = TransportFixture::make(*f.worker, n + copy, Location::host(0), uint32_t(n * 3 + copy));
        const bool gpu = copy == 1 && n == SIZES[4]; // one lands on a GPU (through a host tensor, as TF's gRPC does)
        runs.emplace_back(t, send_recv(f, step, "many" + std::to_string(copy) + "_" + std::to_string(n), t,
                                       gpu ? Location::gpu(0) : Location::host(0), gpu ? "GPU:0" : "CPU:0"));
      }
    f.sim->run();
    for (auto& [t, a] : runs) {
      if (!a->got.ok()) return a->got.error();
      if (!TransportFixture::same_bytes(t, a->got->tensor))
        return Error::msg("bytes differ at once, " + std::to_string(t.total_bytes()));
      out.push_back(a->at - t0);
    }
    // Every producer's record is logged when its sender learns the payload was read (the last FIN counted).
    size_t produced = 0;
    for (const auto& rec : f.worker->log().records())
      if (rec.side == transports::Side::PRODUCER) {
        if (!rec.ok) return Error::msg("a producer record failed: " + rec.error);
        ++produced;
      }
    if (produced != SIZES.size() * 3)
      return Error::msg(std::to_string(produced) + " producers told their payload was read, expected " +
                        std::to_string(SIZES.size() * 3));
    out.push_back(double(f.sim->stats().activities));
    return out;
  });
  REQUIRE(v.size() == SIZES.size() * 3 + 1);
  return v;
}

} // namespace

TEST_CASE("AR-gRPC chunk trains land every byte and agree with chunk-by-chunk reads", "[quick][transport]")
{
  transports::register_builtin_transports();
  const std::vector<double> exact = transfer_times(false);
  const std::vector<double> trains = transfer_times(true);
  const size_t n = SIZES.size() * 3;
  for (size_t i = 0; i < n; ++i) {
    INFO("payload " << i << " (" << (i < SIZES.size() ? "alone" : "many at once") << "): chunk by chunk " << exact[i]
                    << " s, trains " << trains[i] << " s");
    CHECK(exact[i] > 0);
    // docs/model.md "Chunk trains": within 0.1 % of the chunk-by-chunk time (the READ requests, FINs and completions
    // of the chunks inside a train are what differs; the bytes stream back to back either way).
    CHECK(trains[i] == Approx(exact[i]).epsilon(0.001));
  }
  // A payload of one chunk is read as before; longer ones in up to a quarter of the READs, FINs and comms.
  INFO("activities: chunk by chunk " << exact[n] << ", trains " << trains[n]);
  CHECK(trains[n] < 0.5 * exact[n]);
}

TEST_CASE("AR-gRPC chunk trains: a parameter-server training step within 0.1 % in fewer activities", "[training]")
{
  transports::register_builtin_transports();
  // Many variables of one to a few dozen chunks and two large ones, pulled and pushed by three workers through one
  // PS: its channels carry many payloads at once, as ResNet-152's several hundred do (docs/model.md "Chunk trains").
  training::TrainingModel m;
  m.name = "many-variables";
  m.batch = 16;
  m.layers = {{"big", 2e-3, 4e-3, {{"big/w", 24 << 20, true}, {"big/b", 4096, true}}}};
  for (int i = 0; i < 60; ++i) {
    const std::string l = "l" + std::to_string(i);
    m.layers.push_back({l, 2e-4, 4e-4, {{l + "/w", uint64_t(40000 + 37000 * (i % 23)), true}}});
  }
  m.layers.push_back({"fc", 1e-3, 2e-3, {{"fc/w", 9 << 20, true}}});
  auto run = [&](bool trains) {
    return test::numbers_in_child([&]() -> Result<std::vector<double>> {
      sim::TrainingJob j;
      j.transport = "ar_grpc";
      j.layout.workers = 3;
      j.layout.gpus_per_worker = 1;
      j.layout.ps_tasks = 1;
      j.steps = 3;
      j.options = with_trains(trains);
      auto res = sim::run_training_job(test::test_cluster(3), m, j);
      if (!res.ok()) return res.error();
      return std::vector<double>{res->step_time, double(res->simgrid_activities)};
    });
  };
  const std::vector<double> exact = run(false), trains = run(true);
  REQUIRE(exact.size() == 2);
  REQUIRE(trains.size() == 2);
  const double exact_step = exact[0], exact_activities = exact[1], train_step = trains[0], train_activities = trains[1];
  INFO("step: chunk by chunk " << exact_step << " s, trains " << train_step << " s; activities " << exact_activities
                               << " and " << train_activities);
  CHECK(train_step == Approx(exact_step).epsilon(0.001));
  CHECK(train_activities < 0.5 * exact_activities);
}
