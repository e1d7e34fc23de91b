// AR-gRPC's per-fabric tuning rule.
#include "core/device/device.hpp"
#include "core/transports/ar_grpc/ar_grpc.hpp"

#include <catch2/catch.hpp>

using namespace tp::transports;

TEST_CASE("AR-gRPC tuning: eager limit from RTT x copy bandwidth, chunk from RTT x link rate", "[quick]")
{
  auto t = tune_ar_grpc(5e-6, 10e9, 12.5e9);
  CHECK(t.eager_threshold == 16u << 10); // 5 us x 10 GB/s / 2 = 25 KB -> 16 KiB
  CHECK(t.chunk_bytes == 128u << 10);    // 2 x 5 us x 12.5 GB/s = 125 KB -> 128 KiB
  auto slow = tune_ar_grpc(50e-6, 10e9, 12.5e9);
  CHECK(slow.eager_threshold == 64u << 10); // clamped
  CHECK(slow.chunk_bytes == 2u << 20);
  auto tiny = tune_ar_grpc(0.1e-6, 1e9, 1e9);
  CHECK(tiny.eager_threshold == 2u << 10);
  CHECK(tiny.chunk_bytes == 64u << 10);
}

namespace {
/// A device that only says whether it charges a work request standing for several as that many.
struct StandInDevice final : tp::verbs::Device {
  explicit StandInDevice(bool charges) : charges_(charges) {}
  tp::verbs::DeviceAttr query() const override { return {}; }
  tp::verbs::PortAddress port_address() const override { return {}; }
  bool charges_stand_ins() const override { return charges_; }
  bool charges_;
};
} // namespace

TEST_CASE("AR-gRPC chunk trains: on by default, only on a device that charges a train as its chunks", "[quick]")
{
  const StandInDevice simulated(true), real(false);
  ArGrpcOptions o;
  CHECK(o.chunk_trains); // the simulator's default (docs/model.md "Chunk trains")
  CHECK(ar_grpc_read_train(o, &simulated) == AR_GRPC_TRAIN_CHUNKS);
  // Hardware, soft-RoCE and the software device ignore SendWr::stands_for: a 4-chunk READ there would be another
  // protocol, so AR-gRPC reads chunk by chunk as published, whatever the option says.
  CHECK(ar_grpc_read_train(o, &real) == 1);
  CHECK(ar_grpc_read_train(o, nullptr) == 1);
  // A device that says nothing (every real one: ibv, the software device) does not charge stand-ins.
  struct PlainDevice final : tp::verbs::Device {
    tp::verbs::DeviceAttr query() const override { return {}; }
    tp::verbs::PortAddress port_address() const override { return {}; }
  } plain;
  CHECK_FALSE(plain.charges_stand_ins());
  CHECK(ar_grpc_read_train(o, &plain) == 1);
  o.chunk_trains = false; // --ar-chunk-by-chunk
  CHECK(ar_grpc_read_train(o, &simulated) == 1);
}
