// SimGrid platform files as the network part (see simgrid_platform.hpp). A small scanner for the XML subset SimGrid
// platforms use (elements with attributes, comments, the prolog and DOCTYPE; no text content is needed).
#include "models/simgrid_platform.hpp"
#include "core/common/file_io.hpp"
#include "core/common/number_rule.hpp"
#include "models/quantity.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace tp::models {

namespace {

struct Tag {
  std::string name; ///< "cluster", "/zone", ...
  std::map<std::string, std::string> attrs;
  bool self_closing = false;
  size_t line = 1;
};

Result<std::vector<Tag>> scan(const std::string& x, const std::string& file)
{
  std::vector<Tag> tags;
  size_t i = 0, line = 1;
  auto err = [&](const std::string& expected, const std::string& got) {
    return Error::at(file, "line " + std::to_string(line), expected, got);
  };
  auto advance_to = [&](size_t j) {
    line += size_t(std::count(x.begin() + long(i), x.begin() + long(std::min(j, x.size())), '\n'));
    i = j;
  };
  while (true) {
    const size_t lt = x.find('<', i);
    if (lt == std::string::npos) break;
    advance_to(lt);
    if (x.compare(i, 4, "<!--") == 0) {
      const size_t end = x.find("-->", i);
      if (end == std::string::npos) return err("a closed comment", "end of file");
      advance_to(end + 3);
      continue;
    }
    if (x.compare(i, 2, "<?") == 0) { // the prolog, processing instructions
      const size_t end = x.find("?>", i);
      if (end == std::string::npos) return err("a closed <?...?>", "end of file");
      advance_to(end + 2);
      continue;
    }
    if (x.compare(i, 9, "<![CDATA[") == 0) { // text, never markup
      const size_t end = x.find("]]>", i);
      if (end == std::string::npos) return err("a closed <![CDATA[...]]>", "end of file");
      advance_to(end + 3);
      continue;
    }
    if (x.compare(i, 9, "<!DOCTYPE") == 0) {
      // An internal subset ("[...]") may declare entities whose text is markup (<!ENTITY l "<link .../>">); this
      // reader expands no entity, so a platform that needs one is refused rather than read differently than
      // SimGrid reads it. A DOCTYPE naming an external DTD (SimGrid's own) is skipped.
      size_t j = i + 9;
      char quote = 0;
      for (; j < x.size() && (quote || x[j] != '>'); ++j) {
        if (quote) {
          if (x[j] == quote) quote = 0;
        } else if (x[j] == '"' || x[j] == '\'') {
          quote = x[j];
        } else if (x[j] == '[') {
          return err("a DOCTYPE without an internal subset (DTD entities are not expanded)", "'[' in <!DOCTYPE");
        }
      }
      if (j >= x.size()) return err("a closed <!DOCTYPE ...>", "end of file");
      advance_to(j + 1);
      continue;
    }
    if (x.compare(i, 2, "<!") == 0)
      return err("an element, a comment, CDATA or a DOCTYPE (DTD declarations such as <!ENTITY> are not read)",
                 "\"" + x.substr(i, std::min<size_t>(12, x.size() - i)) + "\"");
    Tag t;
    t.line = line;
    size_t j = i + 1;
    while (j < x.size() && !isspace(static_cast<unsigned char>(x[j])) && x[j] != '>' && x[j] != '/')
      ++j;
    if (j < x.size() && x[j] == '/' && j == i + 1) { // </name>
      ++j;
      while (j < x.size() && x[j] != '>' && !isspace(static_cast<unsigned char>(x[j])))
        ++j;
    }
    t.name = x.substr(i + 1, j - i - 1);
    if (t.name.empty()) return err("an element name after '<'", "nothing");
    while (true) {
      while (j < x.size() && isspace(static_cast<unsigned char>(x[j])))
        ++j;
      if (j >= x.size()) return err("'>' closing <" + t.name, "end of file");
      if (x[j] == '>') {
        ++j;
        break;
      }
      if (x[j] == '/' && j + 1 < x.size() && x[j + 1] == '>') {
        t.self_closing = true;
        j += 2;
        break;
      }
      size_t k = j;
      while (k < x.size() && x[k] != '=' && !isspace(static_cast<unsigned char>(x[k])) && x[k] != '>')
        ++k;
      const std::string key = x.substr(j, k - j);
      while (k < x.size() && isspace(static_cast<unsigned char>(x[k])))
        ++k;
      if (k >= x.size() || x[k] != '=') return err("key=\"value\" in <" + t.name + ">", "\"" + key + "\"");
      ++k;
      while (k < x.size() && isspace(static_cast<unsigned char>(x[k])))
        ++k;
      if (k >= x.size() || (x[k] != '"' && x[k] != '\'')) return err("a quoted value for " + key, "unquoted");
      const char q = x[k];
      const size_t e = x.find(q, k + 1);
      if (e == std::string::npos) return err("a closing quote for " + key, "end of file");
      // XML allows an attribute once per element; which copy a reader keeps differs, so neither is taken
      if (!t.attrs.emplace(key, x.substr(k + 1, e - k - 1)).second)
        return err("each attribute once in <" + t.name + ">", "\"" + key + "\" again");
      j = e + 1;
    }
    advance_to(j);
    tags.push_back(std::move(t));
  }
  return tags;
}

bool number_unit(const std::string& s, double& v, std::string& unit)
{
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  if (end == s.c_str()) return false;
  unit = end;
  return number_ok(v, 0, DBL_MAX); // finite, not negative (-0 included): "nan", "inf", "-0us" are refused
}

constexpr size_t MAX_HOSTS = 100000; ///< a platform beyond this is refused, not allocated

/// "0-3,5,7-8" -> the numbers (each in [0, 10^9], at most MAX_HOSTS of them)
bool radical(const std::string& r, std::vector<long>& out)
{
  std::stringstream ss(r);
  std::string part;
  auto number = [](const char* s, const char** end) -> long {
    if (!isdigit(static_cast<unsigned char>(*s))) return -1;
    long v = 0;
    while (isdigit(static_cast<unsigned char>(*s)) && v <= 1000000000L)
      v = v * 10 + (*s++ - '0');
    *end = s;
    return v > 1000000000L ? -1 : v;
  };
  while (std::getline(ss, part, ',')) {
    const char* e = nullptr;
    const long a = number(part.c_str(), &e);
    if (a < 0) return false;
    long b = a;
    if (*e == '-') {
      b = number(e + 1, &e);
      if (b < a) return false;
    }
    if (*e) return false;
    if (size_t(b - a) >= MAX_HOSTS - out.size()) return false;
    for (long k = a; k <= b; ++k)
      out.push_back(k);
  }
  return !out.empty();
}

} // namespace

bool simgrid_bandwidth(const std::string& s, double& bps)
{
  double v;
  std::string u;
  if (!number_unit(s, v, u)) return false;
  static const std::map<std::string, double> units = {
      {"", 1},         {"Bps", 1},       {"kBps", 1e3},       {"KBps", 1e3},         {"MBps", 1e6},
      {"GBps", 1e9},   {"TBps", 1e12},   {"KiBps", 1024.0},   {"MiBps", 1048576.0},  {"GiBps", 1073741824.0},
      {"bps", 0.125},  {"kbps", 125.0},  {"Kbps", 125.0},     {"Mbps", 125e3},       {"Gbps", 125e6},
      {"Tbps", 125e9}, {"Kibps", 128.0}, {"Mibps", 131072.0}, {"Gibps", 134217728.0}};
  auto it = units.find(u);
  if (it == units.end()) return false;
  bps = v * it->second;
  return bps > 0 && number_ok(bps, 0, max_si(Dimension::BYTE_RATE)); // the profile's ceiling: 1e308Tbps is infinite
}

bool simgrid_latency(const std::string& s, double& sec)
{
  double v;
  std::string u;
  if (!number_unit(s, v, u)) return false;
  static const std::map<std::string, double> units = {{"", 1},      {"s", 1},      {"ms", 1e-3}, {"us", 1e-6},
                                                      {"ns", 1e-9}, {"ps", 1e-12}, {"m", 60},    {"h", 3600}};
  auto it = units.find(u);
  if (it == units.end()) return false;
  sec = v * it->second;
  return number_ok(sec, 0, max_si(Dimension::TIME));
}

namespace {

/// A platform file read one tag after the other: the network so far, the <link>s and <route>s of Full zones.
struct PlatformReader {
  explicit PlatformReader(const std::string& file_name) : file(file_name) { n.file = file; }

  /// The value of attribute `k` of `t`; an Error naming the tag's line when it has none.
  Result<std::string> attr(const Tag& t, const char* k) const
  {
    auto it = t.attrs.find(k);
    if (it == t.attrs.end())
      return Error::at(file, "line " + std::to_string(t.line),
                       std::string("a \"") + k + "\" attribute on <" + t.name + ">", "none");
    return it->second;
  }
  /// Attribute `k` of `t` as a SimGrid bandwidth, bytes/s, into `v`.
  Status bandwidth(const Tag& t, const char* k, double& v) const
  {
    auto s = attr(t, k);
    if (!s.ok()) return s.error();
    if (!simgrid_bandwidth(s.value(), v))
      return Error::at(file, "line " + std::to_string(t.line),
                       std::string(k) + ": a bandwidth like 10Gbps or 1.25GBps, above 0 and at most " +
                           number_text(max_si(Dimension::BYTE_RATE)) + " B/s",
                       "\"" + s.value() + "\"");
    return ok_status();
  }
  /// Attribute `k` of `t` as a SimGrid latency, seconds, into `v`.
  Status latency(const Tag& t, const char* k, double& v) const
  {
    auto s = attr(t, k);
    if (!s.ok()) return s.error();
    if (!simgrid_latency(s.value(), v))
      return Error::at(file, "line " + std::to_string(t.line),
                       std::string(k) + ": a latency like 10us or 1e-5" + range_text(0, max_si(Dimension::TIME), "") +
                           " s",
                       "\"" + s.value() + "\"");
    return ok_status();
  }

  /// Refuse a zone of a routing other than Full, and routes between zones.
  Status check_zone(const Tag& t) const
  {
    if (t.name == "zone" || t.name == "AS") {
      // Only full routing is read: its <route>s list each host pair's links. Other routings (Floyd, Dijkstra: routes
      // between neighbours; Cluster*, Vivaldi, Wifi, Star, None: computed or absent routes) would be misread as
      // host links and a switch, so they are refused.
      const auto routing = t.attrs.find("routing");
      if (routing != t.attrs.end() && routing->second != "Full")
        return Error::at(file, "line " + std::to_string(t.line),
                         "<" + t.name + " routing=\"Full\"> (the one zone routing read; or a <cluster>)",
                         "routing=\"" + routing->second + "\"");
    } else if (t.name == "zoneRoute" || t.name == "ASroute" || t.name == "bypassRoute" || t.name == "bypassZoneRoute" ||
               t.name == "bypassASroute") {
      return Error::at(file, "line " + std::to_string(t.line),
                       "one network: a <cluster> or a Full zone's <route>s between hosts (routes between zones are "
                       "not read)",
                       "<" + t.name + ">");
    }
    return ok_status();
  }

  /// A FAT_TREE cluster's topo_parameters "h;m1,...,mh;w1,...,wh;p1,...,ph" (SimGrid's FatTreeZone).
  Status read_fat_tree(const Tag& t)
  {
    const std::string where = "line " + std::to_string(t.line);
    auto params = attr(t, "topo_parameters");
    if (!params.ok()) return params.error();
    const std::string expect = "topo_parameters \"h;m1,..,mh;w1,..,wh;p1,..,ph\" with 1 to 3 levels, positive "
                               "integers, one link per host (w1 = p1 = 1)";
    auto bad = [&] { return Error::at(file, where, expect, "\"" + params.value() + "\""); };
    std::vector<std::vector<int>> parts;
    size_t start = 0;
    const std::string& text = params.value();
    while (start <= text.size()) {
      const size_t semi = std::min(text.find(';', start), text.size());
      std::vector<int> part;
      size_t s0 = start;
      while (s0 <= semi) {
        const size_t comma = std::min(text.find(',', s0), semi);
        const std::string one = text.substr(s0, comma - s0);
        if (one.empty() || one.size() > 6 || one.find_first_not_of("0123456789") != std::string::npos) return bad();
        part.push_back(std::stoi(one));
        if (part.back() < 1) return bad();
        s0 = comma + 1;
      }
      parts.push_back(part);
      start = semi + 1;
    }
    if (parts.size() != 4 || parts[0].size() != 1) return bad();
    FatTreeShape f;
    f.levels = parts[0][0];
    f.down = parts[1];
    f.up = parts[2];
    f.parallel = parts[3];
    f.line = t.line;
    const size_t h = size_t(f.levels);
    if (h < 1 || h > 3 || f.down.size() != h || f.up.size() != h || f.parallel.size() != h) return bad();
    if (f.up[0] != 1 || f.parallel[0] != 1) return bad();
    long hosts = 1;
    for (int m : f.down)
      hosts *= m;
    if (hosts > long(MAX_HOSTS)) return bad();
    n.fat_tree = f;
    return ok_status();
  }

  /// A <cluster>: its hosts, their private links (the slowest bandwidth, the longest latency) and its backbone.
  Status read_cluster(const Tag& t)
  {
    // A cluster is read as hosts on private links behind one backbone (FLAT) or as a fat tree of up to three switch
    // levels (FAT_TREE, a topology of the cluster profile). Tori and dragonflies are not modelled.
    const auto topo = t.attrs.find("topology");
    const bool fat_tree = topo != t.attrs.end() && topo->second == "FAT_TREE";
    if (topo != t.attrs.end() && topo->second != "FLAT" && !fat_tree)
      return Error::at(file, "line " + std::to_string(t.line),
                       "a <cluster> with topology FLAT or FAT_TREE (the ones read)",
                       "topology=\"" + topo->second + "\"");
    if (fat_tree) {
      if (n.fat_tree || !n.hosts.empty())
        return Error::at(file, "line " + std::to_string(t.line), "a FAT_TREE <cluster> as the file's only network",
                         "another network before it");
      TP_TRY(read_fat_tree(t));
    } else if (n.fat_tree) {
      return Error::at(file, "line " + std::to_string(t.line), "a FAT_TREE <cluster> as the file's only network",
                       "another <cluster> after it");
    }
    auto id = attr(t, "id");
    auto pre = attr(t, "prefix"), suf = attr(t, "suffix"), rad = attr(t, "radical");
    for (auto* r : {&id, &pre, &suf, &rad})
      if (!r->ok()) return r->error();
    std::vector<long> nums;
    if (!radical(rad.value(), nums))
      return Error::at(file, "line " + std::to_string(t.line),
                       "radical: like 0-15 or 0-3,8, at most " + std::to_string(MAX_HOSTS) + " hosts",
                       "\"" + rad.value() + "\"");
    if (n.hosts.size() + nums.size() > MAX_HOSTS)
      return Error::at(file, "line " + std::to_string(t.line), "at most " + std::to_string(MAX_HOSTS) + " hosts",
                       "more");
    for (long k : nums)
      n.hosts.push_back(pre.value() + std::to_string(k) + suf.value());
    if (fat_tree) {
      long want = 1;
      for (int m : n.fat_tree->down)
        want *= m;
      if (long(nums.size()) != want)
        return Error::at(file, "line " + std::to_string(t.line),
                         "radical: the product of the fat tree's m_i hosts (" + std::to_string(want) + ")",
                         std::to_string(nums.size()) + " hosts");
    }
    double bw = 0, lat = 0;
    TP_TRY(bandwidth(t, "bw", bw));
    TP_TRY(latency(t, "lat", lat));
    n.link_bandwidth = n.link_bandwidth > 0 ? std::min(n.link_bandwidth, bw) : bw;
    n.link_latency = std::max(n.link_latency, lat);
    if (fat_tree) n.switch_latency = lat; // every hop of a fat tree crosses one more link of this latency
    if (t.attrs.count("bb_lat")) {
      double bb = 0;
      TP_TRY(latency(t, "bb_lat", bb));
      n.switch_latency = std::max(n.switch_latency, bb);
    }
    return ok_status();
  }

  /// One tag of the file, in file order (`t` must outlive the reader: an open <route> points to it).
  Status read(const Tag& t)
  {
    if (t.name == "platform") platform = true;
    TP_TRY(check_zone(t));
    if (t.name == "cluster") {
      TP_TRY(read_cluster(t));
    } else if (t.name == "host") {
      auto id = attr(t, "id");
      if (!id.ok()) return id.error();
      n.hosts.push_back(id.value());
      if (n.hosts.size() > MAX_HOSTS)
        return Error::at(file, "line " + std::to_string(t.line), "at most " + std::to_string(MAX_HOSTS) + " hosts",
                         "more");
    } else if (t.name == "link") {
      auto id = attr(t, "id");
      if (!id.ok()) return id.error();
      double bw = 0, lat = 0;
      TP_TRY(bandwidth(t, "bandwidth", bw));
      if (t.attrs.count("latency")) TP_TRY(latency(t, "latency", lat));
      links[id.value()] = {bw, lat};
    } else if (t.name == "route") {
      auto src = attr(t, "src"), dst = attr(t, "dst");
      if (!src.ok()) return src.error();
      if (!dst.ok()) return dst.error();
      routes.push_back({{src.value(), dst.value()}, {}});
      open_route = t.self_closing ? nullptr : &t;
    } else if (t.name == "link_ctn") {
      if (!open_route || routes.empty())
        return Error::at(file, "line " + std::to_string(t.line), "<link_ctn> inside a <route>", "outside");
      auto id = attr(t, "id");
      if (!id.ok()) return id.error();
      if (!links.count(id.value()))
        return Error::at(file, "line " + std::to_string(t.line), "a link declared before its route",
                         "\"" + id.value() + "\"");
      routes.back().second.push_back(id.value());
    } else if (t.name == "/route") {
      open_route = nullptr;
    }
    return ok_status();
  }

  /// Full zones: a link on every route of one host (the routes through it share an end) is that host's link; a link
  /// the routes through it share no end of is the switch.
  Status read_routes(const std::set<std::string>& hostset)
  {
    std::map<std::string, std::set<std::string>> common; // link -> the ends every route through it has
    std::set<std::string> seen;
    for (const auto& [ends, path] : routes) {
      if (!hostset.count(ends.first) || !hostset.count(ends.second))
        return Error::at(file, "route", "routes between declared hosts", ends.first + " -> " + ends.second);
      const std::set<std::string> mine{ends.first, ends.second};
      for (const auto& l : path) {
        if (seen.insert(l).second) {
          common[l] = mine;
          continue;
        }
        std::set<std::string> both;
        for (const auto& h : common[l])
          if (mine.count(h)) both.insert(h);
        common[l] = both;
      }
    }
    for (const auto& [l, ends] : common) {
      const auto [bw, lat] = links[l];
      if (ends.empty()) {
        n.switch_latency = std::max(n.switch_latency, lat);
        continue;
      }
      n.link_bandwidth = n.link_bandwidth > 0 ? std::min(n.link_bandwidth, bw) : bw;
      n.link_latency = std::max(n.link_latency, lat);
    }
    return ok_status();
  }

  const std::string& file;
  NetworkImport n;
  bool platform = false;
  std::map<std::string, std::pair<double, double>> links; // id -> (bw, lat)
  std::vector<std::pair<std::pair<std::string, std::string>, std::vector<std::string>>> routes;
  const Tag* open_route = nullptr;
};

} // namespace

Result<NetworkImport> import_simgrid_platform_text(const std::string& xml, const std::string& file)
{
  auto tags = scan(xml, file);
  if (!tags.ok()) return tags.error();
  PlatformReader p(file);
  for (const auto& t : tags.value())
    if (auto st = p.read(t); !st.ok()) return st.error();
  NetworkImport& n = p.n;
  if (!p.platform) return Error::at(file, "", "a SimGrid <platform>", "no <platform> element");
  if (n.hosts.empty()) return Error::at(file, "", "hosts (<cluster> or <host>)", "none");
  const std::set<std::string> hostset(n.hosts.begin(), n.hosts.end());
  if (hostset.size() != n.hosts.size()) return Error::at(file, "host", "unique host ids", "a duplicate");
  if (!p.routes.empty())
    if (auto st = p.read_routes(hostset); !st.ok()) return st.error();
  if (!(n.link_bandwidth > 0))
    return Error::at(file, "link", "host links with a bandwidth (a <cluster> bw, or routes through <link>s)", "none");
  return std::move(n);
}

Result<NetworkImport> import_simgrid_platform(const std::string& path)
{
  // A regular file only: a device or a FIFO named in a profile ("network": "/dev/zero") would never end.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return Error::at(path, "", "a readable SimGrid platform file", "no such regular file");
  auto text = io::read_file_capped(path, "SimGrid platform file", io::input_cap(io::SPEC_INPUT_CAP));
  if (!text.ok()) return text.error();
  return import_simgrid_platform_text(text.value(), path);
}

} // namespace tp::models
