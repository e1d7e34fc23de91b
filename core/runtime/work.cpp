// Names and sizes for work items.
#include "core/runtime/work.hpp"

namespace tp {

const char* to_string(WorkKind k)
{
  static const char* const names[] = {"memcpy",   "serialize",  "deserialize", "reduce",
                                      "register", "deregister", "gpu_kernel",  "cpu"};
  return names[static_cast<int>(k)];
}

size_t element_size(ElementType t)
{
  switch (t) {
  case ElementType::F32:
    return 4;
  case ElementType::F64:
    return 8;
  case ElementType::I32:
    return 4;
  case ElementType::I64:
    return 8;
  case ElementType::F16:
    return 2;
  }
  return 4;
}

} // namespace tp
