// Capped reads and checked, atomic writes: an endless input stops at its cap, a failed write (a full disk) is an
// error that leaves the old file whole and no temporary behind, and a device is written in place, never replaced.
#include "core/common/file_io.hpp"

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace tp;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name)
{
  fs::path d = fs::temp_directory_path() / ("tp-file-io-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p)
{
  std::ifstream f(p);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

size_t entries(const fs::path& dir)
{
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir))
    ++n;
  return n;
}

} // namespace

TEST_CASE("An endless input stops at its cap with an error naming the file and the cap", "[quick]")
{
  auto r = io::read_file_capped("/dev/zero", "trace file", 1 << 20);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("/dev/zero") != std::string::npos);
  CHECK(r.error().message().find("1 MiB") != std::string::npos);
  CHECK(r.error().message().find("TENSORPATH_MAX_INPUT_BYTES") != std::string::npos);
}

TEST_CASE("A regular file over the cap is refused before it is read and under the cap it is read whole", "[quick]")
{
  const auto d = scratch("cap");
  {
    std::ofstream(d / "big") << std::string(5000, 'x');
  }
  auto big = io::read_file_capped((d / "big").string(), "sweep file", 4096);
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().message().find("5000 bytes") != std::string::npos);
  auto fine = io::read_file_capped((d / "big").string(), "sweep file", 5000);
  REQUIRE(fine.ok());
  CHECK(fine->size() == 5000);
  auto dir = io::read_file_capped(d.string(), "sweep file", 5000);
  REQUIRE_FALSE(dir.ok());
  CHECK(dir.error().message().find("directory") != std::string::npos);
  auto missing = io::read_file_capped((d / "nope").string(), "sweep file", 5000);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message().find("nope") != std::string::npos);
  fs::remove_all(d);
}

TEST_CASE("The input cap can be raised or lowered through TENSORPATH_MAX_INPUT_BYTES", "[quick]")
{
  ::setenv("TENSORPATH_MAX_INPUT_BYTES", "123", 1);
  CHECK(io::input_cap(io::SPEC_INPUT_CAP) == 123);
  ::setenv("TENSORPATH_MAX_INPUT_BYTES", "-5", 1);
  CHECK(io::input_cap(io::SPEC_INPUT_CAP) == io::SPEC_INPUT_CAP);
  ::setenv("TENSORPATH_MAX_INPUT_BYTES", "12x", 1);
  CHECK(io::input_cap(io::SPEC_INPUT_CAP) == io::SPEC_INPUT_CAP);
  ::unsetenv("TENSORPATH_MAX_INPUT_BYTES");
  CHECK(io::input_cap(io::TRACE_INPUT_CAP) == io::TRACE_INPUT_CAP);
}

TEST_CASE("An atomic write replaces the file whole and leaves nothing else beside it", "[quick]")
{
  const auto d = scratch("atomic");
  const auto f = d / "out.json";
  REQUIRE(io::write_file_atomically(f.string(), "first\n").ok());
  REQUIRE(io::write_file_atomically(f.string(), "second\n").ok());
  CHECK(slurp(f) == "second\n");
  CHECK(entries(d) == 1);
  // the mode of a file that existed is kept
  ::chmod(f.c_str(), 0640);
  REQUIRE(io::write_file_atomically(f.string(), "third\n").ok());
  struct stat st {};
  REQUIRE(::stat(f.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);
  // a symbolic link keeps pointing at the file it names, which gets the new content
  fs::create_symlink(f, d / "link.json");
  REQUIRE(io::write_file_atomically((d / "link.json").string(), "fourth\n").ok());
  CHECK(fs::is_symlink(d / "link.json"));
  CHECK(slurp(f) == "fourth\n");
  fs::remove_all(d);
}

TEST_CASE("A write that fails (a full disk) is an error that leaves the old file whole and no temporary", "[quick]")
{
  const auto d = scratch("full");
  const auto f = d / "rows.csv";
  {
    std::ofstream(f) << "old content\n";
  }
  // A file-size limit makes write(2) fail with EFBIG, as a full disk makes it fail with ENOSPC: in a child process,
  // with SIGXFSZ ignored so that the write returns the error instead of killing the process.
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim {
      4096, 4096
    };
    ::setrlimit(RLIMIT_FSIZE, &lim);
    auto st = io::write_file_atomically(f.string(), std::string(100000, 'y'));
    const bool named = !st.ok() && st.error().message().find("rows.csv") != std::string::npos;
    ::_exit(named ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(slurp(f) == "old content\n");
  CHECK(entries(d) == 1);
  fs::remove_all(d);
}

TEST_CASE("A device is written in place and never replaced, /dev/full reports its error", "[quick]")
{
  REQUIRE(io::write_file_atomically("/dev/null", "anything").ok());
  struct stat st {};
  REQUIRE(::stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  auto full = io::write_file_atomically("/dev/full", "anything");
  REQUIRE_FALSE(full.ok());
  CHECK(full.error().message().find("/dev/full") != std::string::npos);
  CHECK(io::is_special_file("/dev/null"));
  CHECK_FALSE(io::is_special_file("/tmp"));
}

TEST_CASE("same_file tells two names of one file from two files", "[quick]")
{
  const auto d = scratch("same");
  {
    std::ofstream(d / "a") << "a";
    std::ofstream(d / "b") << "b";
  }
  fs::create_hard_link(d / "a", d / "a2");
  CHECK(io::same_file((d / "a").string(), (d / "a2").string()));
  CHECK(io::same_file((d / "a").string(), (d / "." / "a").string()));
  CHECK_FALSE(io::same_file((d / "a").string(), (d / "b").string()));
  CHECK_FALSE(io::same_file((d / "a").string(), (d / "missing").string()));
  fs::remove_all(d);
}
