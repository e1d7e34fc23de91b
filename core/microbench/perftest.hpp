// perftest look-alike (linux-rdma/perftest: ib_{write,read,send}_{bw,lat}) written against the engine
// interfaces only, so it runs on the simulated fabric and on the emulator's devices alike. A server and a
// client exchange QP endpoints and MR keys over the byte stream (as perftest does over TCP), connect RC
// QPs and run the bandwidth or latency test for each message size. Output formatting: perftest_report.hpp.
// Tests: tests/sim/microbench_test.cpp. CLI: `tensorpath perftest`.
#pragma once

#include "core/common/result.hpp"
#include "core/device/device.hpp"
#include "core/memory/location.hpp"
#include "core/runtime/runtime.hpp"
#include "core/stream/stream.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tp::microbench {

enum class Verb { WRITE, READ, SEND };
enum class Metric { BW, LAT };
const char* to_string(Verb v);
/// "write", "read" or "send"; false for anything else.
bool parse_verb(const std::string& text, Verb& out);

struct PerftestConfig {
  Verb verb = Verb::WRITE;
  Metric metric = Metric::BW;
  std::vector<uint64_t> sizes{65536};
  uint64_t iterations = 0; ///< 0: 5000 for bandwidth, 1000 for latency
  int qps = 1;
  int tx_depth = 128;   ///< outstanding sends per QP (bandwidth tests)
  int rx_depth = 512;   ///< receives posted per QP (SEND tests)
  int inline_size = -1; ///< -1: latency tests inline up to min(220, device limit); bandwidth tests never
  uint16_t port = 18515;
  verbs::Mtu mtu = verbs::Mtu::MTU_1024;

  uint64_t effective_iterations() const { return iterations ? iterations : (metric == Metric::BW ? 5000 : 1000); }
  /// perftest -a: 2 B to 8 MiB in powers of two.
  static std::vector<uint64_t> all_sizes();
};

/// One side of the test: the interfaces of one (simulated or real) process.
struct PerftestSide {
  std::string name; ///< process name, used to connect the stream
  Runtime* runtime = nullptr;
  verbs::Device* device = nullptr;
  StreamNetwork* streams = nullptr;
  Location buffer_location = Location::host(0);
};

struct BwRow {
  uint64_t bytes = 0;
  uint64_t iterations = 0; ///< per QP
  double bw_peak = 0;      ///< bytes/s
  double bw_average = 0;   ///< bytes/s
  double msg_rate = 0;     ///< messages/s
  double seconds = 0;      ///< test duration (first post to last completion)
};

struct LatRow {
  uint64_t bytes = 0;
  uint64_t iterations = 0;
  double t_min = 0, t_max = 0, t_typical = 0, t_avg = 0, t_stdev = 0, p99 = 0, p999 = 0; ///< seconds
};

struct PerftestResult {
  PerftestConfig config;
  std::string device;
  verbs::DeviceAttr attr;
  std::string buffer_location;
  std::vector<BwRow> bw;
  std::vector<LatRow> lat;
  uint64_t operations = 0; ///< work requests completed over the whole run
};

/// Runs server and client in the current executor(s). `done` is called once, on the client's runtime.
class Perftest {
public:
  Perftest(PerftestSide server, PerftestSide client, PerftestConfig config);
  ~Perftest();
  void start(std::function<void(Result<PerftestResult>)> done);

  struct Impl;

private:
  std::shared_ptr<Impl> impl_;
};

/// Latency statistics as perftest prints them, from per-iteration samples (seconds).
LatRow latency_stats(uint64_t bytes, std::vector<double> samples);
/// Peak bandwidth as perftest computes it: the best (j-i+1)*bytes / (tcompleted[j] - tposted[i]).
double peak_bandwidth(uint64_t bytes, const std::vector<double>& posted, const std::vector<double>& completed);

} // namespace tp::microbench
