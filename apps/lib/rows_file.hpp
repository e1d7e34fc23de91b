// Sweep rows files (JSON lines, one row per point): which points a file already holds, and where its last complete
// line ends (a sweep killed mid-write leaves a torn last line, which a resume drops). Shared by `tensorpath sweep`
// and the MPI driver (which must not link SimGrid). Tests: tests/apps/sweep_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tp::frontend {

/// Point indices of complete rows in a JSON-lines file; `valid_bytes` is where the last complete line ends.
std::vector<size_t> rows_in_file(const std::string& path, uint64_t* valid_bytes = nullptr);

} // namespace tp::frontend
