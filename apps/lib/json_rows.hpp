// Files of JSON rows (one object per line, as the ns-3 references and `--json` outputs write them): read line by
// line with each row's "file:line", for the commands that compare a model with such a file (incast, roce).
#pragma once

#include "core/common/result.hpp"

#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <string>

namespace tp::cli {

/// Calls `row` with every non-blank line of `path` parsed as one JSON object, and where it is ("file:line"). A file
/// that cannot be opened is an error naming `option`; a line that is not one JSON object, one naming the file and
/// line and `producer` (what writes such rows); a file without a row, an error too. `row`'s error stops the reading
/// and is returned.
Status for_each_json_row(const std::string& path, const std::string& option, const std::string& producer,
                         const std::function<Status(const nlohmann::json& row, const std::string& where)>& row);

} // namespace tp::cli
