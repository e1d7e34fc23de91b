// Sweep rows files (see rows_file.hpp).
#include "apps/lib/rows_file.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
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

int open_rows_file(const std::string& path, bool resume, std::set<size_t>& done, std::string& error)
{
  std::error_code ec;
  if (resume && std::filesystem::exists(path)) {
    uint64_t valid = 0;
    for (size_t p : rows_in_file(path, &valid))
      done.insert(p);
    std::filesystem::resize_file(path, valid, ec); // drop a torn last line
  } else {
    std::filesystem::remove(path, ec);
  }
  if (ec) {
    error = "cannot keep only its complete rows: " + ec.message();
    return -1;
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) error = std::string("cannot open for appending: ") + std::strerror(errno);
  return fd;
}

bool is_error_row(const std::string& row)
{
  try {
    const auto j = nlohmann::json::parse(row);
    return j.is_object() && j.contains("error");
  } catch (const std::exception&) {
    return true; // not even a row
  }
}

} // namespace tp::frontend
