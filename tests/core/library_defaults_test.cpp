// Allreduce libraries' defaults: each preset is what the library's code sets, and names round-trip.
#include "core/collectives/library_defaults.hpp"

#include <catch2/catch.hpp>

using namespace tp::collectives;

TEST_CASE("Horovod's defaults are on: 1 ms cycle, 128 MiB fusion, response cache (>= 0.21)", "[quick]")
{
  const auto o = library_defaults(AllreduceLibrary::HOROVOD);
  CHECK(o.coordinator);
  CHECK(o.tick_seconds == Approx(1e-3));
  CHECK(o.fusion_threshold == 128ull * 1024 * 1024);
  CHECK(o.response_cache);
  const auto old = library_defaults(AllreduceLibrary::HOROVOD_0_20);
  CHECK(old.tick_seconds == Approx(5e-3));
  CHECK(old.fusion_threshold == 64ull * 1024 * 1024);
  CHECK(o.batched_copies == 160); // the batched D2D copy kernel (PR #2435, v0.21.0)
  CHECK(old.batched_copies == 0);
}

TEST_CASE("Libraries without fusion or coordinator say so", "[quick]")
{
  CHECK(library_defaults(AllreduceLibrary::BAIDU).fusion_threshold == 0);
  CHECK(library_defaults(AllreduceLibrary::BAIDU).tick_seconds == Approx(5e-3));
  CHECK(library_defaults(AllreduceLibrary::TF_CONTRIB_MPI).tick_seconds == Approx(1e-3));
  CHECK_FALSE(library_defaults(AllreduceLibrary::MATEX).coordinator);
  CHECK(describe(AllreduceLibrary::MATEX, library_defaults(AllreduceLibrary::MATEX)).find("no coordinator") !=
        std::string::npos);
  CHECK(describe(AllreduceLibrary::HOROVOD, library_defaults(AllreduceLibrary::HOROVOD)) ==
        "horovod: coordinator tick 1 ms, fusion 128 MiB (GPU copies batched, 160 per kernel), response cache on");
  CHECK(describe(AllreduceLibrary::HOROVOD_0_20, library_defaults(AllreduceLibrary::HOROVOD_0_20)) ==
        "horovod-0.20: coordinator tick 5 ms, fusion 64 MiB (a GPU copy per tensor), response cache on");
}

TEST_CASE("Library names round-trip and an unknown one lists them with a suggestion", "[quick]")
{
  for (const auto& n : allreduce_library_names()) {
    auto lib = parse_allreduce_library(n);
    REQUIRE(lib.ok());
    CHECK(to_string(lib.value()) == n);
  }
  auto bad = parse_allreduce_library("horovd");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message().find("did you mean \"horovod\"") != std::string::npos);
}
