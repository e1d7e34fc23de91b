// mimalloc's run-time options (see mimalloc_options.hpp).
#include "core/common/mimalloc_options.hpp"

#include <dlfcn.h>

namespace tp {

MimallocOptionSet mimalloc20_option_set()
{
  using Version = int (*)();
  auto option_set = reinterpret_cast<MimallocOptionSet>(dlsym(RTLD_DEFAULT, "mi_option_set"));
  auto version = reinterpret_cast<Version>(dlsym(RTLD_DEFAULT, "mi_version"));
  if (!option_set || !version || version() < 200 || version() >= 210) return nullptr;
  return option_set;
}

} // namespace tp
