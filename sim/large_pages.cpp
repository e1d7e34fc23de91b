// Large pages for large simulations (see large_pages.hpp).
#include "sim/large_pages.hpp"

#include "core/common/mimalloc_options.hpp"

#include <cstdlib>
#include <fstream>
#include <string>

namespace tp::sim {

namespace {

/// Huge pages reserved (hugetlbfs) or transparent ones given on request; false where neither file says so.
bool kernel_offers_huge_pages()
{
  if (std::ifstream f("/proc/sys/vm/nr_hugepages"); f) {
    long reserved = 0;
    if (f >> reserved && reserved > 0) return true;
  }
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled"); // "always [madvise] never"
  std::string modes;
  std::getline(thp, modes);
  return modes.find("[always]") != std::string::npos || modes.find("[madvise]") != std::string::npos;
}

} // namespace

Result<bool> use_large_pages_for(double estimated_peak_bytes)
{
  bool allowed = true;
  if (const char* v = std::getenv("TENSORPATH_LARGE_PAGES"); v && *v) {
    const std::string value = v;
    if (value != "0" && value != "1")
      return Error::at("", "TENSORPATH_LARGE_PAGES",
                       "0 (4 KiB pages) or 1 (the default: 2 MiB pages for a training job estimated at " +
                           std::to_string(int(LARGE_PAGES_FROM_BYTES / (1 << 30))) + " GiB or more)",
                       "'" + value + "'");
    allowed = value == "1";
  }
  if (!allowed || !(estimated_peak_bytes >= LARGE_PAGES_FROM_BYTES) || !kernel_offers_huge_pages()) return false;
  // Under glibc (sanitizer builds, a build without mimalloc) or another mimalloc than 2.0, whose option numbers are
  // not these, nothing changes.
  const MimallocOptionSet option_set = mimalloc20_option_set();
  if (!option_set) return false;
  constexpr int MI_OPTION_LARGE_OS_PAGES = 6; // mimalloc.h's mi_option_large_os_pages (2.0)
  option_set(MI_OPTION_LARGE_OS_PAGES, 1);
  return true;
}

} // namespace tp::sim
