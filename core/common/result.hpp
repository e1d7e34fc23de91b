// Error values and Result<T>: how tensorpath reports bad input and failed calls without exceptions.
// An Error names where the problem is (file, field), what was expected and what was found, so that a
// user can fix a scenario or profile from the message alone. Tests: tests/core/result_test.cpp.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace tp {

/// A recoverable error: bad input, an unsupported operation, a failed verbs call.
struct Error {
  std::string file;     ///< input file, or empty when the error is not about a file
  std::string field;    ///< field path inside the file (e.g. "nics[0].line_rate"), or the operation
  std::string expected; ///< what was expected
  std::string got;      ///< what was found
  std::string detail;   ///< free text when the four fields above do not say it all
  std::string code;     ///< optional status class for protocol errors ("Aborted", "Cancelled", "Unavailable", ...)

  /// One line: "file: field: expected X, got Y (detail)"; empty parts are skipped.
  std::string message() const;
  /// The message without the status class: what travels next to the code in a peer's error status.
  std::string text() const;

  static Error at(std::string file, std::string field, std::string expected, std::string got)
  {
    return Error{std::move(file), std::move(field), std::move(expected), std::move(got), {}, {}};
  }
  static Error msg(std::string text) { return Error{{}, {}, {}, {}, std::move(text), {}}; }
  /// A protocol error with a status class, as TensorFlow's Status (code + message).
  static Error status(std::string code, std::string text)
  {
    return Error{{}, {}, {}, {}, std::move(text), std::move(code)};
  }
  /// Prefix the file and a field path (used when a nested parser returns an error).
  Error& in_file(const std::string& f)
  {
    if (file.empty()) file = f;
    return *this;
  }
};

/// Either a value or an Error. C++20 has no std::expected, so this is a small stand-in.
template <class T> class [[nodiscard]] Result {
public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() &
  {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const&
  {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() &&
  {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const Error& error() const
  {
    assert(!ok());
    return std::get<1>(v_);
  }
  Error& error()
  {
    assert(!ok());
    return std::get<1>(v_);
  }

private:
  std::variant<T, Error> v_;
};

/// Result of an operation with no value.
template <> class [[nodiscard]] Result<void> {
public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const
  {
    assert(!ok_);
    return error_;
  }

private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;
inline Status ok_status()
{
  return Status{};
}

} // namespace tp

/// Return the error of a failed Result from the enclosing function.
#define TP_TRY(expr)                                                                                                   \
  do {                                                                                                                 \
    auto&& tp_try_result_ = (expr);                                                                                    \
    if (!tp_try_result_.ok()) return tp_try_result_.error();                                                           \
  } while (0)
