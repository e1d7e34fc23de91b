// libFuzzer target: SimGrid platform files as the network part (the XML subset scanner and the route analysis).
#include "models/simgrid_platform.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)tp::models::import_simgrid_platform_text(text, "fuzz.xml");
  return 0;
}
