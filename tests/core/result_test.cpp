// Error formatting and Result<T> behaviour.
#include "core/common/result.hpp"

#include <catch2/catch.hpp>

using namespace tp;

TEST_CASE("Error message names file, field, expectation and what was found", "[quick]")
{
  Error e = Error::at("models/hw/nic/x.json", "line_rate.unit", "a rate (Gb/s)", "unit \"ns\"");
  CHECK(e.message() == "models/hw/nic/x.json: line_rate.unit: expected a rate (Gb/s), got unit \"ns\"");
  CHECK(Error::msg("plain").message() == "plain");
  Error d = Error::at("", "post_send", "QP in RTS", "state INIT");
  d.detail = "see ibv_post_send(3)";
  CHECK(d.message() == "post_send: expected QP in RTS, got state INIT (see ibv_post_send(3))");
}

TEST_CASE("Result carries a value or an error, TP_TRY propagates errors", "[quick]")
{
  Result<int> good = 7;
  Result<int> bad = Error::msg("nope");
  REQUIRE(good.ok());
  CHECK(good.value() == 7);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message() == "nope");
  auto chain = [](bool fail) -> Status {
    auto inner = [fail]() -> Status { return fail ? Status(Error::msg("inner failed")) : ok_status(); };
    TP_TRY(inner());
    return ok_status();
  };
  CHECK(chain(false).ok());
  REQUIRE_FALSE(chain(true).ok());
  CHECK(chain(true).error().message() == "inner failed");
}
