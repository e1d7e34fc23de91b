// Data-parallel training on NCCL (models/nccl/data_parallel): DDP's buckets and Horovod's fusion as those libraries
// form them, allreduces that start when their gradients are ready and run one after the other, and a step that ends
// with the later of the backward pass and the last allreduce.
#include "models/catalog.hpp"
#include "models/nccl/data_parallel.hpp"
#include "models/workload/workload.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace tp;
using namespace tp::models;
using namespace tp::models::nccl;

namespace {

constexpr double MIB = 1024.0 * 1024;

/// `layers` layers of `params` fp32 parameters each (one variable), forward 1 ms and backward 2 ms each.
Workload synthetic(int layers, int64_t params)
{
  Workload w;
  w.model = "synthetic";
  w.batch = 32;
  for (int i = 0; i < layers; ++i) {
    WorkloadLayer l;
    l.name = "layer" + std::to_string(i);
    l.forward_seconds = 1e-3;
    l.backward_seconds = 2e-3;
    l.variables.push_back({"w" + std::to_string(i), {params}, true});
    l.variables.push_back({"moving_mean" + std::to_string(i), {16}, false}); // no gradient
    w.layers.push_back(l);
  }
  return w;
}

CollectiveSetup setup(const std::string& hw, int nodes, const std::string& nic = "")
{
  auto h = Catalog().host(hw);
  REQUIRE(h.ok());
  HostProfile host = h.value();
  if (!nic.empty()) {
    auto n = Catalog().nic(nic);
    REQUIRE(n.ok());
    for (auto& s : host.nics)
      s.nic = n.value();
  }
  CollectiveSetup s;
  s.nodes = nodes;
  s.op = Op::ALL_REDUCE;
  auto done = complete_setup(s, host);
  REQUIRE(done.ok());
  return done.value();
}

} // namespace

TEST_CASE("DDP fills buckets in reverse parameter order: a 1 MiB first bucket, then 25 MiB ones")
{
  // 40 layers of 1 M parameters (4 MB each), as PyTorch's compute_bucket_assignment_by_size fills buckets (a gradient
  // goes in, then the bucket closes once it reaches its cap): the first bucket takes the last layer alone (4 MB >=
  // 1 MiB), the others seven layers each (24 MB < 25 MiB <= 28 MB), the last the four left
  const Workload w = synthetic(40, 1'000'000);
  const auto step = data_parallel_step(setup("hgx-h100-8gpu", 1), w, DataParallelOptions{});
  REQUIRE(step.allreduces.size() == 1 + 6);
  CHECK(step.allreduces[0].gradients == 1);
  CHECK(step.allreduces.back().gradients == 4);
  double total = 0;
  for (size_t i = 0; i < step.allreduces.size(); ++i) {
    const auto& b = step.allreduces[i];
    total += b.bytes;
    if (i > 0 && i + 1 < step.allreduces.size()) {
      CHECK(b.gradients == 7);
      CHECK(b.bytes >= 25 * MIB);      // closed once it reached the cap ...
      CHECK(b.bytes - 4e6 < 25 * MIB); // ... and not before
    }
    if (i > 0) {
      CHECK(b.ready >= step.allreduces[i - 1].ready); // produced in backward order
      CHECK(b.start >= step.allreduces[i - 1].end);   // one after the other on NCCL's stream
    }
    CHECK(b.start >= b.ready);
    CHECK(b.end == Approx(b.start + b.prediction.seconds));
  }
  CHECK(total == Approx(40 * 4e6)); // trainable variables only: the moving means have no gradient
  // the first bucket is ready when the last layer's backward ends: after the whole forward and one backward
  CHECK(step.allreduces[0].ready == Approx(40e-3 + 2e-3));
  CHECK(step.allreduces.back().ready == Approx(step.compute()));
}

TEST_CASE("Horovod fuses what is ready at each cycle into buffers of at most the fusion threshold")
{
  const Workload w = synthetic(40, 1'000'000);
  DataParallelOptions o;
  o.bucketing = Bucketing::HOROVOD;
  o.cycle = 5e-3;        // a layer's gradient every 2 ms: two or three per cycle
  o.fusion = 10.0 * 1e6; // at most two 4 MB gradients per buffer
  const auto step = data_parallel_step(setup("hgx-h100-8gpu", 1), w, o);
  double total = 0;
  for (const auto& b : step.allreduces) {
    total += b.bytes;
    CHECK(b.bytes <= o.fusion);
    const double cycles = b.ready / o.cycle;
    CHECK(std::fabs(cycles - std::round(cycles)) < 1e-6); // launched on a cycle boundary
  }
  CHECK(total == Approx(40 * 4e6));
  CHECK(step.allreduces.size() >= 20);
  CHECK(step.allreduces.back().ready >= step.compute() - 1e-12);
}

TEST_CASE("a step is compute-bound when its allreduces hide behind the backward pass, and waits for them otherwise")
{
  auto lib = WorkloadLibrary();
  auto w = lib.make("resnet50", "h100-sxm5", 256, "amp");
  REQUIRE(w.ok());
  // one HGX H100: NVLink allreduces of ~100 MB take about a millisecond next to a 100 ms step
  const auto fast = data_parallel_step(setup("hgx-h100-8gpu", 1), w.value(), DataParallelOptions{});
  CHECK(fast.seconds == Approx(fast.compute()).epsilon(0.01));
  CHECK(fast.scaling_efficiency() <= 1.0);
  CHECK(fast.bottleneck.find("compute") == 0);
  // 64 nodes on 10 GbE at a small batch: about 20 ms of allreduces (100 MB at some 5 GB/s of algorithm bandwidth)
  // against a 12 ms step, so the last buckets' allreduces end long after the backward pass
  auto small = lib.make("resnet50", "h100-sxm5", 32, "amp");
  REQUIRE(small.ok());
  const auto slow =
      data_parallel_step(setup("hgx-h100-8gpu", 64, "ethernet-10gbe"), small.value(), DataParallelOptions{});
  CHECK(slow.seconds > 1.5 * slow.compute());
  CHECK(slow.seconds == Approx(slow.allreduces.back().end));
  CHECK(slow.exposed == Approx(slow.seconds - slow.compute()));
  CHECK(slow.bottleneck.find("communication") == 0);
  CHECK(slow.bottleneck.find("ethernet-10gbe") != std::string::npos);
  // a slower NIC never makes the step shorter
  const auto hdr = data_parallel_step(setup("hgx-h100-8gpu", 64, "connectx6-200g-hdr"), small.value(), {});
  const auto ndr = data_parallel_step(setup("hgx-h100-8gpu", 64), small.value(), {});
  CHECK(hdr.seconds >= ndr.seconds);
  CHECK(slow.seconds >= hdr.seconds);
}

TEST_CASE("a precision never measured on a GPU is refused, naming what was measured")
{
  auto lib = WorkloadLibrary();
  auto w = lib.make("resnet50", "k40m", 32, "amp");
  REQUIRE_FALSE(w.ok());
  CHECK(w.error().field == "precision");
  CHECK(w.error().expected.find("h100-sxm5 amp") != std::string::npos);
  CHECK(lib.make("resnet50", "k40m", 32).ok()); // FP32: scaled from a measured GPU by FP32 peak, as before
  CHECK_FALSE(parse_bucketing("fsdp").ok());
}
