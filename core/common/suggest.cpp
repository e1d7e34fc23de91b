// Name suggestions (see suggest.hpp).
#include "core/common/suggest.hpp"

#include <algorithm>
#include <cctype>

namespace tp {

std::string to_lower(std::string s)
{
  for (auto& c : s)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

size_t edit_distance(const std::string& a_in, const std::string& b_in)
{
  const std::string a = to_lower(a_in), b = to_lower(b_in);
  std::vector<size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      // two neighbouring letters swapped ("gprc") count as one edit (optimal string alignment)
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], before[j - 2] + 1);
    }
    before = prev;
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_name(const std::string& got, const std::vector<std::string>& valid)
{
  if (got.empty() || got.size() > 200) return {};
  std::string best;
  size_t best_d = SIZE_MAX;
  const std::string g = to_lower(got);
  for (const auto& v : valid) {
    if (v == got) return {};
    const std::string lv = to_lower(v);
    size_t d = edit_distance(g, lv);
    // a prefix ("connectx4" for "connectx4-edr-ib") or a substring is as good as a one-letter typo
    if (lv.rfind(g, 0) == 0 || (g.size() >= 4 && lv.find(g) != std::string::npos)) d = std::min<size_t>(d, 1);
    if (d < best_d) {
      best_d = d;
      best = v;
    }
  }
  // close enough: at most a third of the name's letters wrong (at least one, at most four)
  const size_t allowed = std::clamp<size_t>(got.size() / 3, 1, 4);
  return best_d <= allowed ? best : std::string();
}

std::string one_of_names(const std::string& got, const std::vector<std::string>& valid, size_t max_listed)
{
  std::string out = "one of ";
  for (size_t i = 0; i < valid.size() && i < max_listed; ++i)
    out += (i ? ", " : "") + valid[i];
  if (valid.size() > max_listed) out += ", ... (" + std::to_string(valid.size()) + " in all)";
  if (valid.empty()) out = "a known name (none is defined)";
  (void)got;
  return out;
}

std::string unknown_name(const std::string& got, const std::vector<std::string>& valid)
{
  const std::string close = closest_name(got, valid);
  return "\"" + got + "\"" + (close.empty() ? std::string() : " (did you mean \"" + close + "\"?)");
}

} // namespace tp
