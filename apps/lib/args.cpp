// Option parsing and help formatting.
#include "apps/lib/args.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace tp::frontend {

std::string ParsedArgs::get(const std::string& name, const std::string& def) const
{
  auto it = values_.find(name);
  return it == values_.end() ? def : it->second;
}

Result<long> parse_integer(const std::string& text, const std::string& field, long lo, long hi)
{
  const Error bad =
      Error::at("", field, "an integer in " + std::to_string(lo) + ".." + std::to_string(hi), "\"" + text + "\"");
  // Digits only (an optional leading minus): no blanks, no "+", no hex, no "1e3".
  const size_t first = !text.empty() && text[0] == '-' ? 1 : 0;
  if (text.size() == first) return bad;
  for (size_t i = first; i < text.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return bad;
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0' || v < lo || v > hi) return bad; // out of long's range: refused, not clamped
  return v;
}

Result<std::vector<long>> parse_integer_list(const std::string& text, const std::string& field, long lo, long hi,
                                             const std::string& what)
{
  const Error bad = Error::at(
      "", field, "a comma-separated list of " + what + " (" + std::to_string(lo) + " to " + std::to_string(hi) + ")",
      "\"" + text + "\"");
  if (text.empty() || text.back() == ',') return bad;
  std::vector<long> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) return bad;
    auto n = parse_integer(item, field, lo, hi);
    if (!n.ok()) return n.error();
    out.push_back(n.value());
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

Result<double> parse_number(const std::string& text, const std::string& field, double lo, double hi)
{
  const Error bad = Error::at("", field, fmt_range(lo, hi), "\"" + text + "\"");
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return bad;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (*end != '\0' || errno == ERANGE || !std::isfinite(v) || v < lo || v > hi) return bad; // NaN, inf, 1e999
  return v;
}

std::string fmt_range(double lo, double hi)
{
  auto num = [](double x) {
    std::ostringstream s;
    s << x;
    return s.str();
  };
  return "a finite number in [" + num(lo) + ", " + num(hi) + "]";
}

Result<long> ParsedArgs::get_int(const std::string& name, long def, long lo, long hi) const
{
  auto it = values_.find(name);
  if (it == values_.end()) return def;
  return parse_integer(it->second, "tensorpath " + command_ + " --" + name, lo, hi);
}

Result<double> ParsedArgs::get_number(const std::string& name, double def, double lo, double hi) const
{
  auto it = values_.find(name);
  if (it == values_.end()) return def;
  return parse_number(it->second, "tensorpath " + command_ + " --" + name, lo, hi);
}

Result<uint64_t> parse_size(const std::string& text)
{
  const std::string expected = "a size in bytes (digits, optionally with K, M, G or T: 64K = 65536) below 2^64";
  if (text.empty()) return Error::at("", "", expected, "an empty string");
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
    ++i;
  if (i == 0) return Error::at("", "", expected, "\"" + text + "\"");
  errno = 0;
  const unsigned long long v = std::strtoull(text.substr(0, i).c_str(), nullptr, 10);
  if (errno == ERANGE) return Error::at("", "", expected, "\"" + text + "\" (too large)");
  std::string suffix = text.substr(i);
  uint64_t mult = 1;
  if (suffix.empty() || suffix == "B")
    mult = 1;
  else if (suffix == "K" || suffix == "KiB" || suffix == "k")
    mult = 1ull << 10;
  else if (suffix == "M" || suffix == "MiB")
    mult = 1ull << 20;
  else if (suffix == "G" || suffix == "GiB")
    mult = 1ull << 30;
  else if (suffix == "T" || suffix == "TiB")
    mult = 1ull << 40;
  else
    return Error::at("", "", "a size suffix K, M, G or T", "\"" + suffix + "\"");
  if (v > std::numeric_limits<uint64_t>::max() / mult)
    return Error::at("", "", expected, "\"" + text + "\" (overflows 64 bits)");
  return uint64_t(v) * mult;
}

Result<uint64_t> ParsedArgs::get_size(const std::string& name, uint64_t def) const
{
  auto it = values_.find(name);
  if (it == values_.end()) return def;
  auto r = parse_size(it->second);
  if (!r.ok()) {
    Error e = r.error();
    e.field = "tensorpath " + command_ + " --" + name;
    return e;
  }
  return r;
}

Result<ParsedArgs> parse_args(const CommandSpec& spec, const std::vector<std::string>& argv)
{
  ParsedArgs out;
  out.command_ = spec.name;
  auto find = [&](const std::string& name, char short_name) -> const OptionSpec* {
    for (const auto& o : spec.options)
      if ((!name.empty() && o.name == name) || (short_name && o.short_name == short_name)) return &o;
    return nullptr;
  };
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") {
      for (size_t j = i + 1; j < argv.size(); ++j) {
        if (out.positional_.size() >= spec.max_positionals)
          return Error::at("", "tensorpath " + spec.name, "fewer arguments", "a stray argument \"" + argv[j] + "\"");
        out.positional_.push_back(argv[j]);
      }
      break;
    }
    const OptionSpec* o = nullptr;
    std::string value;
    bool inline_value = false;
    if (a.rfind("--", 0) == 0) {
      std::string name = a.substr(2);
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        inline_value = true;
      }
      o = find(name, 0);
      for (const auto& [old, instead] : spec.retired)
        if (!o && name == old)
          return Error::at("", "tensorpath " + spec.name, "a known option (--" + old + " was removed: " + instead + ")",
                           "\"" + a + "\"");
      if (!o)
        return Error::at("", "tensorpath " + spec.name, "a known option (see tensorpath " + spec.name + " --help)",
                         "\"" + a + "\"");
    } else if (a.size() >= 2 && a[0] == '-' && !std::isdigit(static_cast<unsigned char>(a[1]))) {
      o = find("", a[1]);
      if (!o)
        return Error::at("", "tensorpath " + spec.name, "a known option (see tensorpath " + spec.name + " --help)",
                         "\"" + a + "\"");
      if (a.size() > 2) {
        value = a.substr(2);
        inline_value = true;
      }
    } else {
      if (out.positional_.size() >= spec.max_positionals)
        return Error::at("", "tensorpath " + spec.name,
                         spec.max_positionals == 0
                             ? std::string("options only (see tensorpath " + spec.name + " --help)")
                             : "at most " + std::to_string(spec.max_positionals) + " argument(s) besides options",
                         "a stray argument \"" + a + "\"");
      out.positional_.push_back(a);
      continue;
    }
    if (o->takes_value) {
      if (!inline_value) {
        if (i + 1 >= argv.size())
          return Error::at("", "tensorpath " + spec.name + " --" + o->name, "a value (" + o->value_name + ")",
                           "nothing");
        value = argv[++i];
      }
      out.values_[o->name] = value;
      out.all_[o->name].push_back(value);
    } else {
      if (inline_value)
        return Error::at("", "tensorpath " + spec.name + " --" + o->name, "no value", "\"" + value + "\"");
      out.values_[o->name] = "1";
    }
  }
  return out;
}

std::string help_text(const CommandSpec& spec)
{
  std::string out =
      "Usage: tensorpath " + spec.name + (spec.usage.empty() ? "" : " " + spec.usage) + "\n\n" + spec.summary + "\n";
  if (!spec.options.empty()) {
    out += "\nOptions:\n";
    for (const auto& o : spec.options) {
      std::string left = "  ";
      left += o.short_name ? std::string("-") + o.short_name + ", " : "    ";
      left += "--" + o.name + (o.takes_value ? " " + o.value_name : "");
      if (left.size() < 30)
        left.resize(30, ' ');
      else
        left += "\n" + std::string(30, ' ');
      out += left + o.help + "\n";
    }
  }
  if (!spec.details.empty()) out += "\n" + spec.details + "\n";
  return out;
}

} // namespace tp::frontend
