// JSON parsing for every file a user gives tensorpath (profiles, scenarios, sweeps, validation cases, traces):
// nlohmann's parser with a SAX handler that builds the same document json::parse builds, but refuses a key given
// twice in one object (json::parse silently keeps the last one, so a profile with two "line_rate"s used one of
// them). The check costs one lookup per key in the object being built, so a 50 MB trace parses about as fast as
// with json::parse. Include only from .cpp files that link nlohmann_json (it brings nlohmann/json.hpp).
// Tests: tests/core/json_strict_test.cpp.
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tp::json_strict {

/// What the strict parser refuses beyond malformed JSON, with the path of the value ("nics[0].mtu") so that the
/// reader can name the field: a key given twice in one object, a number no double holds (1e400, which nlohmann
/// reports as out_of_range 406 without saying where).
struct StrictError : std::runtime_error {
  StrictError(std::string path_, std::string expected_, std::string got_)
      : std::runtime_error((path_.empty() ? "(top level)" : path_) + ": expected " + expected_ + ", got " + got_),
        path(std::move(path_)), expected(std::move(expected_)), got(std::move(got_))
  {
  }
  std::string path, expected, got;
};

namespace detail {

/// nlohmann's DOM-building SAX handler, with the duplicate check in key().
template <class Json> class StrictDom {
public:
  explicit StrictDom(Json& root) : root_(root) {}

  bool null() { return value(nullptr); }
  bool boolean(bool v) { return value(v); }
  bool number_integer(typename Json::number_integer_t v) { return value(v); }
  bool number_unsigned(typename Json::number_unsigned_t v) { return value(v); }
  bool number_float(typename Json::number_float_t v, const typename Json::string_t&) { return value(v); }
  bool string(typename Json::string_t& v) { return value(std::move(v)); }
  bool binary(typename Json::binary_t& v) { return value(std::move(v)); }
  bool start_object(std::size_t) { return open(typename Json::value_t(Json::value_t::object)); }
  bool start_array(std::size_t) { return open(typename Json::value_t(Json::value_t::array)); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(typename Json::string_t& k)
  {
    // one lookup: the insertion says whether the key was there already
    auto& object = stack_.back()->template get_ref<typename Json::object_t&>();
    auto [at, inserted] = insert(object, k);
    if (!inserted) {
      duplicate_ = join(container_path(stack_.size()), k);
      key_ = k;
      found_ = true;
      return false;
    }
    slot_ = &at->second;
    return true;
  }

  /// nlohmann calls this with the exception's concrete type (parse_error, out_of_range): thrown as is, as
  /// json::parse throws it, except a number overflow, which names the value's path.
  template <class Exception> bool parse_error(std::size_t, const std::string& token, const Exception& ex)
  {
    if constexpr (std::is_same_v<Exception, nlohmann::detail::out_of_range>)
      if (ex.id == 406) throw StrictError(value_path(), "a number a double holds (magnitude below 1.8e308)", token);
    throw ex;
  }

  bool found_duplicate() const { return found_; }
  const std::string& duplicate_path() const { return duplicate_; }
  const std::string& duplicate_key() const { return key_; }

private:
  static std::string join(const std::string& path, const std::string& key)
  {
    return path.empty() ? key : path + "." + key;
  }

  /// The path of the open container stack_[n - 1] ("" for the top level): each open container is its parent's last
  /// element (arrays) or the value of one of its keys (objects, found by address: only on the error path).
  std::string container_path(size_t n) const
  {
    std::string p;
    for (size_t i = 0; i + 1 < n; ++i) {
      if (stack_[i]->is_array()) {
        p += "[" + std::to_string(stack_[i]->size() - 1) + "]";
        continue;
      }
      for (auto it = stack_[i]->begin(); it != stack_[i]->end(); ++it)
        if (&*it == stack_[i + 1]) p = join(p, it.key());
    }
    return p;
  }

  /// The path of the value being parsed now.
  std::string value_path() const
  {
    if (stack_.empty()) return "";
    const std::string p = container_path(stack_.size());
    const Json& top = *stack_.back();
    if (top.is_array()) return p + "[" + std::to_string(top.size()) + "]";
    for (auto it = top.begin(); it != top.end(); ++it)
      if (&*it == slot_) return join(p, it.key());
    return p;
  }

  /// The key moves into the object only when it is new (std::map), so that a duplicate can still be named.
  template <class Object> static auto insert(Object& object, typename Json::string_t& k)
  {
    if constexpr (requires { object.try_emplace(std::move(k)); })
      return object.try_emplace(std::move(k));
    else
      return object.emplace(k, Json());
  }

  template <class V> Json* place(V&& v)
  {
    if (stack_.empty()) {
      root_ = Json(std::forward<V>(v));
      return &root_;
    }
    Json& top = *stack_.back();
    if (top.is_array()) {
      top.emplace_back(std::forward<V>(v));
      return &top.back();
    }
    *slot_ = Json(std::forward<V>(v));
    return slot_;
  }
  template <class V> bool value(V&& v)
  {
    place(std::forward<V>(v));
    return true;
  }
  bool open(typename Json::value_t t)
  {
    stack_.push_back(place(t));
    return true;
  }
  bool close()
  {
    stack_.pop_back();
    return true;
  }

  Json& root_;
  std::vector<Json*> stack_;
  Json* slot_ = nullptr;
  std::string duplicate_, key_;
  bool found_ = false;
};

} // namespace detail

/// Parse `in` (a string, a std::istream, ...) like Json::parse: nlohmann's exceptions on malformed input, and
/// StrictError on a key repeated in one object or a number beyond a double. `strict` false stops after the first
/// value (concatenated JSON).
template <class Json = nlohmann::json, class Input> Json parse(Input&& in, bool strict = true)
{
  Json out;
  detail::StrictDom<Json> sax(out);
  const bool ok = Json::sax_parse(std::forward<Input>(in), &sax, Json::input_format_t::json, strict);
  if (!ok && sax.found_duplicate())
    throw StrictError(sax.duplicate_path(), "each key once in an object", "\"" + sax.duplicate_key() + "\" again");
  return out;
}

} // namespace tp::json_strict
