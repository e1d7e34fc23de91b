// libFuzzer target: sweep files (`tensorpath sweep FILE`: load_sweep_text): the spec, its axes, the expansion
// into points and the check of every point's job (parse_job_text), without running anything.
#include "apps/lib/sweep.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto s = tp::frontend::load_sweep_text(text, "fuzz-sweep.json");
  if (s.ok() && tp::frontend::sweep_points(*s).size() > tp::frontend::MAX_SWEEP_POINTS) __builtin_trap();
  return 0;
}
