// JSON parsing for every file a user gives tensorpath (profiles, scenarios, sweeps, validation cases, traces):
// nlohmann's parser with a SAX handler that builds the same document json::parse builds, but refuses a key given
// twice in one object (json::parse silently keeps the last one, so a profile with two "line_rate"s used one of
// them). The check costs one lookup per key in the object being built, so a 50 MB trace parses about as fast as
// with json::parse. parse_streaming hands a large file's top-level array (a trace's traceEvents) over one element at
// a time instead of holding it. Include only from .cpp files that link nlohmann_json (it brings nlohmann/json.hpp).
// Tests: tests/core/json_strict_test.cpp.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
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

/// nlohmann's DOM-building SAX handler, with the duplicate check in key(). With a `stream_key`, the elements of the
/// top-level object's array of that name are handed to `sink(index, element)` one at a time, as each is complete, and
/// not kept: the array stays in the document, empty (see parse_streaming).
template <class Json> class StrictDom {
public:
  using Sink = std::function<void(std::size_t, Json&&)>;
  explicit StrictDom(Json& root) : root_(root) {}
  StrictDom(Json& root, std::string stream_key, Sink sink)
      : root_(root), stream_key_(std::move(stream_key)), sink_(std::move(sink))
  {
  }

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
    stream_next_ = sink_ && stack_.size() == 1 && k == stream_key_;
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
        p += "[" + std::to_string(offset(stack_[i]) + stack_[i]->size() - 1) + "]";
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
    if (top.is_array()) return p + "[" + std::to_string(offset(&top) + top.size()) + "]";
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
    stream_next_ = false;
    deliver();
    return true;
  }
  bool open(typename Json::value_t t)
  {
    stack_.push_back(place(t));
    if (stream_next_ && t == Json::value_t::array) stream_ = stack_.back();
    stream_next_ = false;
    return true;
  }
  bool close()
  {
    if (stack_.back() == stream_) stream_ = nullptr; // the streamed array ends
    stack_.pop_back();
    deliver();
    return true;
  }

  /// Elements of the streamed array already handed to the sink (0 for any other container).
  std::size_t offset(const Json* container) const { return container == stream_ ? streamed_ : 0; }

  /// When the streamed array's last element is complete: hand it to the sink and drop it.
  void deliver()
  {
    if (stream_ == nullptr || stack_.empty() || stack_.back() != stream_) return;
    auto& elements = stream_->template get_ref<typename Json::array_t&>();
    Json element = std::move(elements.back());
    elements.pop_back();
    sink_(streamed_++, std::move(element));
  }

  Json& root_;
  std::vector<Json*> stack_;
  Json* slot_ = nullptr;
  std::string duplicate_, key_;
  bool found_ = false;
  std::string stream_key_;
  Sink sink_;
  Json* stream_ = nullptr;   ///< the array being streamed, while it is open
  bool stream_next_ = false; ///< the key just read is stream_key_ at the top level
  std::size_t streamed_ = 0;
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

/// parse() for a file too large to hold as a document (a 50 MB trace): the elements of the top-level object's array
/// `key` ("traceEvents") go to `sink(index, element)` one at a time, in file order, as each is parsed, so that only
/// one is held at once; the document returned has every other key (in any order, before or after `key`) and `key`
/// as an empty array. Errors as parse(), with the element's index in paths ("traceEvents[12].ts"); the sink may have
/// seen the elements before a syntax error.
template <class Json = nlohmann::json, class Input>
Json parse_streaming(Input&& in, const std::string& key, std::function<void(std::size_t, Json&&)> sink)
{
  Json out;
  detail::StrictDom<Json> sax(out, key, std::move(sink));
  const bool ok = Json::sax_parse(std::forward<Input>(in), &sax, Json::input_format_t::json, true);
  if (!ok && sax.found_duplicate())
    throw StrictError(sax.duplicate_path(), "each key once in an object", "\"" + sax.duplicate_key() + "\" again");
  return out;
}

} // namespace tp::json_strict
