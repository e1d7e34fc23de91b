// memcpy bandwidth against working-set size: L2, LLC and DRAM plateaus, with a smooth (harmonic)
// transition where the working set straddles two levels. Yi et al. 2017 observed 20-30 GB/s for ~4 KB
// buffers and 2-4 GB/s beyond 4 MB on E5-2603 v4 hosts: that is validated, not typed in here.
#include "models/cpu_model.hpp"

#include <algorithm>

namespace tp::models {

double CpuProfile::memcpy_bandwidth(double bytes) const
{
  const double ws = 2.0 * bytes; // source + destination
  if (ws <= l2_size || l2_size <= 0) return memcpy_l2_bandwidth;
  if (ws <= l3_size) {
    // Fraction of the working set beyond L2 streams at LLC speed: harmonic mix.
    const double f = (ws - l2_size) / ws;
    return 1.0 / ((1.0 - f) / memcpy_l2_bandwidth + f / memcpy_llc_bandwidth);
  }
  const double f_llc = (l3_size - l2_size) / ws;
  const double f_dram = (ws - l3_size) / ws;
  const double f_l2 = std::max(0.0, 1.0 - f_llc - f_dram);
  return 1.0 / (f_l2 / memcpy_l2_bandwidth + f_llc / memcpy_llc_bandwidth + f_dram / memcpy_dram_bandwidth);
}

double CpuProfile::memcpy_time(double bytes) const
{
  if (bytes <= 0) return memcpy_call_overhead;
  return memcpy_call_overhead + bytes / memcpy_bandwidth(bytes);
}

double CpuProfile::reduce_time(double bytes, int threads) const
{
  if (bytes <= 0) return memcpy_call_overhead;
  // memcpy moves 2 streams (read + write); dst += src moves 3 (2 reads + 1 write) over 1.5x the data. Threads
  // split the range; together they cannot exceed the socket's DRAM bandwidth (3 streams of 1.5x: 2 x bytes/...).
  const int t = threads <= 0 ? cores : std::min(threads, cores);
  double bw = memcpy_bandwidth(1.5 * bytes / t) * t;
  if (memory_bandwidth > 0) bw = std::min(bw, memory_bandwidth * 2.0 / 3.0); // memcpy-equivalent rate at the cap
  return memcpy_call_overhead + 1.5 * bytes / bw;
}

} // namespace tp::models
