// libFuzzer target: the trace readers (format detection, TF timeline, Horovod timeline, Kineto, Chakra) and the
// step replay over whatever they accept. Bad input must be an Error, never a crash or an out-of-bounds read.
#include "traces/replay.hpp"
#include "traces/trace.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto t = tp::traces::parse_trace(text, "fuzz.json");
  if (t.ok()) (void)tp::traces::replay_step(t.value(), {1e-6}, {2e-6});
  return 0;
}
