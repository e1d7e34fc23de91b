// gzip'd traces (PyTorch writes .pt.trace.json.gz): recognised by their first bytes, not their name; inflated under
// the input cap (a gzip bomb is refused naming the cap); truncated or corrupt data is an error naming the file.
#include "core/common/gzip_input.hpp"
#include "traces/trace.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace tp;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p)
{
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

fs::path scratch(const std::string& name)
{
  fs::path d = fs::temp_directory_path() / ("tp-gzip-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void spit(const fs::path& p, const std::string& data)
{
  std::ofstream f(p, std::ios::binary);
  f << data;
}

/// `text` as one gzip member (what gzip and Python's gzip.open write).
std::string gzip(const std::string& text)
{
  z_stream z{};
  REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, uLong(text.size())) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = uInt(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

const std::string FIXTURE = std::string(TENSORPATH_SOURCE_DIR) + "/tests/traces/fixtures/kineto.json";

} // namespace

TEST_CASE("a gzip'd trace reads as the plain one, whatever its name", "[traces]")
{
  const fs::path d = scratch("same");
  const std::string plain = slurp(FIXTURE);
  auto want = traces::read_trace(FIXTURE);
  REQUIRE(want.ok());
  // gzip'd under its usual name, gzip'd under a plain name, and plain under a .gz name: the bytes decide
  spit(d / "rank0.pt.trace.json.gz", gzip(plain));
  spit(d / "rank0.json", gzip(plain));
  spit(d / "plain.json.gz", plain);
  for (const char* name : {"rank0.pt.trace.json.gz", "rank0.json", "plain.json.gz"}) {
    INFO(name);
    auto t = traces::read_trace((d / name).string());
    REQUIRE(t.ok());
    CHECK(t->format == "kineto");
    REQUIRE(t->collectives.size() == want->collectives.size());
    CHECK(t->collectives[0].bytes == want->collectives[0].bytes);
    CHECK(t->collectives[1].duration == want->collectives[1].duration);
    CHECK(t->ops.size() == want->ops.size());
  }
  // two members, as `cat a.gz b.gz` makes: inflated one after the other
  const size_t half = plain.size() / 2;
  spit(d / "two.json.gz", gzip(plain.substr(0, half)) + gzip(plain.substr(half)));
  auto two = traces::read_trace((d / "two.json.gz").string());
  REQUIRE(two.ok());
  CHECK(two->collectives.size() == want->collectives.size());
  fs::remove_all(d);
}

TEST_CASE("a gzip bomb is refused at the input cap, naming the cap and TENSORPATH_MAX_INPUT_BYTES", "[traces]")
{
  // 64 MiB of spaces compress to ~64 KiB: the compressed file is far below any cap, the inflated text is not.
  const std::string bomb = gzip("[" + std::string(64u << 20, ' ') + "]");
  REQUIRE(bomb.size() < (1u << 20));
  auto r = io::gunzip_capped(bomb, "bomb.json.gz", "trace file", 1u << 20);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().file == "bomb.json.gz");
  CHECK(r.error().message().find("1048576 bytes once inflated") != std::string::npos);
  CHECK(r.error().message().find("TENSORPATH_MAX_INPUT_BYTES") != std::string::npos);
  // through read_trace with the cap lowered by the environment (this test case runs in a process of its own)
  const fs::path d = scratch("bomb");
  spit(d / "bomb.json.gz", bomb);
  ::setenv("TENSORPATH_MAX_INPUT_BYTES", "2000000", 1);
  auto t = traces::read_trace((d / "bomb.json.gz").string());
  ::unsetenv("TENSORPATH_MAX_INPUT_BYTES");
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().message().find("bomb.json.gz") != std::string::npos);
  CHECK(t.error().message().find("2000000 bytes once inflated") != std::string::npos);
  // the same data under the default cap inflates (64 MiB is a plausible trace)
  auto fine = io::gunzip_capped(bomb, "bomb.json.gz", "trace file", 128u << 20);
  REQUIRE(fine.ok());
  CHECK(fine->size() == (64u << 20) + 2);
  fs::remove_all(d);
}

TEST_CASE("a truncated or corrupt gzip'd trace is an error naming the file", "[traces]")
{
  const fs::path d = scratch("bad");
  const std::string gz = gzip(slurp(FIXTURE));
  REQUIRE(gz.size() > 100);
  struct Bad {
    std::string name, data, needle;
  } cases[] = {
      {"cut.json.gz", gz.substr(0, gz.size() / 2), "truncated"},
      {"no-trailer.json.gz", gz.substr(0, gz.size() - 4), "truncated"},
      {"magic-only.json.gz", gz.substr(0, 2), "truncated"},
      {"flipped.json.gz", gz.substr(0, 30) + std::string(20, '\xff') + gz.substr(50), "corrupt"},
      {"trailing.json.gz", gz + "garbage", "other data"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    spit(d / c.name, c.data);
    auto t = traces::read_trace((d / c.name).string());
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().file == (d / c.name).string());
    CHECK(t.error().message().find(c.needle) != std::string::npos);
  }
  // gzip'd text handed to the parser directly: told to inflate it first
  auto p = traces::parse_trace(gz, "direct.json.gz");
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().message().find("gunzip") != std::string::npos);
  fs::remove_all(d);
}
