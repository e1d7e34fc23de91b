// Sweep rows files (see rows_file.hpp).
#include "apps/lib/rows_file.hpp"

#include <nlohmann/json.hpp>

#include <fstream>

namespace tp::frontend {

std::vector<size_t> rows_in_file(const std::string& path, uint64_t* valid_bytes)
{
  std::vector<size_t> points;
  std::ifstream f(path, std::ios::binary);
  uint64_t valid = 0, pos = 0;
  std::string line;
  while (std::getline(f, line)) {
    const bool complete = !f.eof(); // a line without its newline is a torn write
    pos += line.size() + (complete ? 1 : 0);
    if (!complete) break;
    try {
      const auto j = nlohmann::json::parse(line);
      if (j.contains("point") && j["point"].is_number_unsigned()) points.push_back(j["point"].get<size_t>());
      valid = pos;
    } catch (const std::exception&) {
      break; // a corrupt line: everything from here is rewritten
    }
  }
  if (valid_bytes) *valid_bytes = valid;
  return points;
}

} // namespace tp::frontend
