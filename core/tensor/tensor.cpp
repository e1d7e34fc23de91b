// dtype names and sizes, shape printing.
#include "core/tensor/tensor.hpp"

namespace tp {

const char* to_string(DataType t)
{
  switch (t) {
  case DataType::FLOAT:
    return "float32";
  case DataType::DOUBLE:
    return "float64";
  case DataType::HALF:
    return "float16";
  case DataType::INT32:
    return "int32";
  case DataType::INT64:
    return "int64";
  case DataType::STRING:
    return "string";
  case DataType::INVALID:
    return "invalid";
  }
  return "?";
}

size_t dtype_size(DataType t)
{
  switch (t) {
  case DataType::FLOAT:
    return 4;
  case DataType::DOUBLE:
    return 8;
  case DataType::HALF:
    return 2;
  case DataType::INT32:
    return 4;
  case DataType::INT64:
    return 8;
  case DataType::STRING:
  case DataType::INVALID:
    return 0;
  }
  return 0;
}

std::string TensorShape::to_string() const
{
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

} // namespace tp
