// Helpers shared by the trace parsers (internal: include only from traces/*.cpp; it brings nlohmann/json).
#pragma once

#include "core/common/result.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace tp::traces::detail {

using json = nlohmann::json;

/// Parse JSON text; a syntax error names the file, the byte offset and nlohmann's reason.
inline Result<json> parse_json(const std::string& text, const std::string& file)
{
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    return Error::at(file, "byte " + std::to_string(e.byte), "JSON", e.what());
  } catch (const json::exception& e) { // e.g. a number too large for any type (found by fuzzing)
    return Error::at(file, "", "JSON with representable numbers", e.what());
  }
}

/// A count that fits: 0 <= v < 2^53 (bytes, elements, ranks); false for NaN, negatives and absurd sizes.
inline bool count_of(double v, uint64_t& out)
{
  if (!(v >= 0) || v >= 9007199254740992.0) return false;
  out = uint64_t(v);
  return true;
}

/// A number field (or a number in a string, as Chakra writes int64) -> double; false when absent or not a number.
inline bool number(const json& o, const char* key, double& out)
{
  if (!o.is_object() || !o.contains(key)) return false;
  const json& v = o[key];
  if (v.is_number()) {
    out = v.get<double>();
    return true;
  }
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    char* end = nullptr;
    out = std::strtod(s.c_str(), &end);
    return !s.empty() && *end == 0;
  }
  return false;
}

inline std::string text(const json& o, const char* key)
{
  return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : std::string();
}

inline Error event_error(const std::string& file, size_t index, const std::string& expected, const std::string& got)
{
  return Error::at(file, "traceEvents[" + std::to_string(index) + "]", expected, got);
}

} // namespace tp::traces::detail
