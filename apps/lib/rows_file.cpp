// Sweep rows files (see rows_file.hpp).
#include "apps/lib/rows_file.hpp"
#include "core/common/file_io.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace tp::frontend {

namespace {

std::string errno_text(const std::string& call)
{
  return call + ": " + std::strerror(errno);
}

} // namespace

std::vector<StoredRow> stored_rows(const std::string& path, uint64_t* valid_bytes)
{
  std::vector<StoredRow> rows;
  uint64_t valid = 0, pos = 0;
  if (!io::is_special_file(path)) { // a device has no rows to keep (and /dev/zero has no end)
    std::ifstream f(path, std::ios::binary);
    std::string line;
    while (std::getline(f, line)) {
      const bool complete = !f.eof(); // a line without its newline is a torn write
      pos += line.size() + (complete ? 1 : 0);
      if (!complete) break;
      try {
        const auto j = nlohmann::json::parse(line);
        if (!j.is_object() || !j.contains("point") || !j["point"].is_number_unsigned()) break;
        StoredRow r;
        r.point = j["point"].get<size_t>();
        if (j.contains("spec") && j["spec"].is_string()) r.spec = j["spec"].get<std::string>();
        rows.push_back(r);
        valid = pos;
      } catch (const std::exception&) {
        break; // a corrupt line: everything from here is rewritten
      }
    }
  }
  if (valid_bytes) *valid_bytes = valid;
  return rows;
}

std::vector<size_t> rows_in_file(const std::string& path, uint64_t* valid_bytes)
{
  std::vector<size_t> points;
  for (const auto& r : stored_rows(path, valid_bytes))
    points.push_back(r.point);
  return points;
}

RowsFile::~RowsFile()
{
  (void)close();
}

Status RowsFile::append(const std::string& row)
{
  const std::string line = row + "\n";
  // O_APPEND and one write per row: a kill leaves at most a torn last line, which a resume drops.
  if (!io::write_all(fd_, line.data(), line.size()))
    return Error::at(path_, "", "every row written (the rows so far are kept; --resume continues)",
                     errno_text("write"));
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) && ::fsync(fd_) != 0)
    return Error::at(path_, "", "every row written (the rows so far are kept; --resume continues)",
                     errno_text("fsync"));
  return ok_status();
}

Status RowsFile::close()
{
  Status st = ok_status();
  if (fd_ >= 0) {
    if (::close(fd_) != 0) st = Error::at(path_, "", "every row written", errno_text("close"));
    fd_ = -1;
  }
  if (lock_fd_ >= 0) {
    ::unlink(lock_path_.c_str()); // ours: created and held by this sweep
    ::close(lock_fd_);
    lock_fd_ = -1;
  }
  return st;
}

Result<std::unique_ptr<RowsFile>> open_rows_file(const std::string& path, bool resume, const std::string& spec_hash,
                                                 std::set<size_t>& done)
{
  auto rows = std::make_unique<RowsFile>();
  rows->path_ = path;
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) return Error::at(path, "--out", "a rows file", "a directory");
  const bool special = exists && !S_ISREG(st.st_mode);
  if (special && resume)
    return Error::at(path, "--resume", "a regular rows file to continue", "a device or FIFO (nothing to resume)");
  if (!special) {
    // One sweep per rows file: an flock'ed lock file beside it, with the holder's PID inside.
    rows->lock_path_ = path + ".lock";
    bool locked = false;
    for (int attempt = 0;; ++attempt) {
      rows->lock_fd_ = ::open(rows->lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (rows->lock_fd_ < 0)
        return Error::at(rows->lock_path_, "--out", "a lock file beside the rows file", errno_text("open"));
      if (::flock(rows->lock_fd_, LOCK_EX | LOCK_NB) != 0) break;
      locked = true;
      // Locked: but is it still the file at that path? (The previous holder unlinks it when it ends.)
      struct stat held {
      }, now{};
      if (::fstat(rows->lock_fd_, &held) == 0 && ::stat(rows->lock_path_.c_str(), &now) == 0 &&
          held.st_dev == now.st_dev && held.st_ino == now.st_ino)
        break;
      locked = false;
      ::close(rows->lock_fd_);
      rows->lock_fd_ = -1;
      if (attempt == 10)
        return Error::at(rows->lock_path_, "--out", "a lock file that stays in place", "it kept being replaced");
    }
    if (!locked) {
      char pid[32] = {0};
      const ssize_t n = ::pread(rows->lock_fd_, pid, sizeof pid - 1, 0);
      ::close(rows->lock_fd_);
      rows->lock_fd_ = -1; // not ours: leave the lock file alone
      std::string holder = n > 0 ? std::string(pid, size_t(n)) : std::string("?");
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' '))
        holder.pop_back();
      return Error::at(path, "--out", "a rows file no other sweep is writing",
                       "held by the sweep with PID " + holder + " (lock " + rows->lock_path_ + ")");
    }
    const std::string me = std::to_string(::getpid()) + "\n";
    if (::ftruncate(rows->lock_fd_, 0) != 0 || ::pwrite(rows->lock_fd_, me.data(), me.size(), 0) != ssize_t(me.size()))
      return Error::at(rows->lock_path_, "--out", "a writable lock file", errno_text("write"));
  }
  int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC;
  if (exists && !special) {
    if (resume) {
      uint64_t valid = 0;
      for (const auto& r : stored_rows(path, &valid)) {
        if (r.spec != spec_hash)
          return Error::at(path, "point " + std::to_string(r.point),
                           "rows of this sweep (spec hash " + spec_hash + ") to resume",
                           r.spec.empty() ? std::string("a row without a spec hash (an older tensorpath's?)")
                                          : "a row of another sweep spec (hash " + r.spec +
                                                "): use another --out, or remove the file to start again");
        done.insert(r.point);
      }
      if (::truncate(path.c_str(), off_t(valid)) != 0) // drop a torn last line
        return Error::at(path, "--resume", "a rows file whose torn last line can be dropped", errno_text("truncate"));
    } else {
      flags |= O_TRUNC; // start empty, in place: never unlink what this sweep did not create
    }
  }
  rows->fd_ = ::open(path.c_str(), flags, 0644);
  if (rows->fd_ < 0) return Error::at(path, "--out", "a writable rows file", errno_text("open"));
  return rows;
}

bool is_error_row(const std::string& row)
{
  try {
    const auto j = nlohmann::json::parse(row);
    return j.is_object() && j.contains("error");
  } catch (const std::exception&) {
    return true; // not even a row
  }
}

} // namespace tp::frontend
