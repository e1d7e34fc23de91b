// Command-line parsing.
#include "apps/lib/args.hpp"

#include <catch2/catch.hpp>

using namespace tp::frontend;

namespace {
CommandSpec spec()
{
  CommandSpec s;
  s.name = "demo";
  s.summary = "demo command";
  s.options = {{"size", 's', true, "N", "size"},
               {"all", 'a', false, "", "all"},
               {"n", 'n', true, "N", "count"},
               {"x", 0, true, "X", "a number"}};
  s.max_positionals = 1;
  return s;
}
} // namespace

TEST_CASE("Options with and without values, short and long forms", "[quick]")
{
  auto r = parse_args(spec(), {"--size", "64K", "-a", "pos", "-n5", "--n=7"});
  REQUIRE(r.ok());
  CHECK(r->get_size("size", 0).value() == 65536);
  CHECK(r->has("all"));
  CHECK(r->get_int("n", 0, 0, 10).value() == 7);
  CHECK(r->positional() == std::vector<std::string>{"pos"});
}

TEST_CASE("Unknown options, missing values and bad numbers are errors naming the option", "[quick]")
{
  auto u = parse_args(spec(), {"--sise", "1"});
  REQUIRE_FALSE(u.ok());
  CHECK(u.error().message().find("--sise") != std::string::npos);
  auto m = parse_args(spec(), {"--size"});
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().message().find("--size") != std::string::npos);
  auto b = parse_args(spec(), {"--n", "x"});
  REQUIRE(b.ok());
  REQUIRE_FALSE(b->get_int("n", 0, 0, 10).ok());
  CHECK(b->get_int("n", 0, 0, 10).error().message().find("--n") != std::string::npos);
  CHECK_FALSE(parse_size("12Q").ok());
  CHECK(parse_size("8M").value() == 8u << 20);
  CHECK(help_text(spec()).find("--size N") != std::string::npos);
}

TEST_CASE("Sizes that do not fit 64 bits are refused, never wrapped", "[quick]")
{
  CHECK(parse_size("16E").ok() == false); // an unknown suffix
  CHECK(parse_size("4G").value() == 4ull << 30);
  CHECK(parse_size("2T").value() == 2ull << 40);
  CHECK(parse_size("18446744073709551615").value() == 18446744073709551615ull);
  for (const char* bad : {"17179869184G", "18446744073709551616", "99999999999999999999999", "16777216T"}) {
    auto r = parse_size(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message().find(bad) != std::string::npos);
  }
  CHECK_FALSE(parse_size("-1").ok());
  CHECK_FALSE(parse_size(" 1").ok());
}

TEST_CASE("Integers and numbers are parsed whole, in range, finite, overflow is an error", "[quick]")
{
  CHECK(parse_integer("42", "--n", 0, 100).value() == 42);
  CHECK(parse_integer("-3", "--n", -5, 5).value() == -3);
  for (const char* bad : {"", "-", "+3", " 3", "3 ", "0x10", "1e3", "99999999999999999999", "101"})
    CHECK_FALSE(parse_integer(bad, "--n", 0, 100).ok());
  CHECK(parse_number("0.5", "--x", 0, 1).value() == 0.5);
  for (const char* bad : {"nan", "NaN", "inf", "-inf", "1e999", "", "1.5", "0.5x", " 0.5"})
    CHECK_FALSE(parse_number(bad, "--x", 0, 1).ok());
  auto r = parse_args(spec(), {"--x", "nan"});
  REQUIRE(r.ok());
  auto x = r->get_number("x", 0, 0, 1);
  REQUIRE_FALSE(x.ok());
  CHECK(x.error().message().find("--x") != std::string::npos);
}

TEST_CASE("Stray arguments beyond what a command takes are errors, not ignored", "[quick]")
{
  auto two = parse_args(spec(), {"one", "two"});
  REQUIRE_FALSE(two.ok());
  CHECK(two.error().message().find("\"two\"") != std::string::npos);
  CommandSpec none = spec();
  none.max_positionals = 0;
  auto stray = parse_args(none, {"--size", "1", "oops"});
  REQUIRE_FALSE(stray.ok());
  CHECK(stray.error().message().find("oops") != std::string::npos);
  auto after = parse_args(none, {"--", "x"});
  CHECK_FALSE(after.ok());
}
