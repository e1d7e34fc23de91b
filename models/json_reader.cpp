// Strict JSON reading helpers.
#include "models/json_reader.hpp"
#include "core/common/file_io.hpp"
#include "core/common/json_strict.hpp"
#include "core/common/number_rule.hpp"
#include "core/common/suggest.hpp"

#include <set>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <utility>

namespace tp::json_input {

void fail(const std::string& file, const std::string& field, const std::string& expected, const std::string& got)
{
  throw LoadError{Error::at(file, field, expected, got)};
}

namespace {

template <class Input> json parse_or_fail(Input&& in, const std::string& path)
{
  try {
    return json_strict::parse<json>(std::forward<Input>(in));
  } catch (const json_strict::StrictError& e) { // a key given twice, a number beyond a double: at its field
    fail(path, e.path.empty() ? "(top level)" : e.path, e.expected, e.got);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    fail(path, "byte " + std::to_string(e.byte), "valid JSON", what.substr(what.find(':') + 1));
  } catch (const json::exception& e) {
    // nlohmann reports some malformed input otherwise: out_of_range for a number no type holds (1e400)
    std::string what = e.what();
    fail(path, "", "valid JSON", what.substr(what.find(':') + 1));
  }
}

} // namespace

json read_file(const std::string& path)
{
  auto text = io::read_file_capped(path, "JSON file", io::input_cap(io::SPEC_INPUT_CAP));
  if (!text.ok()) fail(path, "", text.error().expected, text.error().got);
  return parse_or_fail(text.value(), path);
}

json parse_text(const std::string& text, const std::string& file)
{
  return parse_or_fail(text, file);
}

Object::Object(const json& j, std::string file, std::string path)
    : j_(j), file_(std::move(file)), path_(std::move(path))
{
  if (!j_.is_object()) fail(file_, path_.empty() ? "(top level)" : path_, "an object", j_.type_name());
}

const json& Object::get(const std::string& key)
{
  used_.insert(key);
  if (!j_.contains(key)) fail(file_, field(key), "this field", "nothing (missing)");
  return j_.at(key);
}

std::string Object::str(const std::string& key, std::optional<std::string> def)
{
  used_.insert(key);
  if (!j_.contains(key)) {
    if (def) return *def;
    fail(file_, field(key), "a string", "nothing (missing)");
  }
  const json& v = j_.at(key);
  if (!v.is_string()) fail(file_, field(key), "a string", v.type_name());
  return v.get<std::string>();
}

double Object::number(const std::string& key, double lo, double hi, std::optional<double> def)
{
  used_.insert(key);
  if (!j_.contains(key)) {
    if (def) return *def;
    fail(file_, field(key), range_text(lo, hi), "nothing (missing)");
  }
  const json& v = j_.at(key);
  if (!v.is_number()) fail(file_, field(key), range_text(lo, hi), v.type_name());
  const double x = v.get<double>();
  if (!number_ok(x, lo, hi)) fail(file_, field(key), range_text(lo, hi), v.dump());
  return x;
}

long Object::integer(const std::string& key, long lo, long hi, std::optional<long> def)
{
  used_.insert(key);
  if (!j_.contains(key)) {
    if (def) return *def;
    fail(file_, field(key), "an integer", "nothing (missing)");
  }
  const json& v = j_.at(key);
  if (!v.is_number_integer()) fail(file_, field(key), "an integer", v.type_name());
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::max(hi, 0L))) // beyond long: no conversion
    fail(file_, field(key), "an integer in " + std::to_string(lo) + ".." + std::to_string(hi), v.dump());
  const long x = v.get<long>();
  if (x < lo || x > hi)
    fail(file_, field(key), "an integer in " + std::to_string(lo) + ".." + std::to_string(hi), std::to_string(x));
  return x;
}

bool Object::boolean(const std::string& key, bool def)
{
  used_.insert(key);
  if (!j_.contains(key)) return def;
  const json& v = j_.at(key);
  if (!v.is_boolean()) fail(file_, field(key), "true or false", v.type_name());
  return v.get<bool>();
}

uint64_t Object::size(const std::string& key, uint64_t def)
{
  used_.insert(key);
  if (!j_.contains(key)) return def;
  const json& v = j_.at(key);
  if (v.is_number_unsigned() && v.get<uint64_t>() > 0) return v.get<uint64_t>();
  if (v.is_string()) {
    const std::string t = v.get<std::string>();
    size_t i = 0;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i])))
      ++i;
    const std::string suffix = t.substr(i);
    uint64_t mult = 0;
    if (suffix.empty() || suffix == "B")
      mult = 1;
    else if (suffix == "K" || suffix == "KiB")
      mult = 1ull << 10;
    else if (suffix == "M" || suffix == "MiB")
      mult = 1ull << 20;
    else if (suffix == "G" || suffix == "GiB")
      mult = 1ull << 30;
    if (i > 0 && mult > 0) {
      // digit by digit, refusing what does not fit 64 bits once multiplied
      uint64_t n = 0;
      bool fits = true;
      for (size_t k = 0; k < i && fits; ++k) {
        const uint64_t d = uint64_t(t[k] - '0');
        fits = n <= (UINT64_MAX - d) / 10;
        n = fits ? n * 10 + d : 0;
      }
      if (fits && n > 0 && n <= UINT64_MAX / mult) return n * mult;
    }
  }
  fail(file_, field(key), "a positive size (bytes, or a string like \"64K\")", v.dump());
}

void Object::finish(std::initializer_list<const char*> also) const
{
  static const std::set<std::string> always = {"kind", "name", "description", "notes", "$schema"};
  std::set<std::string> known = used_;
  for (const char* a : also)
    known.insert(a);
  for (auto it = j_.begin(); it != j_.end(); ++it)
    if (!known.count(it.key()) && !always.count(it.key())) {
      std::vector<std::string> names(known.begin(), known.end());
      fail(file_, field(it.key()), "a known field: " + one_of_names(it.key(), names, 40),
           "unknown field " + unknown_name(it.key(), names));
    }
}

/// {"value": v, "unit": u, "source": s[, "status", "note"]}, converted to SI. `min_si` guards against nonsense.
double quantity(Object& o, const std::string& key, models::Dimension dim, std::optional<double> def, double min_si,
                std::optional<double> max_si)
{
  if (!o.has(key)) {
    o.accept(key);
    if (def) return *def;
    fail(o.file(), o.field(key), std::string("a quantity {value, unit, source}: ") + models::to_string(dim),
         "nothing (missing)");
  }
  const json& v = o.get(key);
  const std::string f = o.field(key);
  Object q(v, o.file(), f);
  const json& raw = q.get("value");
  if (!raw.is_number()) fail(o.file(), f + ".value", "a number", raw.type_name());
  const double value = raw.get<double>();
  const std::string unit = q.str("unit");
  const std::string source = q.str("source");
  if (source.size() < 3)
    fail(o.file(), f + ".source", "a non-empty source (paper, manual, repository file) for this number",
         "\"" + source + "\"");
  if (q.has("status")) {
    static const std::set<std::string> statuses = {"confirmed", "secondary", "derived", "assumption", "standard"};
    const std::string st = q.str("status");
    if (!statuses.count(st))
      fail(o.file(), f + ".status", "one of confirmed, secondary, derived, assumption, standard", "\"" + st + "\"");
  }
  q.str("note", "");
  q.finish();
  auto si = models::to_si(value, unit, dim);
  if (!si.ok()) fail(o.file(), f + ".unit", si.error().expected, si.error().got);
  // The one rule on the SI value: finite (1e308 Gb/s overflows to infinity bytes/s), within the field's range and
  // the dimension's ceiling, and no negative sign (-0 included).
  const double hi = max_si ? *max_si : models::max_si(dim);
  if (!number_ok(*si, min_si, hi)) {
    const std::string si_unit = models::si_unit(dim);
    const std::string in_si = number_text(*si) + (si_unit.empty() ? "" : " " + si_unit);
    fail(o.file(), f + ".value", range_text(min_si, hi, "a value") + (si_unit.empty() ? "" : " " + si_unit),
         raw.dump() + " " + unit + (unit == si_unit ? "" : " = " + in_si));
  }
  return *si;
}

} // namespace tp::json_input
