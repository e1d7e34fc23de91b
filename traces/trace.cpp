// Common trace helpers and format detection (see trace.hpp).
#include "traces/trace.hpp"
#include "core/common/file_io.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

namespace tp::traces {

double Trace::span() const
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
  return hi > lo ? hi - lo : 0;
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
  std::transform(d.begin(), d.end(), d.begin(), ::tolower);
  for (const char* p : {"torch.", "c10::", "at::"})
    if (d.rfind(p, 0) == 0) d = d.substr(std::string(p).size());
  if (d == "float32" || d == "float" || d == "int32" || d == "int" || d == "uint32") return 4;
  if (d == "float64" || d == "double" || d == "int64" || d == "long" || d == "uint64") return 8;
  if (d == "float16" || d == "half" || d == "bfloat16" || d == "int16" || d == "short") return 2;
  if (d == "int8" || d == "uint8" || d == "bool" || d == "byte" || d == "char") return 1;
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

Result<Trace> parse_trace(const std::string& text, const std::string& file)
{
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return Error::at(file, "byte 0", "a trace", "an empty file");
  if (text[first] == '[') return parse_horovod_timeline(text, file);
  if (text[first] != '{')
    return Error::at(file, "byte " + std::to_string(first),
                     "a trace: TF timeline, Horovod timeline, PyTorch profiler (Kineto) or Chakra JSON",
                     std::string("'") + text[first] + "'");
  if (text.find("\"traceEvents\"") != std::string::npos) {
    const bool kineto =
        text.find("\"nccl:") != std::string::npos || text.find("\"schemaVersion\"") != std::string::npos ||
        text.find("\"deviceProperties\"") != std::string::npos ||
        text.find("\"cat\": \"kernel\"") != std::string::npos || text.find("\"cat\":\"kernel\"") != std::string::npos;
    return kineto ? parse_kineto(text, file) : parse_tf_timeline(text, file);
  }
  if (text.find("_NODE\"") != std::string::npos) return parse_chakra(text, file);
  return Error::at(file, "", "a trace with traceEvents (TF timeline, Kineto) or Chakra nodes", "neither");
}

Result<Trace> read_trace(const std::string& path)
{
  auto text = io::read_file_capped(path, "trace file", io::input_cap(io::TRACE_INPUT_CAP));
  if (!text.ok()) return text.error();
  return parse_trace(text.value(), path);
}

} // namespace tp::traces
