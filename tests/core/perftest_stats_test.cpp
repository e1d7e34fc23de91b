// perftest's statistics: percentiles and the peak-bandwidth window search.
#include "core/microbench/perftest.hpp"

#include <catch2/catch.hpp>

using namespace tp::microbench;

TEST_CASE("Latency statistics: min, median, mean, stdev and percentiles", "[quick]")
{
  std::vector<double> s;
  for (int i = 1; i <= 1000; ++i)
    s.push_back(i * 1e-6);
  LatRow r = latency_stats(8, s);
  CHECK(r.t_min == Approx(1e-6));
  CHECK(r.t_max == Approx(1000e-6));
  CHECK(r.t_typical == Approx(501e-6));
  CHECK(r.t_avg == Approx(500.5e-6));
  CHECK(r.p99 == Approx(990e-6));
  CHECK(r.p999 == Approx(999e-6));
  CHECK(r.t_stdev == Approx(288.675e-6).epsilon(1e-3));
  CHECK(latency_stats(8, {}).iterations == 0);
}

TEST_CASE("Peak bandwidth is the best window of consecutive completions", "[quick]")
{
  // Four messages of 1000 B: posted at 0, completed at 10, 11, 12, 40 us. The best window is [0..2]:
  // 3 messages in 12 us.
  std::vector<double> posted{0, 0, 0, 0}, completed{10e-6, 11e-6, 12e-6, 40e-6};
  CHECK(peak_bandwidth(1000, posted, completed) == Approx(3 * 1000 / 12e-6));
  CHECK(peak_bandwidth(1000, {}, {}) == 0);
}
