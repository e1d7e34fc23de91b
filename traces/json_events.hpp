// Helpers shared by the trace parsers (internal: include only from traces/*.cpp; it brings nlohmann/json).
#pragma once

#include "core/common/json_strict.hpp"
#include "core/common/number_rule.hpp"
#include "core/common/result.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tp::traces::detail {

using json = nlohmann::json;

/// Run `parse` (a json_strict parse of a file's text) with the errors as the readers give them: a syntax error names
/// the file, the byte offset and nlohmann's reason; a key given twice in one event or a number beyond a double names
/// its path ("traceEvents[7].dur").
template <class Parse> Result<json> strict_errors(const std::string& file, Parse&& parse)
{
  try {
    return parse();
  } catch (const json_strict::StrictError& e) {
    return Error::at(file, e.path.empty() ? "(top level)" : e.path, e.expected, e.got);
  } catch (const json::parse_error& e) {
    return Error::at(file, "byte " + std::to_string(e.byte), "JSON", e.what());
  } catch (const json::exception& e) { // e.g. a number too large for any type (found by fuzzing)
    return Error::at(file, "", "JSON with representable numbers", e.what());
  }
}

/// Parse JSON text (errors as strict_errors says).
inline Result<json> parse_json(const std::string& text, const std::string& file)
{
  return strict_errors(file, [&] { return json_strict::parse<json>(text); });
}

/// Parse a Chrome trace object without holding its events: each element of the top-level "traceEvents" array goes to
/// `sink(index, event)` as soon as it is parsed (in file order), and is then dropped; the document returned holds the
/// other top-level keys (before or after traceEvents) and "traceEvents" as an empty array. Peak memory is the text
/// plus one event plus what the sink keeps, instead of the text plus a DOM of about 10 times its size. Errors as
/// parse_json (a syntax error may come after the sink has seen earlier events).
inline Result<json> parse_json_events(const std::string& text, const std::string& file,
                                      const std::function<void(size_t, json&&)>& sink)
{
  return strict_errors(file, [&] { return json_strict::parse_streaming<json>(text, "traceEvents", sink); });
}

// The ranges of a trace's numbers (the rule of core/common/number_rule.hpp: finite, in range, no negative sign).
constexpr double MAX_TIMESTAMP_US = 1e18;        ///< 31,700 years of microseconds: any epoch timestamp fits
constexpr double MAX_DURATION_US = 1e15;         ///< 31.7 years
constexpr double MAX_COUNT = 9007199254740991.0; ///< 2^53 - 1: bytes, elements (exact in a double)

/// A count that fits: an integer 0 <= v < 2^53 (bytes, elements, ranks); false for NaN, negatives, fractions and
/// absurd sizes.
inline bool count_of(double v, uint64_t& out)
{
  if (!number_ok(v, 0, MAX_COUNT) || v != std::floor(v)) return false;
  out = uint64_t(v);
  return true;
}

/// A number field (or a number in a string, as Chakra writes int64) -> double; false when absent or not a number.
/// The value is not checked: numeric() below applies the rule.
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

/// The numeric field `key` of `o` by the number rule: nothing when absent (or not a number: the caller says whether
/// it is required); the value when it is finite and in [lo, hi] (an integer when `integral`); otherwise an Error at
/// `where`.`key` ("line 7: key" when `where` ends with ':'): NaN or infinity (strings such as "nan", "inf", "1e999"), a
/// negative time or size, a count with a fraction.
inline Result<std::optional<double>> numeric(const json& o, const char* key, double lo, double hi, bool integral,
                                             const std::string& file, const std::string& where)
{
  double v = 0;
  if (!number(o, key, v)) return std::optional<double>();
  if (!number_ok(v, lo, hi) || (integral && v != std::floor(v)))
    return Error::at(file, where.ends_with(':') ? where + " " + key : where + "." + key,
                     range_text(lo, hi, integral ? "an integer" : "a number"), o[key].dump());
  return std::optional<double>(v);
}

/// A timestamp in microseconds (ts, startTimeMicros): [0, MAX_TIMESTAMP_US].
inline Result<std::optional<double>> timestamp(const json& o, const char* key, const std::string& file,
                                               const std::string& where)
{
  return numeric(o, key, 0, MAX_TIMESTAMP_US, false, file, where);
}

/// A duration in microseconds (dur, durationMicros): [0, MAX_DURATION_US].
inline Result<std::optional<double>> duration(const json& o, const char* key, const std::string& file,
                                              const std::string& where)
{
  return numeric(o, key, 0, MAX_DURATION_US, false, file, where);
}

inline std::string text(const json& o, const char* key)
{
  return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : std::string();
}

/// "traceEvents[7]": where event `index` sits in a Chrome trace object.
inline std::string event_at(size_t index)
{
  return "traceEvents[" + std::to_string(index) + "]";
}

inline Error event_error(const std::string& file, size_t index, const std::string& expected, const std::string& got)
{
  return Error::at(file, event_at(index), expected, got);
}

/// Warnings gathered while reading a trace: the first few of each kind in full, then how many more there were (a
/// 50 MB trace must not print 10,000 lines). `add(kind, message)`; `into(list)` appends them.
class Warnings {
public:
  static constexpr size_t SHOWN = 5; ///< per kind

  void add(const std::string& kind, const std::string& message)
  {
    auto& [shown, more] = kinds_[kind];
    if (shown.size() < SHOWN)
      shown.push_back(message);
    else
      ++more;
  }

  void into(std::vector<std::string>& out) const
  {
    for (const auto& [kind, k] : kinds_) {
      out.insert(out.end(), k.first.begin(), k.first.end());
      if (k.second > 0) out.push_back("... and " + std::to_string(k.second) + " more: " + kind);
    }
  }

private:
  std::map<std::string, std::pair<std::vector<std::string>, size_t>> kinds_;
};

} // namespace tp::traces::detail
