// Reading inputs and writing outputs so that nothing is lost or read without end: every input is read through a
// size cap (an endless device or a runaway file is refused with the cap named), every output is written to a
// temporary file beside its target, checked at every write, flushed and closed, then renamed into place (a full
// disk leaves the old file as it was and is an error naming the file); a target that is not a regular file (a
// device such as /dev/null or /dev/stdout, a FIFO) is written in place and never unlinked. Tests:
// tests/core/file_io_test.cpp.
#pragma once

#include "core/common/result.hpp"

#include <cstdint>
#include <string>

namespace tp::io {

/// The input caps, in bytes. `TENSORPATH_MAX_INPUT_BYTES` overrides both (docs/cli.md#input-size-limits).
constexpr uint64_t SPEC_INPUT_CAP = 64ull << 20; ///< scenarios, sweeps, cases, profiles, platform files, rows
constexpr uint64_t TRACE_INPUT_CAP = 4ull << 30; ///< recorded traces (Kineto files of several GB exist)
constexpr uint64_t ROWS_INPUT_CAP = 1ull << 30;  ///< sweep rows files (10,000 points at most, a few KB each)

/// The cap in force: `default_cap`, or the environment's override when it is set (and valid).
uint64_t input_cap(uint64_t default_cap);

/// The whole file, or an error naming it: missing, a directory, unreadable, or larger than `cap` bytes (checked
/// before reading when the size is known, and while reading otherwise, so /dev/zero ends at the cap). `what`
/// says what the file is for the message ("sweep file", "trace").
Result<std::string> read_file_capped(const std::string& path, const std::string& what, uint64_t cap);

/// Write `text` to `path` as described at the top. Errors name the file and the failed call.
Status write_file_atomically(const std::string& path, const std::string& text);

/// Whether two paths name the same existing file (same device and inode); false if either does not exist.
bool same_file(const std::string& a, const std::string& b);

/// Whether `path` exists and is something other than a regular file or a directory (a device, a FIFO, a socket).
bool is_special_file(const std::string& path);

/// write(2) all of `size` bytes, retrying on EINTR and short writes; false with errno set on failure.
bool write_all(int fd, const void* data, size_t size);

} // namespace tp::io
