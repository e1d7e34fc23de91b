// SimGrid platform files (XML, platform version 4.x) as the network part of a cluster profile ("network": "x.xml"):
// the subset read is a <cluster> (prefix/suffix/radical hosts, each with a private link of bw/lat, and an optional
// backbone bb_bw/bb_lat; or topology="FAT_TREE" with its topo_parameters "h;m1..mh;w1..wh;p1..ph", one to three switch
// levels, every link of bw/lat, routed destination-mod-k), or a <zone routing="Full"> whose routes between hosts
// cross host links and at most one
// shared link (a switch). What it gives tensorpath: the hosts (how many, their names), each host's link bandwidth and
// latency (the NIC's line rate and port latency) and the backbone's latency (the switch). Anything else in the file
// (speeds, disks, properties) is ignored; anything malformed is an error naming the file and line, and so is what
// would be misread: a zone routing other than Full, a cluster topology other than FLAT or FAT_TREE (a fat tree with
// more than 3 levels, or hosts with more than one link), routes between zones, an
// attribute given twice, a DOCTYPE with an internal subset (entities are never expanded, so markup hidden in one is
// never read as elements; CDATA is text), and bandwidths or latencies breaking the number rule.
// Tests: tests/models/simgrid_platform_test.cpp.
#pragma once

#include "core/common/result.hpp"

#include <optional>
#include <string>
#include <vector>

namespace tp::models {

/// A SimGrid fat tree (FatTreeZone: Zahavi's PGFT "h ; m_1..m_h ; w_1..w_h ; p_1..p_h"): level i's switches have m_i
/// children, a level i-1 node has w_i parents, p_i parallel links join two nodes of levels i and i-1; level 0 holds
/// the hosts, whose count is the product of the m_i.
struct FatTreeShape {
  int levels = 0;
  std::vector<int> down, up, parallel; ///< m_i, w_i, p_i for i = 1..levels
  int line = 0;                        ///< of its <cluster> in the file
};

struct NetworkImport {
  std::vector<std::string> hosts;
  double link_bandwidth = 0; ///< bytes/s, the slowest host link
  double link_latency = 0;   ///< seconds, the largest host link latency
  double switch_latency = 0; ///< seconds, the backbone / shared link (0: none); a fat tree: one link's latency
  std::optional<FatTreeShape> fat_tree;
  std::string file;
};

Result<NetworkImport> import_simgrid_platform(const std::string& path);
Result<NetworkImport> import_simgrid_platform_text(const std::string& xml, const std::string& file);

/// SimGrid quantities: "10Gbps" (bits/s), "1.25GBps" (bytes/s), "125MBps", "100Mbps", "1e9" (bytes/s);
/// "10us", "1ms", "2.5e-6" (seconds). False when not one of them.
bool simgrid_bandwidth(const std::string& s, double& bytes_per_second);
bool simgrid_latency(const std::string& s, double& seconds);

} // namespace tp::models
