// Registration that cannot be half done (issue 14): for every registered transport, every step of
// docs/adding-a-transport.md that leaves a trace in the tree is checked here, so that a skipped step fails a test
// that names it. Lists that can be derived from the registry or the file tree are derived instead (core/CMakeLists.txt,
// tests/fuzz/CMakeLists.txt, scripts/fuzz.sh, the emulator's per-transport loops); the per-transport test case
// macros cannot be (one ctest entry per case), so their lines are checked here. Also: each transport's option knobs
// behave, and the _template/ folder compiles but stays unregistered.
#include "core/transports/_template/template_transport.hpp"
#include "core/transports/transport.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace tp;
namespace fs = std::filesystem;

namespace {

const fs::path ROOT = TENSORPATH_SOURCE_DIR;

std::string read_text(const std::string& relative)
{
  std::ifstream in(ROOT / relative);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Whether `relative` has a line that starts with `line` (so that a commented-out line does not count).
bool has_line(const std::string& relative, const std::string& line)
{
  std::istringstream in(read_text(relative));
  for (std::string l; std::getline(in, l);)
    if (l.rfind(line, 0) == 0) return true;
  return false;
}

std::vector<std::string> registered()
{
  transports::register_builtin_transports();
  return transports::transport_names();
}

/// A transport's wire decoder is fuzzed by fuzz_<name>, except where its wire is another component's.
std::string fuzz_target(const std::string& transport)
{
  // grpc's wire is the RPC frame and the RecvTensor header (core/rpc), fuzzed by fuzz_rpc_frame.
  static const std::map<std::string, std::string> others = {{"grpc", "fuzz_rpc_frame"}};
  auto it = others.find(transport);
  return it == others.end() ? "fuzz_" + transport : it->second;
}

/// Each case macro a transport must appear in: the file and the macro; `rdma_only`: only for transports that need
/// RDMA (TransportInfo::needs_rdma).
struct CaseList {
  const char* file;
  const char* macro;
  bool rdma_only = false;
};
const CaseList SIM_CASE_LISTS[] = {
    {"tests/sim/transport_suite_test.cpp", "TRANSPORT_SUITE"},
    {"tests/sim/transport_variants_test.cpp", "STRATEGY_CASES"},
    {"tests/sim/transport_variants_test.cpp", "FAULT_CASES", true}, // a bad rkey, a QP in error
    {"tests/sim/training_test.cpp", "PS_STEP_CASE"},
    {"tests/sim/training_test.cpp", "ALLREDUCE_STEP_CASE"},
    {"tests/sim/collectives_test.cpp", "ALLREDUCE_CASE"},
    {"tests/sim/monotonicity_property_test.cpp", "MONOTONIC_CASES"},
};
const CaseList EMULATOR_CASE_LISTS[] = {
    {"tests/emulator/emulation_test.cpp", "EMU_TRANSPORT_CASE"},
    {"tests/emulator/emulation_test.cpp", "PEER_DIES_CASE"},
    {"tests/emulator/process_transfer_test.cpp", "PROCESS_TRANSPORT_CASE"},
};
/// (macro, transport) pairs that are left out on purpose, with the reason. The strategy cases check that the memory
/// strategy decides a transport's registrations and copies; these transports do not take it from the strategy.
const std::map<std::pair<std::string, std::string>, const char*> LEFT_OUT = {
    {{"STRATEGY_CASES", "grpc"}, "no RDMA: nothing is registered"},
    {{"STRATEGY_CASES", "verbs_v1"}, "copies every tensor through its own pinned buffer per (peer, tensor)"},
    {{"STRATEGY_CASES", "mpi"}, "the MPI library model registers through its own cache, whatever the strategy"},
};

void check_case_lists(const std::string& name, int step, const CaseList* begin, const CaseList* end)
{
  const bool rdma = transports::find_transport(name)->needs_rdma;
  for (auto l = begin; l != end; ++l) {
    const std::string line = std::string(l->macro) + "(\"" + name + "\")";
    const bool left_out = LEFT_OUT.count({l->macro, name}) > 0;
    if ((l->rdma_only && !rdma) || left_out) {
      INFO(l->file << " has the line " << line << ", yet it is left out on purpose here: drop that from LEFT_OUT");
      CHECK((left_out ? !has_line(l->file, line) : true));
      continue;
    }
    INFO("docs/adding-a-transport.md step " << step << ": " << l->file << " lacks the line " << line);
    CHECK(has_line(l->file, line));
  }
}

} // namespace

TEST_CASE("every transport folder is registered, and every registered transport has its folder", "[quick][registry]")
{
  const auto names = registered();
  REQUIRE(names.size() >= 6);
  for (const auto& n : names) {
    INFO("docs/adding-a-transport.md step 1: core/transports/" << n << "/ with " << n << ".hpp and " << n << ".cpp");
    CHECK(fs::is_regular_file(ROOT / "core/transports" / n / (n + ".hpp")));
    CHECK(fs::is_regular_file(ROOT / "core/transports" / n / (n + ".cpp")));
    const auto* info = transports::find_transport(n);
    REQUIRE(info);
    CHECK(info->make);
    CHECK_FALSE(info->description.empty());
    CHECK_FALSE(info->on_failure.empty());
  }
  // A folder nobody registered (rdma/ is shared code, _template/ the copy source).
  const std::set<std::string> known(names.begin(), names.end());
  for (const auto& e : fs::directory_iterator(ROOT / "core/transports")) {
    const std::string folder = e.path().filename().string();
    if (!e.is_directory() || folder == "rdma" || folder == "_template") continue;
    INFO("docs/adding-a-transport.md step 2: core/transports/"
         << folder << "/ is not registered in core/transports/registry.cpp");
    CHECK(known.count(folder) == 1);
  }
}

TEST_CASE("every registered transport has its README with the five sections", "[quick][registry]")
{
  for (const auto& n : registered()) {
    const std::string readme = "core/transports/" + n + "/README.md";
    for (const char* section : {"Scope and limitations", "Usage", "Examples and tests", "Validation", "References"}) {
      INFO("docs/adding-a-transport.md step 6: " << readme << " lacks the section \"## " << section << "\"");
      CHECK(has_line(readme, std::string("## ") + section));
    }
  }
}

TEST_CASE("every registered transport has its section in docs/protocols.md", "[quick][registry]")
{
  for (const auto& n : registered()) {
    INFO("docs/adding-a-transport.md step 5: docs/protocols.md lacks the section \"## " << n << "\"");
    CHECK(has_line("docs/protocols.md", "## " + n));
  }
}

TEST_CASE("every registered transport has its simulator test cases", "[quick][registry]")
{
  for (const auto& n : registered())
    check_case_lists(n, 7, std::begin(SIM_CASE_LISTS), std::end(SIM_CASE_LISTS));
}

TEST_CASE("every registered transport has its emulator test cases", "[quick][registry]")
{
  for (const auto& n : registered())
    check_case_lists(n, 8, std::begin(EMULATOR_CASE_LISTS), std::end(EMULATOR_CASE_LISTS));
}

TEST_CASE("every registered transport's wire has its fuzz target with seeds", "[quick][registry]")
{
  for (const auto& n : registered()) {
    const std::string t = fuzz_target(n);
    INFO("docs/adding-a-transport.md step 9, for " << n << ": tests/fuzz/" << t << ".cpp, seeds in tests/fuzz/seeds/"
                                                   << t
                                                   << "/ (tests/fuzz/make_wire_seeds.py), a row in docs/fuzzing.md");
    CHECK(fs::is_regular_file(ROOT / "tests/fuzz" / (t + ".cpp")));
    if (t != "fuzz_rpc_frame") { // the RPC frame's seeds are made by the target itself (scripts/fuzz.sh)
      CHECK(fs::is_directory(ROOT / "tests/fuzz/seeds" / t));
      CHECK((fs::is_directory(ROOT / "tests/fuzz/seeds" / t) && !fs::is_empty(ROOT / "tests/fuzz/seeds" / t)));
    }
    CHECK(has_line("docs/fuzzing.md", "| `" + t + "` |"));
  }
}

TEST_CASE("every registered transport has its example scenario and expected output", "[quick][registry]")
{
  for (const auto& n : registered()) {
    const std::string example = "scenarios/examples/" + n + ".json";
    INFO("docs/adding-a-transport.md step 10: " << example << " naming \"" << n
                                                << "\", and scenarios/expected/examples/" << n
                                                << ".out (scripts/refresh-expected.sh)");
    CHECK(read_text(example).find("\"" + n + "\"") != std::string::npos);
    CHECK(fs::is_regular_file(ROOT / "scenarios/expected/examples" / (n + ".out")));
  }
}

TEST_CASE("transport option knobs set and read their own options, with unique flags and fields", "[quick][registry]")
{
  std::set<std::string> flags, fields;
  size_t knobs = 0;
  for (const auto& n : registered()) {
    for (const auto& knob : transports::find_transport(n)->options) {
      ++knobs;
      INFO(n << ": knob " << knob.json_field << " / --" << knob.cli_flag);
      REQUIRE(knob.set);
      REQUIRE(knob.get);
      CHECK_FALSE(knob.help.empty());
      CHECK((!knob.json_field.empty() || !knob.cli_flag.empty()));
      if (!knob.json_field.empty()) CHECK(fields.insert(knob.json_field).second);
      if (!knob.cli_flag.empty()) CHECK(flags.insert(knob.cli_flag).second);
      transports::TransportOptions o;
      CHECK(knob.get(o) == knob.default_value);
      knob.set(o, !knob.default_value);
      CHECK(knob.get(o) == !knob.default_value);
      // A copy carries the transport's own options; the original keeps its own when the copy changes.
      transports::TransportOptions copy = o;
      CHECK(knob.get(copy) == !knob.default_value);
      knob.set(copy, knob.default_value);
      CHECK(knob.get(copy) == knob.default_value);
      CHECK(knob.get(o) == !knob.default_value);
    }
  }
  CHECK(transports::option_knobs().size() == knobs);
  // Today's user-settable knobs, with their names (tests/apps check their messages).
  CHECK(fields ==
        std::set<std::string>{"mpi_optimal_path", "mpi_nonblocking_recv", "mpi_typed_counts", "ar_chunk_trains"});
  CHECK(flags == std::set<std::string>{"mpi-optimal-path", "mpi-nonblocking-recv", "ar-chunk-by-chunk"});
}

TEST_CASE("the _template transport compiles with core but is not registered", "[quick][registry]")
{
  const auto info = transports::template_transport_info();
  CHECK(info.name == "template");
  CHECK(info.make);
  CHECK(transports::find_transport(info.name) == nullptr);
  REQUIRE(info.options.size() == 1);
  transports::TransportOptions o;
  info.options[0].set(o, true);
  CHECK(o.of<transports::TemplateOptions>().example_switch);
  for (const char* section : {"Scope and limitations", "Usage", "Examples and tests", "Validation", "References"})
    CHECK(has_line("core/transports/_template/README.md", std::string("## ") + section));
}
