// SimGrid platform files (XML, platform version 4.x) as the network part of a cluster profile ("network": "x.xml"):
// the subset read is a <cluster> (prefix/suffix/radical hosts, each with a private link of bw/lat, and an optional
// backbone bb_bw/bb_lat), or a <zone routing="Full"> whose routes between hosts cross host links and at most one
// shared link (a switch). What it gives tensorpath: the hosts (how many, their names), each host's link bandwidth and
// latency (the NIC's line rate and port latency) and the backbone's latency (the switch). Anything else in the file
// (speeds, disks, properties) is ignored; anything malformed is an error naming the file and line, and so is what
// would be misread: a zone routing other than Full, a cluster topology other than FLAT, routes between zones, an
// attribute given twice, a DOCTYPE with an internal subset (entities are never expanded, so markup hidden in one is
// never read as elements; CDATA is text), and bandwidths or latencies breaking the number rule.
// Tests: tests/models/simgrid_platform_test.cpp.
#pragma once

#include "core/common/result.hpp"

#include <string>
#include <vector>

namespace tp::models {

struct NetworkImport {
  std::vector<std::string> hosts;
  double link_bandwidth = 0; ///< bytes/s, the slowest host link
  double link_latency = 0;   ///< seconds, the largest host link latency
  double switch_latency = 0; ///< seconds, the backbone / shared link (0: none)
  std::string file;
};

Result<NetworkImport> import_simgrid_platform(const std::string& path);
Result<NetworkImport> import_simgrid_platform_text(const std::string& xml, const std::string& file);

/// SimGrid quantities: "10Gbps" (bits/s), "1.25GBps" (bytes/s), "125MBps", "100Mbps", "1e9" (bytes/s);
/// "10us", "1ms", "2.5e-6" (seconds). False when not one of them.
bool simgrid_bandwidth(const std::string& s, double& bytes_per_second);
bool simgrid_latency(const std::string& s, double& seconds);

} // namespace tp::models
