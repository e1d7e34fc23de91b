// The `tensorpath` subcommands: each has a spec (options, --help text) and an entry point.
#pragma once

#include "apps/lib/args.hpp"

#include <string>
#include <vector>

namespace tp::cli {

struct Command {
  frontend::CommandSpec spec;
  int (*run)(const frontend::ParsedArgs& args);
};

Command perftest_command();
Command pcie_copy_command();
Command validate_command();
Command run_command();
Command profiles_command();
Command transfer_command();
Command train_command();
Command allreduce_command();
Command emulate_command();
Command sweep_command();
Command plan_command();
Command replay_command();

/// Print an Error as "tensorpath: <message>" on stderr and return the exit code 2 (bad input).
int report_error(const Error& e);

} // namespace tp::cli
