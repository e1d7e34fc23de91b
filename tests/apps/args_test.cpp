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
  s.options = {{"size", 's', true, "N", "size"}, {"all", 'a', false, "", "all"}, {"n", 'n', true, "N", "count"}};
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
