// libFuzzer target: validation case files (`tensorpath validate FILE`: load_cases_text): JSON into ValidationCases
// with their jobs, strict fields, without running anything. A loaded case has a name, a measure, a finite non-zero
// expectation and a tolerance in (0, 1); anything else must be an error naming the file and field.
#include "apps/lib/spec_files.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto cases = tp::frontend::load_cases_text(text, "fuzz-cases.json");
  if (!cases.ok()) {
    if (cases.error().message().empty()) __builtin_trap(); // an error says what is wrong
    return 0;
  }
  if (cases->empty()) __builtin_trap(); // a case file has at least one case
  for (const auto& c : *cases)
    if (c.name.empty() || c.measure.empty() || c.expected == 0 || !std::isfinite(c.expected) ||
        !(c.tolerance > 0 && c.tolerance < 1))
      __builtin_trap();
  return 0;
}
