// Files of JSON rows (see json_rows.hpp).
#include "apps/lib/json_rows.hpp"

#include <nlohmann/json.hpp>

#include <fstream>

namespace tp::cli {

Status for_each_json_row(const std::string& path, const std::string& option, const std::string& producer,
                         const std::function<Status(const nlohmann::json& row, const std::string& where)>& row)
{
  std::ifstream in(path);
  if (!in) return Error::at(path, option, "a readable file of JSON rows (" + producer + ")", "cannot open it");
  std::string line;
  int line_no = 0, rows = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(line_no);
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return Error::at(where, "", "one JSON object per line (" + producer + ")", "\"" + line.substr(0, 60) + "\"");
    ++rows;
    if (auto st = row(j, where); !st.ok()) return st;
  }
  if (in.bad()) return Error::at(path, option, "a readable file of JSON rows (" + producer + ")", "a read error");
  if (rows == 0) return Error::at(path, "", "at least one row", "none");
  return {};
}

} // namespace tp::cli
