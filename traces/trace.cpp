// Common trace helpers and format detection (see trace.hpp).
#include "traces/trace.hpp"
#include "core/common/file_io.hpp"
#include "core/common/gzip_input.hpp"
#include "core/common/suggest.hpp"
#include "traces/steps_internal.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

namespace tp::traces {

double Trace::span() const
{
  const auto [lo, hi] = extent();
  return hi > lo ? hi - lo : 0;
}

std::pair<double, double> Trace::extent() const
{
  double lo = INFINITY, hi = -INFINITY;
  auto see = [&](double s, double d) {
    lo = std::min(lo, s);
    hi = std::max(hi, s + d);
  };
  for (const auto& o : ops)
    see(o.start, o.duration);
  for (const auto& t : transfers)
    see(t.start, t.duration);
  for (const auto& c : collectives)
    see(c.start, c.duration);
  return {lo, hi};
}

std::vector<std::string> Trace::devices() const
{
  std::set<std::string> d;
  for (const auto& o : ops)
    d.insert(o.device);
  return {d.begin(), d.end()};
}

size_t dtype_bytes(std::string d)
{
  d = to_lower(std::move(d));
  for (const char* p : {"torch.", "c10::", "at::", "horovod_", "tf.", "dt_", "np."})
    if (d.rfind(p, 0) == 0) d = d.substr(std::string(p).size());
  // PyTorch's ScalarType names (Kineto's "dtype"), C++ type names (Kineto's "Input type"), NumPy/TF/Horovod names
  for (const char* n : {"float32", "float", "int32", "int", "uint32", "unsigned int", "qint32"})
    if (d == n) return 4;
  for (const char* n : {"float64", "double", "int64", "long", "long int", "long long", "int64_t", "uint64",
                        "unsigned long", "complexfloat", "complex64", "complex<float>", "complex32"})
    if (d == n) return d == "complex32" ? 4 : 8;
  for (const char* n : {"complexdouble", "complex128", "complex<double>"})
    if (d == n) return 16;
  for (const char* n : {"float16", "half", "bfloat16", "int16", "short", "short int", "uint16", "complexhalf"})
    if (d == n) return d == "complexhalf" ? 4 : 2;
  for (const char* n : {"int8", "uint8", "bool", "byte", "char", "signed char", "unsigned char", "qint8", "quint8",
                        "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"})
    if (d == n) return 1;
  return 0;
}

bool parse_human_bytes(const std::string& s, uint64_t& bytes)
{
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || v < 0) return false;
  std::string unit(end);
  double mult = 0;
  if (unit == "B")
    mult = 1;
  else if (unit == "KB" || unit == "KiB" || unit == "kB")
    mult = 1024;
  else if (unit == "MB" || unit == "MiB")
    mult = 1024.0 * 1024;
  else if (unit == "GB" || unit == "GiB")
    mult = 1024.0 * 1024 * 1024;
  else if (unit == "TB" || unit == "TiB")
    mult = 1024.0 * 1024 * 1024 * 1024;
  else
    return false;
  const double b = std::round(v * mult);
  if (!(b < 9007199254740992.0)) return false; // beyond 2^53 bytes: not a tensor
  bytes = uint64_t(b);
  return true;
}

namespace {

Result<Trace> parse_any(const std::string& text, const std::string& file)
{
  if (io::is_gzip(text))
    return Error::at(file, "byte 0", "an uncompressed trace (read_trace inflates gzip'd files; or gunzip it)",
                     "gzip data");
  // Chakra's protobuf form first: its first byte is a length, which may happen to read as '{' or a space.
  if (looks_like_chakra_et(text)) return parse_chakra_et(text, file);
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return Error::at(file, "byte 0", "a trace", "an empty file");
  if (text[first] == '[') return parse_horovod_timeline(text, file);
  const unsigned char c = (unsigned char)text[first];
  if (first == 0 && (c < 0x20 || c >= 0x80)) // binary: as a Chakra .et, whose reader says where it breaks
    return parse_chakra_et(text, file);
  if (text[first] != '{')
    return Error::at(file, "byte " + std::to_string(first),
                     "a trace: TF timeline, Horovod timeline, PyTorch profiler (Kineto), Chakra JSON or Chakra "
                     "protobuf (.et)",
                     std::string("'") + text[first] + "'");
  if (text.find("\"traceEvents\"") != std::string::npos) {
    const bool kineto =
        text.find("\"nccl:") != std::string::npos || text.find("\"schemaVersion\"") != std::string::npos ||
        text.find("\"deviceProperties\"") != std::string::npos ||
        text.find("\"cat\": \"kernel\"") != std::string::npos || text.find("\"cat\":\"kernel\"") != std::string::npos ||
        text.find("\"distributedInfo\"") != std::string::npos || text.find("\"cuda_runtime\"") != std::string::npos ||
        text.find("\"cat\": \"Kernel\"") != std::string::npos || text.find("\"cat\":\"Kernel\"") != std::string::npos;
    return kineto ? parse_kineto(text, file) : parse_tf_timeline(text, file);
  }
  if (text.find("_NODE\"") != std::string::npos) return parse_chakra(text, file);
  return Error::at(file, "", "a trace with traceEvents (TF timeline, Kineto) or Chakra nodes", "neither");
}

} // namespace

Result<Trace> parse_trace(const std::string& text, const std::string& file)
{
  auto t = parse_any(text, file);
  if (!t.ok()) return t;
  if (t->format == "tf_timeline" && t->steps.empty())
    if (auto st = detail::mark_tf_steps(text, t.value()); !st.ok()) return st.error();
  assign_steps(t.value());
  return t;
}

Result<Trace> read_trace(const std::string& path)
{
  auto text = io::read_maybe_gzipped(path, "trace file", io::input_cap(io::TRACE_INPUT_CAP));
  if (!text.ok()) return text.error();
  return parse_trace(text.value(), path);
}

} // namespace tp::traces
