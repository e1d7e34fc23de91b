// Argument helpers shared by the transfer, train and emulate commands: a transport list ("all" or names), a
// tensor placement (cpu, numaN, gpuN), the --size/--sweep pair, and writing transfer records to a file.
#pragma once

#include "apps/lib/args.hpp"
#include "core/memory/location.hpp"
#include "core/transports/transfer_record.hpp"

#include <string>
#include <vector>

namespace tp::frontend {

/// "all" or comma-separated registered names; an unknown name is an error naming `option`.
Result<std::vector<std::string>> transport_list(const std::string& arg, const std::string& option);
/// "cpu" (NUMA node 0), "numaN" or "gpuN" (N < 10000); errors name `option`.
Result<Location> parse_placement(const std::string& s, const std::string& option = "placement");
/// --sweep: 4 KiB to 256 MiB in x4 steps; else --size (default `def`).
Result<std::vector<uint64_t>> size_list(const ParsedArgs& a, uint64_t def);
/// FILE.csv (header + rows) or anything else as JSON.
Status write_records(const std::string& path, const transports::TransferLog& log);

} // namespace tp::frontend
