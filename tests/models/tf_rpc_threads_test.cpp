// TensorFlow's gRPC threads by release: one of each up to 1.5, eight of each from 1.6, the default 1.15's, and
// releases outside 1.0-1.15 refused naming the field.
#include "models/tf_rpc_threads.hpp"

#include <catch2/catch.hpp>

using namespace tp;

TEST_CASE("TF gRPC threads: 1.0-1.5 one server and one client thread, 1.6-1.15 eight of each", "[quick]")
{
  for (const char* v : {"1.0", "1.3", "1.5"}) {
    auto t = models::tf_rpc_threading(v);
    REQUIRE(t.ok());
    CHECK(t->server_threads == 1);
    CHECK(t->client_threads == 1);
    CHECK(t->version == v);
  }
  for (const char* v : {"1.6", "1.12", "1.15"}) {
    auto t = models::tf_rpc_threading(v);
    REQUIRE(t.ok());
    CHECK(t->server_threads == 8);
    CHECK(t->client_threads == 8);
  }
  auto d = models::tf_rpc_threading("");
  REQUIRE(d.ok());
  CHECK(d->version == models::DEFAULT_TF_VERSION);
  const models::RpcThreading defaults;
  CHECK(defaults.server_threads == d->server_threads);
  CHECK(defaults.client_threads == d->client_threads);
  CHECK(models::known_tf_versions().size() == 16);
}

TEST_CASE("TF gRPC threads: a release it does not know is refused, naming the field", "[quick]")
{
  auto empty = models::given_tf_rpc_threading("", "--tf"); // given empty: no release, not the default
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().message().find("--tf") != std::string::npos);
  CHECK(models::given_tf_rpc_threading("1.3", "--tf")->server_threads == 1);
  for (const char* v : {"1.16", "2.4", "1", "1.3.0", "latest", "1.-1"}) {
    auto t = models::tf_rpc_threading(v, "jobs[0].tf_version");
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().message().find("jobs[0].tf_version") != std::string::npos);
    CHECK(t.error().message().find(v) != std::string::npos);
  }
}
