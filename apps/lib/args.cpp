// Option parsing and help formatting.
#include "apps/lib/args.hpp"

#include <cctype>
#include <cstdlib>

namespace tp::frontend {

std::string ParsedArgs::get(const std::string& name, const std::string& def) const
{
  auto it = values_.find(name);
  return it == values_.end() ? def : it->second;
}

Result<long> ParsedArgs::get_int(const std::string& name, long def, long lo, long hi) const
{
  auto it = values_.find(name);
  if (it == values_.end()) return def;
  char* end = nullptr;
  long v = std::strtol(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0' || v < lo || v > hi)
    return Error::at("", "tensorpath " + command_ + " --" + name,
                     "an integer in " + std::to_string(lo) + ".." + std::to_string(hi), "\"" + it->second + "\"");
  return v;
}

Result<uint64_t> parse_size(const std::string& text)
{
  if (text.empty()) return Error::at("", "", "a size (bytes, or with K/M/G)", "an empty string");
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
    ++i;
  if (i == 0) return Error::at("", "", "a size (bytes, or with K/M/G)", "\"" + text + "\"");
  uint64_t v = std::strtoull(text.substr(0, i).c_str(), nullptr, 10);
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
  else
    return Error::at("", "", "a size suffix K, M or G", "\"" + suffix + "\"");
  return v * mult;
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
      for (size_t j = i + 1; j < argv.size(); ++j)
        out.positional_.push_back(argv[j]);
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
