// gzip'd inputs (a PyTorch profiler writes `.pt.trace.json.gz`): recognised by gzip's magic bytes (1f 8b), not by
// the file's name, and inflated with zlib under the same input cap as a plain file, so that a small file that
// inflates without end (a gzip bomb) is refused naming the cap, and a truncated or corrupt one names the file.
// Tests: tests/traces/gzip_input_test.cpp.
#pragma once

#include "core/common/result.hpp"

#include <cstdint>
#include <string>

namespace tp::io {

/// Whether `data` starts with gzip's magic bytes.
bool is_gzip(const std::string& data);

/// The inflated contents of gzip data (several members, as `cat a.gz b.gz` makes, are inflated one after another),
/// or an error naming `path`: corrupt or truncated data, or more than `cap` bytes once inflated (the message names
/// the cap and TENSORPATH_MAX_INPUT_BYTES). `what` says what the file is ("trace file").
Result<std::string> gunzip_capped(const std::string& data, const std::string& path, const std::string& what,
                                  uint64_t cap);

/// read_file_capped, then gunzip_capped when the file is gzip'd: the cap applies to the file and to its inflated
/// contents.
Result<std::string> read_maybe_gzipped(const std::string& path, const std::string& what, uint64_t cap);

} // namespace tp::io
