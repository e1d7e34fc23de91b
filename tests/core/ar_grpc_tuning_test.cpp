// AR-gRPC's per-fabric tuning rule.
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
