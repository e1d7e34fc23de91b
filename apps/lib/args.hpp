// A small command-line parser for the `tensorpath` subcommands: long/short options with or without a
// value, positionals, generated --help text, and errors that name the option and what was expected.
#pragma once

#include "core/common/result.hpp"

#include <map>
#include <string>
#include <vector>

namespace tp::frontend {

struct OptionSpec {
  std::string name;    ///< long name without dashes ("size")
  char short_name = 0; ///< 0: none
  bool takes_value = false;
  std::string value_name; ///< shown in --help ("N")
  std::string help;
};

struct CommandSpec {
  std::string name;
  std::string summary;
  std::string usage; ///< after "tensorpath <name> "
  std::vector<OptionSpec> options;
  std::string details; ///< extra paragraphs for --help
  /// Positional arguments the command takes (files, names); more are an error, not silently ignored.
  size_t max_positionals = 0;
  /// Options that were removed (long name without dashes) and what to use instead: refused, saying so.
  std::vector<std::pair<std::string, std::string>> retired;
};

class ParsedArgs {
public:
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  std::string get(const std::string& name, const std::string& def = {}) const;
  Result<long> get_int(const std::string& name, long def, long lo, long hi) const;
  /// A finite number in [lo, hi] (NaN, infinities and overflow are refused).
  Result<double> get_number(const std::string& name, double def, double lo, double hi) const;
  /// Sizes accept plain bytes or K/M/G suffixes (binary: 64K = 65536).
  Result<uint64_t> get_size(const std::string& name, uint64_t def) const;
  const std::vector<std::string>& positional() const { return positional_; }
  /// Every value of a repeatable option, in command-line order (get() returns the last).
  std::vector<std::string> get_all(const std::string& name) const
  {
    auto it = all_.find(name);
    return it == all_.end() ? std::vector<std::string>{} : it->second;
  }

  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> all_;
  std::vector<std::string> positional_;
  std::string command_;
};

Result<ParsedArgs> parse_args(const CommandSpec& spec, const std::vector<std::string>& argv);
std::string help_text(const CommandSpec& spec);
/// Parse "64K", "1M", "65536", "2G" into bytes; a value that does not fit 64 bits is an error, never wrapped.
Result<uint64_t> parse_size(const std::string& text);
/// A decimal integer in [lo, hi], digits only; out of range (or of long's range) is an error naming `field`.
Result<long> parse_integer(const std::string& text, const std::string& field, long lo, long hi);
/// A comma-separated list of integers in [lo, hi] ("2,4,8"): at least one, no empty item; the error names `field`
/// and says the list is of `what` ("sender counts").
Result<std::vector<long>> parse_integer_list(const std::string& text, const std::string& field, long lo, long hi,
                                             const std::string& what);
/// A finite decimal number in [lo, hi]; NaN, infinities and overflow are errors naming `field`.
Result<double> parse_number(const std::string& text, const std::string& field, double lo, double hi);
/// "a finite number in [lo, hi]".
std::string fmt_range(double lo, double hi);

} // namespace tp::frontend
