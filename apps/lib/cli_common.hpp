// Argument helpers shared by the transfer, train and emulate commands: a transport list ("all" or names), a
// tensor placement (cpu, numaN, gpuN), the --size/--sweep pair, the transports' own flags, and writing transfer
// records to a file.
#pragma once

#include "apps/lib/args.hpp"
#include "core/memory/location.hpp"
#include "core/transports/transfer_record.hpp"
#include "core/transports/transport_options.hpp"

#include <string>
#include <vector>

namespace tp::frontend {

/// "all" or comma-separated registered names; an unknown name is an error naming `option`.
Result<std::vector<std::string>> transport_list(const std::string& arg, const std::string& option);
/// "cpu" (NUMA node 0), "numaN" or "gpuN" (N < 10000); errors name `option`.
Result<Location> parse_placement(const std::string& s, const std::string& option = "placement");
/// --sweep: 4 KiB to 256 MiB in x4 steps; else --size (default `def`).
Result<std::vector<uint64_t>> size_list(const ParsedArgs& a, uint64_t def);
/// The flags of every registered transport's switches (OptionKnob with a cli_flag), in registry order.
std::vector<OptionSpec> transport_flag_options();
/// Turn on the switches whose flags are given. A switch of a transport that none of `runs` is refused (it would
/// change nothing), the error naming `command`'s flag.
Status apply_transport_flags(const ParsedArgs& a, const std::vector<std::string>& runs,
                             transports::TransportOptions& options, const std::string& command);
/// FILE.csv (header + rows) or anything else as JSON.
Status write_records(const std::string& path, const transports::TransferLog& log);

} // namespace tp::frontend
