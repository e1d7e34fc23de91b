// Design-space sweeps: a base job (as in a scenario) and axes of values, combined as a product or zipped into
// points; every point runs in its own worker process (SimGrid allows one simulation per process; a crash or a
// timeout becomes that point's error row), up to `jobs` at a time, and its row is appended to a JSON-lines file as
// soon as it finishes. Restarting with `resume` skips the points already in the file (a torn last line from a
// killed run is dropped) so that no finished row is lost or written twice. Rows hold only deterministic content:
// the same spec gives the same rows. Format: docs/formats.md#sweeps. Tests: tests/apps/sweep_test.cpp.
#pragma once

#include "apps/lib/rows_file.hpp"
#include "core/common/result.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tp::frontend {

struct SweepAxis {
  std::string field;               ///< job field ("transport", "size", "hw", ...), or a label for object values
  std::vector<std::string> values; ///< each a JSON value, as text; an object sets each of its fields
};

struct SweepSpec {
  std::string name;
  std::string file;
  std::string base;              ///< the base job, JSON text
  std::vector<SweepAxis> axes;   ///< in file order
  bool zip = false;              ///< zip the axes (equal lengths) instead of their product
  double point_timeout = 600;    ///< seconds per point
  std::vector<std::string> keep; ///< metrics to keep in rows (empty: all)
  std::string hash;              ///< of what decides the rows (base, axes, combine, metrics): every row carries it
};

/// Most points a sweep may have (each is a simulation; a larger design space is split into several sweeps).
constexpr uint64_t MAX_SWEEP_POINTS = 10000;

/// Load a sweep file and check every point's job (without running anything).
Result<SweepSpec> load_sweep(const std::string& path);
/// The same from JSON text; `path` stands for the file in error messages.
Result<SweepSpec> load_sweep_text(const std::string& text, const std::string& path);

struct SweepPoint {
  size_t index = 0;
  std::vector<std::pair<std::string, std::string>> params; ///< field -> JSON value text
  std::string job;                                         ///< the point's job, JSON text
};

/// Every point of the sweep, in a fixed order (the product varies the last axis fastest).
std::vector<SweepPoint> sweep_points(const SweepSpec& spec);

struct SweepOptions {
  std::string out;           ///< JSON-lines file
  int jobs = 1;              ///< worker processes at a time
  bool resume = false;       ///< keep the rows already in `out` and run only the missing points
  int shard = 0, shards = 1; ///< run the points whose index % shards == shard
  bool progress = false;     ///< a progress line on stderr
};

struct SweepSummary {
  size_t total = 0;   ///< points in this shard
  size_t skipped = 0; ///< already in the file (resume)
  size_t ran = 0;
  size_t errors = 0;
  double seconds = 0;
  std::string lost; ///< non-empty: a row could not be written (why); the sweep stopped there, earlier rows are kept
};

/// Run the points (or the missing ones) and append their rows to `out`.
Result<SweepSummary> run_sweep(const SweepSpec& spec, const SweepOptions& options);

/// The row of one point (what run_sweep appends), run in a worker process.
std::string run_point_row(const SweepSpec& spec, const SweepPoint& p);
/// The row of one point, run in this process (one simulation per process: `tensorpath sweep --point I`, which the
/// MPI driver's ranks run).
std::string point_row_here(const SweepSpec& spec, const SweepPoint& p);

/// Convert a rows file to CSV (point, params..., metrics..., error), rows sorted by point.
Status rows_to_csv(const std::string& jsonl, const std::string& csv);

} // namespace tp::frontend
