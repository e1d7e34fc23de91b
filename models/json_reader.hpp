// Strict reading of JSON input files (profiles, scenarios, validation cases): every accessor knows the file
// and the field path, unknown fields are reported, and failures carry an Error naming both. Include only
// from .cpp files: it brings in nlohmann/json.hpp. Used by models/catalog.cpp and apps/lib/spec_files.cpp.
#pragma once

#include "core/common/result.hpp"
#include "models/quantity.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <set>
#include <string>

namespace tp::json_input {

using json = nlohmann::json;

/// Thrown inside a loader, caught at its public boundary and returned as an Error value.
struct LoadError {
  Error error;
};

[[noreturn]] void fail(const std::string& file, const std::string& field, const std::string& expected,
                       const std::string& got);

/// Parse a file; LoadError with the byte offset on malformed JSON, or with the path of a key given twice in one
/// object (core/common/json_strict.hpp).
json read_file(const std::string& path);
/// Parse JSON text; `file` names it in the LoadError on malformed JSON.
json parse_text(const std::string& text, const std::string& file);

/// A JSON object being read: remembers the keys used so that unknown (misspelt) keys can be reported.
class Object {
public:
  Object(const json& j, std::string file, std::string path);

  std::string field(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const std::string& file() const { return file_; }
  bool has(const std::string& key) const { return j_.contains(key); }

  /// The raw value of a required field.
  const json& get(const std::string& key);
  std::string str(const std::string& key, std::optional<std::string> def = std::nullopt);
  /// A number in [lo, hi] by the rule of core/common/number_rule.hpp (finite, in range, no negative sign when
  /// lo >= 0); every caller states the field's range.
  double number(const std::string& key, double lo, double hi, std::optional<double> def = std::nullopt);
  long integer(const std::string& key, long lo, long hi, std::optional<long> def = std::nullopt);
  bool boolean(const std::string& key, bool def);
  /// A size in bytes: a positive integer or a string such as "64K", "32M".
  uint64_t size(const std::string& key, uint64_t def);
  /// Report keys nobody asked for (besides `also` and the descriptive keys every file may carry).
  void finish(std::initializer_list<const char*> also = {}) const;
  /// Mark a key as known without reading it.
  void accept(const std::string& key) { used_.insert(key); }

private:
  const json& j_;
  std::string file_;
  std::string path_;
  std::set<std::string> used_;
};

/// A quantity {"value": v, "unit": u, "source": s[, "status", "note"]} converted to SI (a missing key gives `def`,
/// or a LoadError without one). The SI value obeys the number rule (core/common/number_rule.hpp) with the range
/// [min_si, max_si]; max_si defaults to the dimension's ceiling (models::max_si).
double quantity(Object& o, const std::string& key, models::Dimension dim, std::optional<double> def = std::nullopt,
                double min_si = 0.0, std::optional<double> max_si = std::nullopt);

} // namespace tp::json_input
