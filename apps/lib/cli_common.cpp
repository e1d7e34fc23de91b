// Shared command-line helpers (see cli_common.hpp).
#include "apps/lib/cli_common.hpp"

#include "core/transports/transport.hpp"

#include <cctype>
#include <cstdio>
#include <sstream>

namespace tp::frontend {

Result<std::vector<std::string>> transport_list(const std::string& arg, const std::string& option)
{
  transports::register_builtin_transports();
  if (arg == "all") return transports::transport_names();
  std::vector<std::string> names;
  std::stringstream ss(arg);
  for (std::string n; std::getline(ss, n, ',');) {
    if (!transports::find_transport(n)) return Error::at("", option, "a known transport (or all)", "\"" + n + "\"");
    names.push_back(n);
  }
  if (names.empty()) return Error::at("", option, "at least one transport", "nothing");
  return names;
}

Result<Location> parse_placement(const std::string& s)
{
  if (s == "cpu" || s == "host") return Location::host(0);
  auto digits = [&](size_t from) {
    if (from >= s.size()) return false;
    for (size_t i = from; i < s.size(); ++i)
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    return true;
  };
  if (s.rfind("numa", 0) == 0 && digits(4)) return Location::host(std::stoi(s.substr(4)));
  if (s.rfind("gpu", 0) == 0 && digits(3)) return Location::gpu(std::stoi(s.substr(3)));
  return Error::at("", "placement", "cpu, numaN or gpuN", "\"" + s + "\"");
}

Result<std::vector<uint64_t>> size_list(const ParsedArgs& a, uint64_t def)
{
  if (a.has("sweep")) {
    std::vector<uint64_t> sizes;
    for (uint64_t s = 4096; s <= (256ull << 20); s *= 4)
      sizes.push_back(s);
    return sizes;
  }
  auto size = a.get_size("size", def);
  if (!size.ok()) return size.error();
  return std::vector<uint64_t>{size.value()};
}

Status write_records(const std::string& path, const transports::TransferLog& log)
{
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return Error::at(path, "", "a writable file", "cannot open");
  const bool csv = path.size() > 4 && path.substr(path.size() - 4) == ".csv";
  const std::string text = csv ? transports::TransferLog::csv_header() + log.to_csv() : log.to_json();
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  return ok_status();
}

} // namespace tp::frontend
