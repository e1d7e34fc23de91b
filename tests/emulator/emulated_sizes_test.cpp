// Sizes in the emulator, which moves real bytes: a size that overflows a tensor or that this machine cannot hold
// is refused before anything runs, naming the option and the limit (issue 13: `emulate --size 2^64-1` printed "ok",
// a tensor of 0 elements compared with a pattern of 0 bytes); a size that runs moves and checks all its bytes.
#include "emulator/transfer_job.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>

using namespace tp;

TEST_CASE("emulated transfers refuse sizes over the tensor bound or the memory available", "[emulator]")
{
  emu::EmuTransferJob j;
  j.transport = "verbs_v2";
  j.sizes = {1024, ~0ull}; // nothing runs: the second size is refused first
  auto huge = emu::run_emulated_transfer(j);
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.error().message().find("size") != std::string::npos);
  CHECK(huge.error().message().find(std::to_string(emu::MAX_EMULATED_BYTES)) != std::string::npos);
  CHECK(huge.error().message().find("18446744073709551615") != std::string::npos);

  ::setenv("TENSORPATH_MEMORY_LIMIT", "256M", 1);
  const Status big = emu::check_emulated_size(1ull << 30, "--size");
  const Status small = emu::check_emulated_size(1 << 20, "--size");
  ::unsetenv("TENSORPATH_MEMORY_LIMIT");
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().message().find("--size") != std::string::npos);
  CHECK(big.error().message().find("1073741824") != std::string::npos);
  CHECK(small.ok());
}

TEST_CASE("an emulated transfer moves and checks every byte of a size that is not a multiple of 4", "[emulator]")
{
  for (const std::string t : {"grpc", "verbs_v2"}) {
    emu::EmuTransferJob j;
    j.transport = t;
    const uint64_t n = (24ull << 20) + 3; // a float32 tensor of ceil(n / 4) elements
    j.sizes = {n};
    j.steps = 2;
    auto r = emu::run_emulated_transfer(j);
    INFO(t);
    REQUIRE(r.ok());
    CHECK(r->points.at(0).bytes_ok);
    for (const auto& rec : r->records.records())
      if (rec.side == transports::Side::CONSUMER) CHECK(rec.bytes == n + 1);
  }
}
