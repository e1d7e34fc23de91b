// Unit conversion of profile quantities.
#include "models/quantity.hpp"

#include <catch2/catch.hpp>

using namespace tp::models;

TEST_CASE("Units convert to SI and must match the dimension", "[quick]")
{
  CHECK(to_si(40, "Gb/s", Dimension::BYTE_RATE).value() == Approx(5e9));
  CHECK(to_si(12.15, "GB/s", Dimension::BYTE_RATE).value() == Approx(12.15e9));
  CHECK(to_si(546, "ns", Dimension::TIME).value() == Approx(546e-9));
  CHECK(to_si(4, "KiB", Dimension::BYTES).value() == 4096);
  CHECK(to_si(8, "GT/s", Dimension::TRANSFER_RATE).value() == 8e9);
  CHECK(to_si(25, "%", Dimension::FRACTION).value() == Approx(0.25));
  auto bad = to_si(40, "ns", Dimension::BYTE_RATE);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message().find("unit \"ns\"") != std::string::npos);
  CHECK_FALSE(to_si(1, "furlongs", Dimension::BYTES).ok());
}
