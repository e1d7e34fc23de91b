// Table layout follows perftest's RESULT_FMT/REPORT_FMT (src/perftest_parameters.h), with both Gb/s and
// MB/s columns (perftest prints one or the other depending on --report_gbits).
#include "apps/lib/perftest_report.hpp"

#include <fmt/format.h>

namespace tp::frontend {

using microbench::Metric;

static const char* const RULE =
    "---------------------------------------------------------------------------------------\n";

std::string perftest_banner(const microbench::PerftestResult& r, const std::string& link_type)
{
  const auto& c = r.config;
  std::string out = RULE;
  out += fmt::format("                    {} {} Test\n", microbench::to_string(c.verb),
                     c.metric == Metric::BW ? "BW" : "Latency");
  out += fmt::format(" Device         : {}\n", r.device);
  out += fmt::format(" Number of qps  : {:<8d}Transport type : IB\n", c.qps);
  out += fmt::format(" Connection type: RC      Using SRQ      : OFF\n");
  if (c.metric == Metric::BW) out += fmt::format(" TX depth       : {}\n", c.tx_depth);
  out += fmt::format(" Mtu            : {}[B]\n", int(c.mtu));
  out += fmt::format(" Link type      : {}\n", link_type);
  out += fmt::format(" Buffer         : {}\n", r.buffer_location);
  out += fmt::format(" Simulated      : yes (tensorpath SimGrid fabric model)\n");
  out += RULE;
  return out;
}

std::string perftest_table(const microbench::PerftestResult& r)
{
  std::string out;
  if (r.config.metric == Metric::BW) {
    out +=
        fmt::format(" {:<10} {:<14} {:<18} {:<20} {:<14} {:<17} {:<18}\n", "#bytes", "#iterations", "BW peak[Gb/sec]",
                    "BW average[Gb/sec]", "MsgRate[Mpps]", "BW peak[MB/sec]", "BW average[MB/sec]");
    for (const auto& b : r.bw)
      out += fmt::format(" {:<10} {:<14} {:<18.2f} {:<20.2f} {:<14.6f} {:<17.2f} {:<18.2f}\n", b.bytes, b.iterations,
                         b.bw_peak * 8e-9, b.bw_average * 8e-9, b.msg_rate * 1e-6, b.bw_peak / 1048576.0,
                         b.bw_average / 1048576.0);
  } else {
    out += fmt::format(" {:<7} {:<12} {:<13} {:<13} {:<16} {:<13} {:<15} {:<22} {:<24}\n", "#bytes", "#iterations",
                       "t_min[usec]", "t_max[usec]", "t_typical[usec]", "t_avg[usec]", "t_stdev[usec]",
                       "99% percentile[usec]", "99.9% percentile[usec]");
    for (const auto& l : r.lat)
      out += fmt::format(" {:<7} {:<12} {:<13.2f} {:<13.2f} {:<16.2f} {:<13.2f} {:<15.2f} {:<22.2f} {:<24.2f}\n",
                         l.bytes, l.iterations, l.t_min * 1e6, l.t_max * 1e6, l.t_typical * 1e6, l.t_avg * 1e6,
                         l.t_stdev * 1e6, l.p99 * 1e6, l.p999 * 1e6);
  }
  out += RULE;
  return out;
}

std::string perftest_csv(const microbench::PerftestResult& r)
{
  std::string out;
  const char* verb = microbench::to_string(r.config.verb);
  if (r.config.metric == Metric::BW) {
    out += "verb,bytes,iterations,qps,bw_peak_gbps,bw_avg_gbps,msg_rate_mpps,bw_peak_MBps,bw_avg_MBps\n";
    for (const auto& b : r.bw)
      out += fmt::format("{},{},{},{},{:.4f},{:.4f},{:.6f},{:.3f},{:.3f}\n", verb, b.bytes, b.iterations, r.config.qps,
                         b.bw_peak * 8e-9, b.bw_average * 8e-9, b.msg_rate * 1e-6, b.bw_peak / 1048576.0,
                         b.bw_average / 1048576.0);
  } else {
    out += "verb,bytes,iterations,t_min_us,t_max_us,t_typical_us,t_avg_us,t_stdev_us,p99_us,p999_us\n";
    for (const auto& l : r.lat)
      out += fmt::format("{},{},{},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f}\n", verb, l.bytes, l.iterations,
                         l.t_min * 1e6, l.t_max * 1e6, l.t_typical * 1e6, l.t_avg * 1e6, l.t_stdev * 1e6, l.p99 * 1e6,
                         l.p999 * 1e6);
  }
  return out;
}

} // namespace tp::frontend
