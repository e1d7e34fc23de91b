// `tensorpath run SCENARIO.json`: run every job of a scenario (each in its own child process) and print
// a summary; --json for machine-readable output; --trace FILE for a Chrome trace of the first training job.
#include "apps/commands.hpp"
#include "apps/lib/spec_files.hpp"
#include "core/common/isolated_run.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace tp::cli {

namespace {

int run_scenario(const frontend::ParsedArgs& a)
{
  if (a.positional().size() > 1)
    return report_error(Error::at("", "tensorpath run", "one scenario file (none: the built-in default)",
                                  std::to_string(a.positional().size()) + " arguments"));
  auto sc = a.positional().empty()
                ? frontend::load_scenario_text(frontend::embedded_default_scenario(), "built-in scenarios/default.json")
                : frontend::load_scenario(a.positional()[0]);
  if (!sc.ok()) return report_error(sc.error());
  const bool json = a.has("json");
  nlohmann::json out;
  out["scenario"] = sc->name;
  out["jobs"] = nlohmann::json::array();
  if (!json) std::printf("Scenario %s: %s\n\n", sc->name.c_str(), sc->description.c_str());
  int failures = 0;
  std::vector<std::string> lost; // outputs the jobs could not write
  bool traced = false;
  for (size_t i = 0; i < sc->jobs.size(); ++i) {
    frontend::JobSpec job = sc->jobs[i];
    if (a.has("trace") && !traced && job.kind == frontend::JobSpec::Kind::TRAINING) {
      job.trace_file = a.get("trace");
      traced = true;
    }
    auto child = run_isolated([&job]() -> Result<std::string> {
      auto o = frontend::run_job(job);
      if (!o.ok()) return o.error();
      return frontend::encode_outcome(o.value());
    });
    nlohmann::json jj;
    jj["label"] = job.label;
    jj["hw"] = job.hw;
    jj["network_model"] = job.network_model;
    // Where the job ran: its hardware profile (an incast job has none) and its network model.
    const std::string where = (job.hw.empty() ? "" : job.hw + ", ") + "network model " + job.network_model;
    Result<frontend::JobOutcome> o =
        child.ok() ? frontend::decode_outcome(child.value()) : Result<frontend::JobOutcome>(child.error());
    if (!o.ok()) {
      ++failures;
      jj["error"] = o.error().message();
      if (!json)
        std::printf("[%zu] %s (%s): ERROR %s\n\n", i + 1, job.label.c_str(), where.c_str(),
                    o.error().message().c_str());
    } else {
      jj["metrics"] = o->metrics;
      if (!o->output_lost.empty()) {
        lost.push_back(o->output_lost);
        jj["output_lost"] = o->output_lost;
      }
      // A job that ran but some of whose transports failed (transfers failed, or a step never finished) failed.
      if (!o->failed.empty()) {
        ++failures;
        jj["failed"] = o->failed;
      }
      if (!json) {
        std::printf("[%zu] %s (%s)\n%s", i + 1, job.label.c_str(), where.c_str(), o->report.c_str());
        if (!o->failed.empty()) std::printf("[%zu] FAILED: %zu transport run(s) failed\n", i + 1, o->failed.size());
        std::printf("\n");
      }
    }
    out["jobs"].push_back(jj);
  }
  if (a.has("trace") && !traced)
    std::fprintf(stderr, "tensorpath: --trace: the scenario has no training job, no trace written\n");
  if (json)
    std::printf("%s\n", out.dump(2).c_str());
  else
    std::printf("%zu jobs, %d failed.\n", sc->jobs.size(), failures);
  for (const auto& l : lost)
    std::fprintf(stderr, "tensorpath: output lost: %s\n", l.c_str());
  if (!lost.empty()) return exit_code::OUTPUT_LOST;
  return failures ? 1 : 0;
}

} // namespace

Command run_command()
{
  frontend::CommandSpec s;
  s.max_positionals = 1;
  s.name = "run";
  s.summary = "run a scenario file (jobs on a hardware profile; none: the built-in default) and print a summary";
  s.usage = "[SCENARIO.json] [--json] [--trace FILE]";
  s.options = {{"json", 0, false, "", "print machine-readable JSON instead of the summary"},
               {"trace", 0, true, "FILE",
                "Chrome trace (Perfetto) of the last step of the first training job's first transport"}};
  s.details = "Without a file: the built-in default scenario (scenarios/default.json as built: the HKUST VGG16\n"
              "transport comparison, then its fabric). Scenario format: docs/formats.md.";
  return {s, &run_scenario};
}

} // namespace tp::cli
