// SimGrid platform files as the network part of a cluster: the cluster tag, full zones with routes, units, and
// errors that name the file and line.
#include "models/catalog.hpp"
#include "models/simgrid_platform.hpp"

#include <catch2/catch.hpp>

using namespace tp;

TEST_CASE("SimGrid units: bits and bytes per second, latencies", "[models]")
{
  double v = 0;
  CHECK(models::simgrid_bandwidth("10Gbps", v));
  CHECK(v == Approx(1.25e9));
  CHECK(models::simgrid_bandwidth("1.25GBps", v));
  CHECK(v == Approx(1.25e9));
  CHECK(models::simgrid_bandwidth("125MBps", v));
  CHECK(v == Approx(125e6));
  CHECK_FALSE(models::simgrid_bandwidth("fast", v));
  CHECK_FALSE(models::simgrid_bandwidth("10Gbit", v));
  CHECK(models::simgrid_latency("10us", v));
  CHECK(v == Approx(1e-5));
  CHECK(models::simgrid_latency("2.5e-6", v));
  CHECK(v == Approx(2.5e-6));
  CHECK_FALSE(models::simgrid_latency("soon", v));
}

TEST_CASE("a <cluster> gives the hosts, their links and the backbone latency", "[models]")
{
  auto n = models::import_simgrid_platform(std::string(TENSORPATH_SOURCE_DIR) + "/models/hw/network/edr-cluster-8.xml");
  REQUIRE(n.ok());
  REQUIRE(n->hosts.size() == 8);
  CHECK(n->hosts[3] == "node3.edr");
  CHECK(n->link_bandwidth == Approx(12.5e9));
  CHECK(n->link_latency == Approx(0.6e-6));
  CHECK(n->switch_latency == Approx(0.09e-6));
}

TEST_CASE("a full zone: a link used by one pair of hosts is a host link, a shared one the switch", "[models]")
{
  const char* xml = R"(<?xml version='1.0'?>
<platform version="4.1">
  <zone id="z" routing="Full">
    <host id="a" speed="1Gf"/> <host id="b" speed="1Gf"/> <host id="c" speed="1Gf"/>
    <link id="la" bandwidth="100Gbps" latency="1us"/>
    <link id="lb" bandwidth="100Gbps" latency="1us"/>
    <link id="lc" bandwidth="40Gbps" latency="2us"/>
    <link id="sw" bandwidth="1000Gbps" latency="300ns"/>
    <route src="a" dst="b"><link_ctn id="la"/><link_ctn id="sw"/><link_ctn id="lb"/></route>
    <route src="a" dst="c"><link_ctn id="la"/><link_ctn id="sw"/><link_ctn id="lc"/></route>
    <route src="b" dst="c"><link_ctn id="lb"/><link_ctn id="sw"/><link_ctn id="lc"/></route>
  </zone>
</platform>)";
  auto n = models::import_simgrid_platform_text(xml, "zone.xml");
  REQUIRE(n.ok());
  CHECK(n->hosts.size() == 3);
  CHECK(n->link_bandwidth == Approx(5e9)); // the slowest host link (40 Gb/s)
  CHECK(n->link_latency == Approx(2e-6));
  CHECK(n->switch_latency == Approx(0.3e-6));
}

TEST_CASE("a cluster profile takes its network from a SimGrid platform file", "[models]")
{
  models::Catalog cat;
  auto c = cat.cluster("simgrid-edr-8node");
  REQUIRE(c.ok());
  CHECK(c->host_count() == 8);
  CHECK(c->host(0).nics[0].nic.line_rate == Approx(12.5e9));
  CHECK(c->host(0).nics[0].nic.port_latency == Approx(0.6e-6));
  CHECK(c->network_switch.latency == Approx(0.09e-6));
}

TEST_CASE("malformed platform files are refused with the file, the line and the reason", "[models]")
{
  struct Bad {
    std::string xml, needle;
  } cases[] = {
      {"<cluster id='c' prefix='n' suffix='' radical='0-3' bw='10Gbps' lat='1us'/>", "<platform>"},
      {"<platform version='4.1'>\n<cluster id='c' prefix='n' suffix='' radical='0-3' bw='fast' lat='1us'/></platform>",
       "line 2"},
      {"<platform version='4.1'><cluster id='c' prefix='n' suffix='' radical='3-0' bw='1Gbps' lat='1us'/></platform>",
       "radical"},
      {"<platform version='4.1'><cluster id='c' prefix='n' radical='0-3' bw='1Gbps' lat='1us'/></platform>", "suffix"},
      {"<platform version='4.1'><host id='a'/><host id='b'/><route src='a' dst='b'><link_ctn id='x'/></route>"
       "</platform>",
       "declared"},
      {"<platform version='4.1'><host id='a' speed='1Gf'></platform", "'>'"},
      {"<platform version='4.1'><host id=a/></platform>", "quoted"},
      {"<platform version='4.1'></platform>", "hosts"},
      // found by fuzzing: an overflowing range, and a platform too large to allocate
      {"<platform version='4.1'><cluster id='c' prefix='n' suffix='' radical='-9223372036854775808-9223372036854775807'"
       " bw='1Gbps' lat='1us'/></platform>",
       "radical"},
      {"<platform version='4.1'><cluster id='c' prefix='n' suffix='' radical='0-999999999' bw='1Gbps' lat='1us'/>"
       "</platform>",
       "at most 100000 hosts"},
  };
  for (const auto& c : cases) {
    auto n = models::import_simgrid_platform_text(c.xml, "bad.xml");
    INFO(c.xml);
    REQUIRE_FALSE(n.ok());
    CHECK(n.error().message().find("bad.xml") != std::string::npos);
    CHECK(n.error().message().find(c.needle) != std::string::npos);
  }
}

namespace {

/// The error of importing `xml`, or an empty message when it is accepted.
std::string refusal(const std::string& xml)
{
  auto n = models::import_simgrid_platform_text(xml, "p.xml");
  return n.ok() ? std::string() : n.error().message();
}

const std::string CLUSTER = "<cluster id='c' prefix='n' suffix='' radical='0-3' bw='10Gbps' lat='1us'/>";

std::string platform(const std::string& body)
{
  return "<?xml version='1.0'?>\n<platform version='4.1'>\n" + body + "\n</platform>";
}

} // namespace

TEST_CASE("SimGrid XML: an attribute given twice is refused", "[models]")
{
  REQUIRE(refusal(platform(CLUSTER)).empty());
  const std::string m =
      refusal(platform("<cluster id='c' prefix='n' suffix='' radical='0-3' bw='10Gbps' lat='1us' bw='1Gbps'/>"));
  CHECK(m.find("p.xml: line 3") != std::string::npos);
  CHECK(m.find("each attribute once in <cluster>") != std::string::npos);
  CHECK(m.find("\"bw\" again") != std::string::npos);
  CHECK_FALSE(refusal(platform("<host id='a' id='b'/>")).empty());
}

TEST_CASE("SimGrid XML: a zone routing the reader does not implement is refused, naming it and what is read",
          "[models]")
{
  const std::string routes = "<host id='a'/><host id='b'/><link id='l' bandwidth='1Gbps' latency='1us'/>"
                             "<route src='a' dst='b'><link_ctn id='l'/></route>";
  REQUIRE(refusal(platform("<zone id='z' routing='Full'>" + routes + "</zone>")).empty());
  for (const char* routing :
       {"Floyd", "Dijkstra", "DijkstraCache", "None", "Vivaldi", "Cluster", "ClusterFatTree", "Star", "Wifi"}) {
    const std::string m =
        refusal(platform(std::string("<zone id='z' routing='") + routing + "'>" + routes + "</zone>"));
    INFO(routing);
    CHECK(m.find("line 3") != std::string::npos);
    CHECK(m.find(std::string("routing=\"") + routing + "\"") != std::string::npos);
    CHECK(m.find("routing=\"Full\"") != std::string::npos); // what is supported
  }
  CHECK(refusal(platform("<AS id='z' routing='Floyd'>" + routes + "</AS>")).find("Floyd") != std::string::npos);
  // a cluster of a topology the reader does not model (a torus; fat trees are read), and routes between zones
  CHECK(refusal(platform("<cluster id='c' prefix='n' suffix='' radical='0-3' bw='10Gbps' lat='1us' "
                         "topology='TORUS' topo_parameters='2,2'/>"))
            .find("topology=\"TORUS\"") != std::string::npos);
  REQUIRE(refusal(platform("<cluster id='c' prefix='n' suffix='' radical='0-3' bw='10Gbps' lat='1us' "
                           "topology='FLAT'/>"))
              .empty());
  CHECK(refusal(platform("<zone id='w' routing='Full'>" + CLUSTER +
                         "<zoneRoute src='c' dst='d' gw_src='n0' gw_dst='m0'><link_ctn id='x'/></zoneRoute></zone>"))
            .find("<zoneRoute>") != std::string::npos);
}

TEST_CASE("SimGrid XML: markup hidden in DTD entities or CDATA is never read as elements", "[models]")
{
  // Before: the DOCTYPE was skipped to its first '>', which sat inside the entity's text, so the rest of the entity
  // (<host id='evil'/>) was read as a host.
  const std::string hidden = "<?xml version='1.0'?>\n<!DOCTYPE platform [\n<!ENTITY x \"a>b<host id='evil'/>\">\n]>\n"
                             "<platform version='4.1'>" +
                             CLUSTER + "&x;</platform>";
  const std::string m = refusal(hidden);
  CHECK(m.find("p.xml: line 2") != std::string::npos);
  CHECK(m.find("DTD entities are not expanded") != std::string::npos);
  CHECK_FALSE(refusal("<!ENTITY x \"<host id='evil'/>\">" + platform(CLUSTER)).empty());
  // SimGrid's own DOCTYPE (an external DTD) is fine; an entity reference in the body is text
  auto ok = models::import_simgrid_platform_text(
      "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
      "<platform version='4.1'>" +
          CLUSTER + "&x; <![CDATA[ a>b <host id='evil'/> ]]></platform>",
      "p.xml");
  REQUIRE(ok.ok());
  CHECK(ok->hosts.size() == 4); // n0..n3, no "evil"
  // an entity reference where a number belongs is not expanded: the attribute is refused
  CHECK(refusal(platform("<cluster id='c' prefix='n' suffix='' radical='0-3' bw='&big;' lat='1us'/>"))
            .find("bw: a bandwidth") != std::string::npos);
}

TEST_CASE("SimGrid XML: every bandwidth and latency refuses NaN, infinity, negatives and -0 by line", "[models]")
{
  struct Attr {
    std::string xml; ///< with @ for the value
    bool bandwidth;
  } attrs[] = {
      {"<cluster id='c' prefix='n' suffix='' radical='0-3' bw='@' lat='1us'/>", true},
      {"<cluster id='c' prefix='n' suffix='' radical='0-3' bw='10Gbps' lat='@'/>", false},
      {"<cluster id='c' prefix='n' suffix='' radical='0-3' bw='10Gbps' lat='1us' bb_lat='@'/>", false},
      {"<host id='a'/><host id='b'/><link id='l' bandwidth='@' latency='1us'/>"
       "<route src='a' dst='b'><link_ctn id='l'/></route>",
       true},
      {"<host id='a'/><host id='b'/><link id='l' bandwidth='1Gbps' latency='@'/>"
       "<route src='a' dst='b'><link_ctn id='l'/></route>",
       false},
  };
  for (const auto& a : attrs) {
    for (const std::string bad :
         {"nan", "NaNGbps", "inf", "infus", "-1", "-0", "-0us", "1e308Tbps", "1e400", "1e30", "1e308h", ""}) {
      std::string xml = a.xml;
      xml.replace(xml.find('@'), 1, bad);
      INFO(xml);
      const std::string m = refusal(platform(xml));
      CHECK(m.find("p.xml: line 3") != std::string::npos);
    }
    std::string good = a.xml;
    good.replace(good.find('@'), 1, a.bandwidth ? "1Gbps" : "0");
    CHECK(refusal(platform(good)).empty());
  }
}

TEST_CASE("SimGrid XML: a FAT_TREE cluster gives its levels, and a tree the model cannot read is refused by line",
          "[models]")
{
  auto tree = [](const std::string& params, const std::string& radical) {
    return platform("<cluster id='t' prefix='n' suffix='' radical='" + radical +
                    "' bw='100Gbps' lat='1us' topology='FAT_TREE' topo_parameters='" + params + "'/>");
  };
  auto n = models::import_simgrid_platform_text(tree("3;4,2,2;1,2,2;1,1,2", "0-15"), "p.xml");
  REQUIRE(n.ok());
  REQUIRE(n->fat_tree);
  CHECK(n->fat_tree->levels == 3);
  CHECK(n->fat_tree->down == std::vector<int>{4, 2, 2});
  CHECK(n->fat_tree->parallel == std::vector<int>{1, 1, 2});
  CHECK(n->switch_latency == Approx(1e-6)); // every hop crosses one more 1 us link
  for (const auto& [params, radical] :
       std::vector<std::pair<std::string, std::string>>{{"2;4,4;1,2;1,2", "0-7"}, // 8 hosts where the tree has 16
                                                        {"4;2,2,2,2;1,1,1,1;1,1,1,1", "0-15"}, // four levels
                                                        {"2;4,4;2,2;1,1", "0-15"},             // hosts with two links
                                                        {"2;4,4;1,2", "0-15"},                 // three parts
                                                        {"2;4,x;1,2;1,1", "0-15"},             // not a number
                                                        {"2;4,0;1,2;1,1", "0-15"}}) {          // a zero
    INFO(params << " " << radical);
    const std::string why = refusal(tree(params, radical));
    CHECK(why.find("p.xml") != std::string::npos);
    CHECK(why.find("line 3") != std::string::npos);
  }
  // a fat tree is the file's only network
  CHECK_FALSE(refusal(platform(CLUSTER + "\n<cluster id='t' prefix='m' suffix='' radical='0-3' bw='1Gbps' lat='1us' "
                                         "topology='FAT_TREE' topo_parameters='1;4;1;1'/>"))
                  .empty());
  CHECK(refusal(platform("<cluster id='t' prefix='m' suffix='' radical='0-3' bw='1Gbps' lat='1us' "
                         "topology='TORUS' topo_parameters='2,2'/>"))
            .find("FLAT or FAT_TREE") != std::string::npos);
}
