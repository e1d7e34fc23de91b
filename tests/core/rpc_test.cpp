// RPC frames: round trip, and malformed frames are errors (no out-of-bounds reads).
#include "core/rpc/rpc.hpp"

#include <catch2/catch.hpp>

using namespace tp;
using namespace tp::rpc;

TEST_CASE("RPC frames round-trip with and without an error status", "[quick]")
{
  auto f = encode_frame(1, 42, "RecvTensor", nullptr, {1, 2, 3});
  auto d = decode_frame(f.data(), f.size());
  REQUIRE(d.ok());
  CHECK(d->kind == 1);
  CHECK(d->call_id == 42);
  CHECK(d->method == "RecvTensor");
  CHECK(d->body == std::vector<uint8_t>{1, 2, 3});
  Error e = Error::status("Aborted", "restarted");
  auto g = encode_frame(2, 7, "RecvTensor", &e, {});
  auto h = decode_frame(g.data(), g.size());
  REQUIRE(h.ok());
  CHECK(h->has_error);
  CHECK(h->error_code == "Aborted");
}

TEST_CASE("Every truncation of a frame and bad fields are rejected", "[quick]")
{
  auto f = encode_frame(1, 42, "RecvTensor", nullptr, std::vector<uint8_t>(100, 7));
  for (size_t n = 0; n < f.size(); ++n)
    CHECK_FALSE(decode_frame(f.data(), n).ok());
  auto bad = f;
  bad[0] = 9;
  CHECK_FALSE(decode_frame(bad.data(), bad.size()).ok());
  auto big = f;
  big.back() = 0; // unchanged length, still fine
  CHECK(decode_frame(big.data(), big.size()).ok());
  auto longer = f;
  longer.push_back(0); // trailing garbage
  CHECK_FALSE(decode_frame(longer.data(), longer.size()).ok());
}

TEST_CASE("Reader never reads past the end", "[quick]")
{
  std::vector<uint8_t> v{5, 0, 0, 0, 'a'};
  Reader r(v);
  std::string s;
  CHECK_FALSE(r.str(s)); // claims 5 bytes, has 1
  Reader r2(v);
  uint64_t x;
  CHECK_FALSE(r2.u64(x));
}
