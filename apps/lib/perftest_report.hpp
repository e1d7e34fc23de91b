// perftest's output format: the banner and the fixed-width result table (BW or latency), plus CSV.
#pragma once

#include "core/microbench/perftest.hpp"

#include <string>

namespace tp::frontend {

std::string perftest_banner(const microbench::PerftestResult& r, const std::string& link_type);
std::string perftest_table(const microbench::PerftestResult& r);
std::string perftest_csv(const microbench::PerftestResult& r);

} // namespace tp::frontend
