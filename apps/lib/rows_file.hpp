// Sweep rows files (JSON lines, one row per point): which points a file already holds, and where its last complete
// line ends (a sweep killed mid-write leaves a torn last line, which a resume drops). Every row carries the hash of
// the sweep spec that made it, so a resume refuses rows of another sweep. A rows file is held by one sweep at a time:
// a lock file beside it (ROWS.lock, flock'ed, holding the PID) makes a second sweep on the same --out fail at once
// with the holder's PID. Every append is checked (a full disk is an error, not a lost row); a file that is not a
// regular one (/dev/null) is written in place, never truncated, unlinked or resumed. Shared by `tensorpath sweep` and
// the MPI driver (which must not link SimGrid). Tests: tests/apps/sweep_test.cpp.
#pragma once

#include "core/common/result.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace tp::frontend {

/// A complete row of a rows file: its point and the spec hash it carries ("" for a row without one).
struct StoredRow {
  size_t point = 0;
  std::string spec;
};

/// Complete rows of a JSON-lines file; `valid_bytes` is where the last complete line ends.
std::vector<StoredRow> stored_rows(const std::string& path, uint64_t* valid_bytes = nullptr);
/// Point indices of the complete rows.
std::vector<size_t> rows_in_file(const std::string& path, uint64_t* valid_bytes = nullptr);

/// A rows file open for appending, locked against a second sweep. Closing (or destroying) releases the lock.
class RowsFile {
public:
  RowsFile() = default;
  RowsFile(const RowsFile&) = delete;
  RowsFile& operator=(const RowsFile&) = delete;
  ~RowsFile();

  /// Append one row (a newline is added) with a single checked write, then fsync: an error names the file.
  Status append(const std::string& row);
  /// Close the file and release the lock; an error (a deferred write error) names the file.
  Status close();
  const std::string& path() const { return path_; }

private:
  friend Result<std::unique_ptr<RowsFile>> open_rows_file(const std::string&, bool, const std::string&,
                                                          std::set<size_t>&);
  std::string path_;
  std::string lock_path_;
  int fd_ = -1;
  int lock_fd_ = -1;
};

/// Open a rows file for a sweep whose spec hash is `spec_hash`. With `resume`, keep its complete rows (their points
/// go to `done`) and drop a torn last line; a row from another spec is an error. Otherwise start it empty
/// (truncated in place, never unlinked). Errors: another sweep holds the file (with its PID), a special file with
/// `resume`, a file that cannot be opened.
Result<std::unique_ptr<RowsFile>> open_rows_file(const std::string& path, bool resume, const std::string& spec_hash,
                                                 std::set<size_t>& done);

/// Whether a row reports an error (it has an "error" field) rather than metrics.
bool is_error_row(const std::string& row);

/// The 64-bit FNV-1a hash of `text`, as 16 hex digits (the spec hash rows carry).
inline std::string text_hash(const std::string& text)
{
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  static const char* hex = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4)
    out[size_t(i)] = hex[h & 15];
  return out;
}

} // namespace tp::frontend
