// libFuzzer target: scenario files (`tensorpath run FILE`: load_scenario_text) and single jobs as a sweep point
// carries them (parse_job_text): JSON into JobSpecs, strict fields, without running anything.
#include "apps/lib/spec_files.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto s = tp::frontend::load_scenario_text(text, "fuzz-scenario.json");
  if (s.ok() && s->jobs.empty()) __builtin_trap(); // a scenario has at least one job
  (void)tp::frontend::parse_job_text(text, "fuzz-point.json", "point 0");
  return 0;
}
