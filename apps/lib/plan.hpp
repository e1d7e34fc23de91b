// Capacity questions over sweep rows: which options (a row's params: transport, NIC, model, workers, ...) reach a
// target (e.g. scaling_efficiency >= 0.9), ranked by a cost (by default the NIC's line rate, so "the lowest line
// rate that gets there"), each with its bottleneck: the largest part of the step's critical path (compute, copies,
// registration, PCIe, network, PS sums and updates, waiting). The engine of `tensorpath plan`.
// Tests: tests/apps/plan_test.cpp.
#pragma once

#include "core/common/result.hpp"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tp::frontend {

struct PlanRow {
  size_t point = 0;
  std::vector<std::pair<std::string, std::string>> params; ///< field -> value (strings unquoted)
  std::map<std::string, double> metrics;
  std::string error;
  std::string bottleneck; ///< the row's own account of what bounds it (a data_parallel job's), if any
  std::string param(const std::string& k) const;
};

/// Rows of a sweep's JSON-lines file; a malformed line is an error naming the file and the line.
Result<std::vector<PlanRow>> read_plan_rows(const std::string& path);

struct PlanQuery {
  std::string metric = "scaling_efficiency";
  std::string op = ">="; ///< >=, <=, >, <
  double value = 0.9;
  std::vector<std::pair<std::string, std::string>> where; ///< param == value
  std::string cost = "nic_line_rate";                     ///< a param, a metric, or nic_line_rate
};

/// "scaling_efficiency>=0.9" -> metric, op, value.
Status parse_target(const std::string& text, PlanQuery& q);

struct PlanOption {
  PlanRow row;
  double cost = 0;
  bool meets = false;
  /// the largest critical-path part, or "" without a breakdown, followed by the row's own account when it has one
  std::string bottleneck;
};

/// A query's names checked against the rows: the target metric must be one some row reports, every --where field a
/// param of the rows and its value one they hold, a --cost a param or a metric. A typo is an error with the valid
/// names (and a "did you mean"), never an empty answer. `rows_file` names the file in errors.
Status check_query(const std::vector<PlanRow>& rows, const PlanQuery& q, const std::string& rows_file);

/// Options that pass `where`, those meeting the target first (cheapest first, then the best target metric), then
/// the others (best target metric first). `cost_of` turns a row into its cost (e.g. the NIC's line rate).
std::vector<PlanOption> rank_options(const std::vector<PlanRow>& rows, const PlanQuery& q,
                                     const std::function<double(const PlanRow&)>& cost_of);

std::string plan_table(const std::vector<PlanOption>& options, const PlanQuery& q, size_t top);

} // namespace tp::frontend
