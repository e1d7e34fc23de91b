// libFuzzer target: the trace readers (gzip'd input, format detection, TF timeline, Horovod timeline, Kineto,
// Chakra) and the step replay over whatever they accept. Bad input must be an Error, never a crash or an out-of-bounds
// read.
#include "core/common/gzip_input.hpp"
#include "traces/replay.hpp"
#include "traces/trace.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  std::string text(reinterpret_cast<const char*>(data), size);
  if (tp::io::is_gzip(text)) { // as read_trace does, under a small cap
    auto inflated = tp::io::gunzip_capped(text, "fuzz.json.gz", "trace file", 16u << 20);
    if (!inflated.ok()) return 0;
    text = inflated.value();
  }
  auto t = tp::traces::parse_trace(text, "fuzz.json");
  if (t.ok()) (void)tp::traces::replay_step(t.value(), {1e-6}, {2e-6});
  return 0;
}
