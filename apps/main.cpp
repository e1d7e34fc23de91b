// tensorpath: the command line. Thin: parses arguments, calls the libraries, prints.
#include "apps/commands.hpp"
#include "core/common/result.hpp"
#include "models/catalog.hpp"

#include <cerrno>
#include <dlfcn.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#ifndef TENSORPATH_VERSION
#define TENSORPATH_VERSION "0.0.0"
#endif

namespace tp::cli {

int report_error(const Error& e)
{
  std::fprintf(stderr, "tensorpath: %s\n", e.message().c_str());
  return exit_code::BAD_INPUT;
}

int report_io_error(const Error& e)
{
  std::fprintf(stderr, "tensorpath: output lost: %s\n", e.message().c_str());
  return exit_code::OUTPUT_LOST;
}

} // namespace tp::cli

namespace {

/// Options every subcommand takes, added here once rather than by each command.
const tp::frontend::OptionSpec COMMON_OPTIONS[] = {
    {"models-dir", 0, true, "DIR",
     "look for hardware profiles in DIR first (repeatable; then TENSORPATH_MODELS_DIR, then the built-in models/hw; "
     "docs/adding-a-hardware-profile.md)"},
};

std::vector<tp::cli::Command> commands()
{
  std::vector<tp::cli::Command> all = {
      tp::cli::run_command(),        tp::cli::perftest_command(), tp::cli::pcie_copy_command(),
      tp::cli::transfer_command(),   tp::cli::train_command(),    tp::cli::allreduce_command(),
      tp::cli::collective_command(), tp::cli::incast_command(), tp::cli::roce_command(), tp::cli::emulate_command(),
      tp::cli::sweep_command(),      tp::cli::plan_command(),     tp::cli::replay_command(),
      tp::cli::validate_command(),   tp::cli::profiles_command()};
  for (auto& c : all)
    c.spec.options.insert(c.spec.options.end(), std::begin(COMMON_OPTIONS), std::end(COMMON_OPTIONS));
  return all;
}

/// --models-dir DIR (any number, any subcommand): the profile search path of this process, and of the processes it
/// starts (the MPI sweep driver and its `tensorpath sweep --point` children), through TENSORPATH_MODELS_DIR.
tp::Status apply_models_dirs(const tp::frontend::ParsedArgs& args)
{
  namespace fs = std::filesystem;
  std::vector<std::string> dirs;
  for (const auto& d : args.get_all("models-dir")) {
    std::error_code ec;
    if (!fs::is_directory(d, ec))
      return tp::Error::at(d, "--models-dir", "a directory of hardware profiles", "no such directory");
    dirs.push_back(fs::absolute(d).lexically_normal().string());
  }
  if (dirs.empty()) return tp::ok_status();
  tp::models::set_models_dirs(dirs);
  std::string env;
  for (const auto& d : dirs)
    env += (env.empty() ? "" : ":") + d;
  if (const char* old = std::getenv("TENSORPATH_MODELS_DIR"); old && *old) env += std::string(":") + old;
  ::setenv("TENSORPATH_MODELS_DIR", env.c_str(), 1);
  return tp::ok_status();
}

void usage(std::FILE* out)
{
  std::fprintf(out, "Usage: tensorpath <command> [options]\n\n"
                    "tensorpath simulates and emulates the RDMA tensor path of distributed deep-learning training:\n"
                    "NICs, PCIe, NUMA and the transports between workers and parameter servers.\n\nCommands:\n");
  for (const auto& c : commands())
    std::fprintf(out, "  %-12s %s\n", c.spec.name.c_str(), c.spec.summary.c_str());
  std::fprintf(out, "  %-12s %s\n", "version", "print the version");
  std::fprintf(out,
               "\nRun `tensorpath <command> --help` for the options of a command. A run whose estimate exceeds the\n"
               "budget (TENSORPATH_TIME_LIMIT, default 5m; TENSORPATH_MEMORY_LIMIT, default: the free memory) is\n"
               "refused before it starts, with the estimate (docs/cli.md).\n");
}

/// Standard output is a result too: a full disk or a closed pipe under `> file` must not pass for success.
int checked_stdout(int rc)
{
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    const int err = errno;
    std::fprintf(stderr, "tensorpath: output lost: standard output: %s\n", err ? std::strerror(err) : "write error");
    return rc == 0 ? tp::cli::exit_code::OUTPUT_LOST : rc;
  }
  return rc;
}

/// The malloc that serves this process, found at run time: the build links one (TENSORPATH_ALLOCATOR), and --version
/// shows whether it took effect (a linker that drops an unreferenced library would leave the system's in place).
const char* malloc_in_use()
{
  using InHeap = bool (*)(const void*);
  auto in_heap = reinterpret_cast<InHeap>(dlsym(RTLD_DEFAULT, "mi_is_in_heap_region"));
  void* p = std::malloc(64);
  const bool mimalloc = in_heap && in_heap(p);
  std::free(p);
  return mimalloc ? "mimalloc" : "system";
}

} // namespace

int main(int argc, char** argv)
{
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(stdout);
    return 0;
  }
  if (name == "version" || name == "--version") {
    std::printf("tensorpath %s (malloc: %s; built for %s)\n", TENSORPATH_VERSION, malloc_in_use(), TENSORPATH_ALLOCATOR);
    return 0;
  }
  for (const auto& c : commands()) {
    if (c.spec.name != name) continue;
    std::vector<std::string> args(argv + 2, argv + argc);
    for (const auto& a : args)
      if (a == "--help" || a == "-h") {
        std::fputs(tp::frontend::help_text(c.spec).c_str(), stdout);
        return 0;
      }
    auto parsed = tp::frontend::parse_args(c.spec, args);
    if (!parsed.ok()) return tp::cli::report_error(parsed.error());
    if (auto st = apply_models_dirs(parsed.value()); !st.ok()) return tp::cli::report_error(st.error());
    const int rc = c.run(parsed.value());
    return checked_stdout(rc);
  }
  std::fprintf(stderr, "tensorpath: unknown command \"%s\"\n\n", name.c_str());
  usage(stderr);
  return 2;
}
