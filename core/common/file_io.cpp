// Capped reads and checked, atomic writes (see file_io.hpp).
#include "core/common/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

namespace tp::io {

namespace {

std::string errno_text(const std::string& call)
{
  return call + ": " + std::strerror(errno);
}

std::string mib(uint64_t bytes)
{
  if (bytes % (1ull << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

} // namespace

uint64_t input_cap(uint64_t default_cap)
{
  const char* env = std::getenv("TENSORPATH_MAX_INPUT_BYTES");
  if (!env || !*env) return default_cap;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(env, &end, 10);
  if (errno != 0 || *end != '\0' || v == 0 || env[0] == '-') return default_cap; // a bad override keeps the default
  return v;
}

Result<std::string> read_file_capped(const std::string& path, const std::string& what, uint64_t cap)
{
  const std::string hint = " (the limit is TENSORPATH_MAX_INPUT_BYTES, in bytes)";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error::at(path, "", "a readable " + what, errno_text("open"));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const Error e = Error::at(path, "", "a readable " + what, errno_text("fstat"));
    ::close(fd);
    return e;
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Error::at(path, "", "a " + what + " (a file)", "a directory");
  }
  if (S_ISREG(st.st_mode) && uint64_t(st.st_size) > cap) {
    ::close(fd);
    return Error::at(path, "", "a " + what + " of at most " + mib(cap) + hint,
                     std::to_string(uint64_t(st.st_size)) + " bytes");
  }
  std::string out;
  if (S_ISREG(st.st_mode)) out.reserve(size_t(st.st_size));
  std::vector<char> buf(1 << 16);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const Error e = Error::at(path, "", "a readable " + what, errno_text("read"));
      ::close(fd);
      return e;
    }
    if (n == 0) break;
    out.append(buf.data(), size_t(n));
    if (out.size() > cap) {
      ::close(fd);
      return Error::at(path, "", "a " + what + " of at most " + mib(cap) + hint,
                       "more (reading stopped there: an endless device or a growing file?)");
    }
  }
  ::close(fd);
  return out;
}

bool write_all(int fd, const void* data, size_t size)
{
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) {
      errno = EIO;
      return false;
    }
    p += n;
    size -= size_t(n);
  }
  return true;
}

bool same_file(const std::string& a, const std::string& b)
{
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

bool is_special_file(const std::string& path)
{
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  return !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

Status write_file_atomically(const std::string& path_in, const std::string& text)
{
  if (path_in.empty()) return Error::at("", "output file", "a path", "an empty string");
  std::string path = path_in;
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) return Error::at(path, "", "a file to write", "a directory");
  if (exists && !S_ISREG(st.st_mode)) {
    // A device or a FIFO: written in place, never replaced (renaming over /dev/null would unlink it).
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return Error::at(path, "", "a writable file", errno_text("open"));
    if (!write_all(fd, text.data(), text.size())) {
      const Error e = Error::at(path, "", "every byte written", errno_text("write"));
      ::close(fd);
      return e;
    }
    if (::close(fd) != 0) return Error::at(path, "", "every byte written", errno_text("close"));
    return ok_status();
  }
  std::error_code ec;
  // A symbolic link to a file: write the file it names (renaming over the link would replace the link).
  if (std::filesystem::is_symlink(path, ec)) {
    const auto target = std::filesystem::canonical(path, ec);
    if (!ec) path = target.string();
  }
  const std::filesystem::path p(path);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : std::string(".");
  std::string tmpl = dir + "/." + p.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) return Error::at(path, "", "a writable file (a temporary file is made beside it)", errno_text("mkstemp"));
  const std::string tmp(name.data());
  auto fail = [&](const std::string& call) {
    const Error e = Error::at(path, "", "every byte written (nothing was replaced)", errno_text(call));
    ::close(fd);
    ::unlink(tmp.c_str()); // ours: made above
    return e;
  };
  mode_t mode = 0;
  if (exists) {
    mode = st.st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  if (::fchmod(fd, mode) != 0) return fail("fchmod");
  if (!write_all(fd, text.data(), text.size())) return fail("write");
  if (::fsync(fd) != 0) return fail("fsync");
  if (::close(fd) != 0) {
    const Error e = Error::at(path, "", "every byte written (nothing was replaced)", errno_text("close"));
    ::unlink(tmp.c_str());
    return e;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const Error e = Error::at(path, "", "a file that can be replaced", errno_text("rename"));
    ::unlink(tmp.c_str());
    return e;
  }
  return ok_status();
}

} // namespace tp::io
