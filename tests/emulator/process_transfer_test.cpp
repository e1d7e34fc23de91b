// Transports between two OS processes (forked producer and consumer: software device over shared memory, RPC over
// TCP): every transport moves host and GPU-placed tensors with the bytes checked, and a producer killed while the
// consumer waits for its tensor gives the consumer an error within 5 s on every transport.
#include "emulator/process_transfer.hpp"

#include "tests/test_time.hpp"

#include <catch2/catch.hpp>

#include <chrono>

using namespace tp;
using namespace tp::emu;

namespace {

void check_bytes_across_processes(const std::string& transport, Location src, Location dst)
{
  EmuTransferJob j;
  j.transport = transport;
  j.sizes = {4096, 1 << 20};
  j.steps = 2;
  j.src = src;
  j.dst = dst;
  j.os_processes = true;
  auto r = run_emulated_transfer(j);
  INFO(transport << " " << src.to_string() << " -> " << dst.to_string());
  REQUIRE(r.ok());
  REQUIRE(r->points.size() == 2);
  for (const auto& p : r->points) {
    CHECK(p.bytes_ok);
    CHECK(p.steady_latency > 0);
  }
  // Records from both processes, in the simulator's format.
  int consumer = 0, producer = 0;
  for (const auto& rec : r->records.records()) {
    consumer += rec.side == transports::Side::CONSUMER;
    producer += rec.side == transports::Side::PRODUCER;
  }
  CHECK(consumer == 4);
  CHECK(producer >= 1);
}

void check_producer_death(const std::string& transport)
{
  EmuTransferJob j;
  j.transport = transport;
  j.timeout = 20;
  auto pair = ProcessPair::spawn(j);
  REQUIRE(pair.ok());
  ProcessPair& pp = *pair.value();
  REQUIRE(pp.start().ok());
  // One transfer completes, so that every connection is up.
  REQUIRE(pp.prepare(1, 1 << 20).ok());
  REQUIRE(pp.go(1, 1 << 20, true, true).ok());
  REQUIRE(pp.producer_result(tp::test::wall_seconds(10)).ok());
  auto first = pp.consumer_result(tp::test::wall_seconds(10));
  REQUIRE(first.ok());
  REQUIRE(first->bytes_ok);
  REQUIRE(pp.cleanup(1).ok());
  // The consumer asks for step 2's tensor; the producer dies before sending it.
  REQUIRE(pp.go(2, 1 << 20, true, false).ok());
  pp.kill_producer();
  const auto t0 = std::chrono::steady_clock::now();
  auto r = pp.consumer_result(tp::test::wall_seconds(10));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(transport);
  REQUIRE_FALSE(r.ok());
  INFO(r.error().message());
  // The consumer process itself answered with its receive's error (not: it crashed, or did not answer).
  CHECK(r.error().message().find("consumer: ") != std::string::npos);
  CHECK(r.error().message().find("process is gone") == std::string::npos);
  CHECK(took < tp::test::wall_seconds(5));
}

} // namespace

#define PROCESS_TRANSPORT_CASE(T)                                                                                      \
  TEST_CASE(T ": tensors cross OS processes with their bytes intact", "[emulator][processes]")                         \
  {                                                                                                                    \
    check_bytes_across_processes(T, Location::host(0), Location::host(0));                                             \
    check_bytes_across_processes(T, Location::gpu(1), Location::gpu(0));                                               \
  }                                                                                                                    \
  TEST_CASE(T ": a killed producer process fails the consumer's receive within 5 s", "[emulator][processes]")          \
  {                                                                                                                    \
    check_producer_death(T);                                                                                           \
  }

PROCESS_TRANSPORT_CASE("grpc")
PROCESS_TRANSPORT_CASE("verbs_v1")
PROCESS_TRANSPORT_CASE("verbs_v2")
PROCESS_TRANSPORT_CASE("gdr")
PROCESS_TRANSPORT_CASE("mpi")
PROCESS_TRANSPORT_CASE("ar_grpc")
