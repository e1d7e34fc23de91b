// Shared command-line helpers (see cli_common.hpp).
#include "apps/lib/cli_common.hpp"
#include "core/common/file_io.hpp"

#include "core/common/suggest.hpp"
#include "core/transports/transport.hpp"

#include <algorithm>
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
    if (!transports::find_transport(n))
      return Error::at("", option, "all, or " + one_of_names(n, transports::transport_names()),
                       unknown_name(n, transports::transport_names()));
    names.push_back(n);
  }
  if (names.empty()) return Error::at("", option, "at least one transport", "nothing");
  return names;
}

std::vector<OptionSpec> transport_flag_options()
{
  std::vector<OptionSpec> out;
  for (const auto* knob : transports::option_knobs())
    if (!knob->cli_flag.empty()) out.push_back({knob->cli_flag, 0, false, "", knob->help});
  return out;
}

Status apply_transport_flags(const ParsedArgs& a, const std::vector<std::string>& runs,
                             transports::TransportOptions& options, const std::string& command)
{
  for (const auto* knob : transports::option_knobs()) {
    if (knob->cli_flag.empty() || !a.has(knob->cli_flag)) continue;
    const std::string owner = transports::knob_transport(knob);
    if (std::find(runs.begin(), runs.end(), owner) == runs.end()) {
      std::string given;
      for (const auto& r : runs)
        given += (given.empty() ? "" : ",") + r;
      return Error::at("", command + " --" + knob->cli_flag, "a run of " + owner + " (the flag changes only its runs)",
                       "--transport " + given);
    }
    knob->set(options, !knob->default_value); // a flag turns its switch from the default
  }
  return ok_status();
}

Result<Location> parse_placement(const std::string& s, const std::string& option)
{
  if (s == "cpu" || s == "host") return Location::host(0);
  // The index is range-checked here (no conversion can overflow); the host profile then says whether it exists.
  const Error bad = Error::at("", option, "cpu, numaN or gpuN (N < 10000)", "\"" + s + "\"");
  for (const char* prefix : {"numa", "gpu"}) {
    const std::string p = prefix;
    if (s.rfind(p, 0) != 0) continue;
    auto n = parse_integer(s.substr(p.size()), option, 0, 9999);
    if (!n.ok()) return bad;
    return p == "gpu" ? Location::gpu(int(n.value())) : Location::host(int(n.value()));
  }
  return bad;
}

Result<std::vector<uint64_t>> size_list(const ParsedArgs& a, uint64_t def)
{
  if (a.has("sweep")) {
    if (a.has("size")) return Error::at("", "--size", "either --size or --sweep (the sweep sets the sizes)", "both");
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
  const bool csv = path.size() > 4 && path.substr(path.size() - 4) == ".csv";
  const std::string text = csv ? transports::TransferLog::csv_header() + log.to_csv() : log.to_json();
  return io::write_file_atomically(path, text);
}

} // namespace tp::frontend
