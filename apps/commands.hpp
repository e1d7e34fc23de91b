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
Command collective_command();
Command emulate_command();
Command sweep_command();
Command plan_command();
Command replay_command();
Command incast_command();
Command roce_command();

/// The exit codes of every subcommand (docs/cli.md#exit-codes).
namespace exit_code {
constexpr int OK = 0;
constexpr int FAILED = 1;      ///< it ran, and a job, transport, case or point failed (or missed its target)
constexpr int BAD_INPUT = 2;   ///< arguments or input files are wrong, or the job is beyond the budget: nothing ran
constexpr int OUTPUT_LOST = 3; ///< a result could not be written (disk full, permissions): the run's output is lost
constexpr int SKIPPED = 77;    ///< what the command needs is absent here (no RDMA device): skipped, not failed
} // namespace exit_code

/// Print an Error as "tensorpath: <message>" on stderr and return the exit code 2 (bad input).
int report_error(const Error& e);
/// Print an Error about an output that could not be written and return the exit code 3.
int report_io_error(const Error& e);

} // namespace tp::cli
