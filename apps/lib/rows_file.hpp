// Sweep rows files (JSON lines, one row per point): which points a file already holds, and where its last complete
// line ends (a sweep killed mid-write leaves a torn last line, which a resume drops). Shared by `tensorpath sweep`
// and the MPI driver (which must not link SimGrid). Tests: tests/apps/sweep_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace tp::frontend {

/// Point indices of complete rows in a JSON-lines file; `valid_bytes` is where the last complete line ends.
std::vector<size_t> rows_in_file(const std::string& path, uint64_t* valid_bytes = nullptr);

/// Open a rows file for appending. With `resume`, keep its complete rows (their points go to `done`) and drop a torn
/// last line; otherwise start it empty. Returns the descriptor, or -1 with the reason in `error`.
int open_rows_file(const std::string& path, bool resume, std::set<size_t>& done, std::string& error);

/// Whether a row reports an error (it has an "error" field) rather than metrics.
bool is_error_row(const std::string& row);

} // namespace tp::frontend
