// Training steps on emulated processes: parameter-server and ring-allreduce steps of a small model finish on real
// threads with real bytes on every transport, through the same step graph and executors as the simulator.
#include "core/transports/transport.hpp"
#include "emulator/training_job.hpp"
#include "tests/jobs/training_driver_cases.hpp"

#include <catch2/catch.hpp>

using namespace tp;

namespace {

training::TrainingModel small_model()
{
  return test::driver_test_model(64 << 10);
}

} // namespace

TEST_CASE("scaling a model scales its bytes and compute", "[emulator]")
{
  const auto m = small_model();
  const auto s = emu::scale_model(m, 0.5);
  CHECK(s.bytes() == m.bytes() / 2);
  CHECK(s.compute_seconds() == Approx(m.compute_seconds() / 2));
  CHECK(emu::scale_model(m, 1e-9).layers[0].variables[1].bytes == 4); // never below one element
}

TEST_CASE("parameter-server training steps run on emulated processes over every transport", "[emulator]")
{
  for (const std::string& t : transports::transport_names()) { // every registered transport
    emu::EmuTrainingJob j;
    j.transport = t;
    j.workers = 2;
    j.ps_tasks = 2;
    j.gpus_per_worker = 2;
    j.scale = 1;
    j.steps = 2;
    auto r = emu::run_emulated_training(small_model(), j);
    INFO(t);
    REQUIRE(r.ok());
    CHECK(r->tasks == 4);
    REQUIRE(r->step_seconds.size() == 2);
    // A step cannot be shorter than one tower's compute (the kernels are real sleeps).
    CHECK(r->step_time >= small_model().compute_seconds());
    CHECK(r->remote_bytes_per_step > 0);
  }
}

TEST_CASE("ring-allreduce training steps run on emulated processes", "[emulator]")
{
  for (const std::string t : {"grpc", "verbs_v2", "mpi"}) {
    emu::EmuTrainingJob j;
    j.transport = t;
    j.mode = training::SyncMode::ALLREDUCE;
    j.workers = 3;
    j.scale = 1;
    j.steps = 2;
    auto r = emu::run_emulated_training(small_model(), j);
    INFO(t);
    REQUIRE(r.ok());
    CHECK(r->tasks == 3);
    CHECK(r->step_time >= small_model().compute_seconds());
  }
}

TEST_CASE("emulated training refuses a bad job with the field named", "[emulator]")
{
  emu::EmuTrainingJob j;
  j.transport = "carrier-pigeon";
  auto r = emu::run_emulated_training(small_model(), j);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("transport") != std::string::npos);
  j.transport = "grpc";
  j.scale = 0;
  r = emu::run_emulated_training(small_model(), j);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("scale") != std::string::npos);
}

TEST_CASE("emulated training that needs more memory than the machine has is refused up front", "[emulator]")
{
  emu::EmuTrainingJob j;
  j.transport = "verbs_v2";
  j.scale = 1e9; // every variable's bytes x 1e9: terabytes of real memory
  auto r = emu::run_emulated_training(small_model(), j);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("emulated training") != std::string::npos);
  CHECK(r.error().message().find("--scale") != std::string::npos);
}
