// Formatting of tp::Error messages.
#include "core/common/result.hpp"

namespace tp {

std::string Error::message() const
{
  const std::string t = text();
  return code.empty() ? t : code + ": " + t;
}

std::string Error::text() const
{
  std::string out;
  auto append = [&out](const std::string& part, const char* sep) {
    if (part.empty()) return;
    if (!out.empty()) out += sep;
    out += part;
  };
  append(file, "");
  append(field, ": ");
  if (!expected.empty() || !got.empty()) {
    std::string what;
    if (!expected.empty()) what = "expected " + expected;
    if (!got.empty()) what += (what.empty() ? "got " : ", got ") + got;
    append(what, ": ");
  }
  if (!detail.empty()) {
    if (out.empty())
      out = detail;
    else
      out += " (" + detail + ")";
  }
  if (out.empty()) out = "unknown error";
  return out;
}

} // namespace tp
