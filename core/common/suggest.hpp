// "Did you mean" for unknown names: the closest valid name by edit distance, and a short list of the valid ones, so
// that an error about a misspelt profile, transport, model, field or metric says what would have worked.
// Tests: tests/core/suggest_test.cpp.
#pragma once

#include <string>
#include <vector>

namespace tp {

/// `s` in lower case (ASCII letters; other bytes unchanged): names compared without regard to case.
std::string to_lower(std::string s);

/// Edit distance (insertions, deletions, substitutions, swaps of neighbours; case-insensitive).
size_t edit_distance(const std::string& a, const std::string& b);

/// The valid name closest to `got`, if it is close enough to be a likely typo (or `got` is a prefix or a
/// case-insensitive match of it); empty otherwise.
std::string closest_name(const std::string& got, const std::vector<std::string>& valid);

/// "one of a, b, c" (at most `max_listed` names, then ", ... (N in all)"). For the `expected` part of an Error.
std::string one_of_names(const std::string& got, const std::vector<std::string>& valid, size_t max_listed = 16);

/// "\"got\"", followed by " (did you mean \"x\"?)" when a close valid name exists. For the `got` part of an Error.
std::string unknown_name(const std::string& got, const std::vector<std::string>& valid);

} // namespace tp
