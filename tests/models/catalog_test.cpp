// The shipped profiles load, and bad profiles are refused with the file and the field named.
#include "models/catalog.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace tp::models;
namespace fs = std::filesystem;

namespace {

/// A scratch catalog directory with one file written into it.
struct ScratchCatalog {
  fs::path root;
  explicit ScratchCatalog(const std::string& tag)
  {
    root = fs::temp_directory_path() / ("tp_catalog_" + tag + "_" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root);
    // copy the shipped tree so that references resolve
    fs::copy(std::string(TENSORPATH_SOURCE_DIR) + "/models/hw", root, fs::copy_options::recursive);
  }
  ~ScratchCatalog() { fs::remove_all(root); }
  std::string write(const std::string& kind, const std::string& name, const std::string& text)
  {
    fs::create_directories(root / kind);
    auto p = root / kind / (name + ".json");
    std::ofstream(p) << text;
    return p.string();
  }
};

const char* GOOD_SWITCH = R"({"kind": "switch", "latency": {"value": 100, "unit": "ns", "source": "test"}})";

} // namespace

TEST_CASE("Every shipped profile loads", "[quick]")
{
  Catalog cat(std::string(TENSORPATH_SOURCE_DIR) + "/models/hw");
  for (const auto& n : cat.list("nic"))
    CHECK(cat.nic(n).ok());
  for (const auto& n : cat.list("host")) {
    auto h = cat.host(n);
    INFO(n << ": " << (h.ok() ? "" : h.error().message()));
    CHECK(h.ok());
  }
  for (const auto& n : cat.list("cluster"))
    CHECK(cat.cluster(n).ok());
  auto cx3 = cat.nic("connectx3-40gbe-roce");
  REQUIRE(cx3.ok());
  CHECK(cx3->line_rate == Approx(5e9));
  CHECK(cx3->mtu == 1024);
  auto hk = cat.host("hkust-k40m-cx3");
  REQUIRE(hk.ok());
  CHECK(hk->gpus.size() == 4);
  CHECK(hk->nics.at(0).socket == 1);
  CHECK(hk->nics.at(0).pcie.lanes == 8);
}

TEST_CASE("A number without a source is refused, naming file and field", "[quick]")
{
  ScratchCatalog s("nosource");
  s.write("switch", "bad", R"({"kind": "switch", "latency": {"value": 100, "unit": "ns"}})");
  Catalog cat(s.root.string());
  auto r = cat.network_switch("bad");
  REQUIRE_FALSE(r.ok());
  const std::string m = r.error().message();
  CHECK(m.find("switch/bad.json") != std::string::npos);
  CHECK(m.find("latency.source") != std::string::npos);
}

TEST_CASE("A wrong unit, an unknown field and malformed JSON are refused with their place", "[quick]")
{
  ScratchCatalog s("bad");
  s.write("switch", "unit", R"({"kind": "switch", "latency": {"value": 100, "unit": "GB/s", "source": "x y z"}})");
  s.write("switch", "typo",
          R"({"kind": "switch", "latency": {"value": 1, "unit": "ns", "source": "x y z"}, "latncy": 3})");
  s.write("switch", "broken", R"({"kind": "switch", "latency": )");
  s.write("switch", "kind", R"({"kind": "nic", "latency": {"value": 1, "unit": "ns", "source": "x y z"}})");
  Catalog cat(s.root.string());
  auto unit = cat.network_switch("unit");
  REQUIRE_FALSE(unit.ok());
  CHECK(unit.error().field == "latency.unit");
  CHECK(unit.error().expected.find("time") != std::string::npos);
  auto typo = cat.network_switch("typo");
  REQUIRE_FALSE(typo.ok());
  CHECK(typo.error().field == "latncy");
  auto broken = cat.network_switch("broken");
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().file.find("broken.json") != std::string::npos);
  CHECK(broken.error().expected == "valid JSON");
  auto kind = cat.network_switch("kind");
  REQUIRE_FALSE(kind.ok());
  CHECK(kind.error().field == "kind");
}

TEST_CASE("A host that references an unknown profile or an impossible socket is refused", "[quick]")
{
  ScratchCatalog s("host");
  s.write(
      "host", "badref",
      R"({"kind": "host", "sockets": [{"cpu": "no-such-cpu", "memory": {"value": 1, "unit": "GiB", "source": "x y z"}}],
        "nics": [{"model": "connectx3-40gbe-roce", "socket": 0}], "registration": "mlx-reg-mr", "tcp": "tcp-ethernet"})");
  s.write(
      "host", "badsocket",
      R"({"kind": "host", "sockets": [{"cpu": "xeon-e5-2603-v4", "memory": {"value": 1, "unit": "GiB", "source": "x y z"}}],
        "nics": [{"model": "connectx3-40gbe-roce", "socket": 1}], "registration": "mlx-reg-mr", "tcp": "tcp-ethernet"})");
  s.write("switch", "ok", GOOD_SWITCH);
  Catalog cat(s.root.string());
  auto r1 = cat.host("badref");
  REQUIRE_FALSE(r1.ok());
  CHECK(r1.error().file.find("badref.json") != std::string::npos);
  CHECK(r1.error().field == "sockets[0].cpu");
  CHECK(r1.error().got.find("no-such-cpu") != std::string::npos);
  auto r2 = cat.host("badsocket");
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.error().field == "nics[0].socket");
  CHECK(cat.network_switch("ok").ok());
  auto missing = cat.nic("does-not-exist");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().expected.find("connectx3-40gbe-roce") != std::string::npos); // lists the known ones
}

TEST_CASE("A GPU's architecture is one NCCL's tables know, a misspelt one named with the closest", "[quick]")
{
  Catalog cat;
  const std::string file = cat.root() + "/gpu/inline.json";
  std::ifstream in(cat.root() + "/gpu/h100-sxm5.json");
  const std::string h100((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(h100.find("\"architecture\": \"hopper\"") != std::string::npos);
  CHECK(cat.check_text(h100, file).ok());
  std::string bad = h100;
  bad.replace(bad.find("\"hopper\""), 8, "\"hoper\"");
  auto r = cat.check_text(bad, file);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().field == "architecture");
  CHECK(r.error().got.find("did you mean \"hopper\"") != std::string::npos);
}

TEST_CASE("Profile text of any kind is checked, numbers and sizes that fit no type are errors", "[quick]")
{
  Catalog cat;
  const std::string file = cat.root() + "/switch/inline.json";
  auto good = cat.check_text(GOOD_SWITCH, file);
  REQUIRE(good.ok());
  CHECK(good.value() == "switch");
  auto unknown = cat.check_text(R"({"kind": "toaster"})", file);
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().field == "kind");
  // nlohmann throws out_of_range, not parse_error, for 1e400: it escaped the loaders (a crash) before.
  // now named at its field (the strict parser knows where it is)
  auto overflow =
      cat.check_text(R"({"kind": "switch", "latency": {"value": 1e400, "unit": "ns", "source": "x y z"}})", file);
  REQUIRE_FALSE(overflow.ok());
  CHECK(overflow.error().field == "latency.value");
  CHECK(overflow.error().got == "1e400");
  ScratchCatalog s("overflow");
  s.write("switch", "huge", R"({"kind": "switch", "latency": {"value": 1e400, "unit": "ns", "source": "x y z"}})");
  auto huge = Catalog(s.root.string()).network_switch("huge");
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.error().field == "latency.value");
}

TEST_CASE("A cluster's network file must be a regular file (a device would be read forever)", "[quick]")
{
  Catalog cat;
  auto r = cat.check_text(R"({"kind": "cluster", "hosts": [{"host": "k40m-10gbe"}], "switch": "mellanox-sb7800",
                              "network": "/dev/zero"})",
                          cat.root() + "/cluster/inline.json");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().file == "/dev/zero");
}

namespace {

using json = nlohmann::json;

/// Every numeric field of a profile: the "value" of each quantity ({"value", "unit", "source"}) and each plain number
/// (lanes, cores, socket, count), with its path as the reader names it ("sockets[0].memory.value").
void numeric_fields(json& j, const std::string& path, std::vector<std::pair<json*, std::string>>& out)
{
  auto join = [&](const std::string& k) { return path.empty() ? k : path + "." + k; };
  if (j.is_object()) {
    if (j.contains("value") && j.contains("unit")) {
      out.push_back({&j["value"], join("value")});
      return;
    }
    for (auto it = j.begin(); it != j.end(); ++it)
      if (it.value().is_number())
        out.push_back({&it.value(), join(it.key())});
      else
        numeric_fields(it.value(), join(it.key()), out);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i)
      numeric_fields(j[i], path + "[" + std::to_string(i) + "]", out);
  }
}

std::string slurp(const std::string& path)
{
  std::ifstream f(path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

} // namespace

TEST_CASE("Every numeric field of every shipped profile refuses overflow, negatives, -0 and absurd values by name",
          "[quick]")
{
  // NaN and infinity cannot be written in JSON; they arrive as 1e400 (beyond a double), as a product that overflows
  // (1e308 Gb/s is infinity in bytes/s) or as a string. Each is refused at its field, whatever the field.
  const char* const BAD[] = {"1e400", "-1e400", "1e308", "-1", "-0.0", "\"nan\"", "1e30"};
  Catalog cat(std::string(TENSORPATH_SOURCE_DIR) + "/models/hw");
  size_t fields = 0;
  for (const char* kind :
       {"nic", "pcie", "cpu", "gpu", "socket_link", "switch", "registration", "tcp", "host", "cluster"}) {
    for (const auto& name : cat.list(kind)) {
      const std::string file = cat.locate(kind, name).value();
      json doc = json::parse(slurp(file));
      std::vector<std::pair<json*, std::string>> numbers;
      numeric_fields(doc, "", numbers);
      if (std::string(kind) != "cluster") CHECK_FALSE(numbers.empty());
      for (auto& [value, path] : numbers) {
        ++fields;
        const json keep = *value;
        for (const char* bad : BAD) {
          *value = "@BAD@";
          std::string text = doc.dump();
          text.replace(text.find("\"@BAD@\""), 7, bad);
          *value = keep;
          auto r = cat.check_text(text, file);
          INFO(file << " " << path << " = " << bad);
          REQUIRE_FALSE(r.ok());
          CHECK(r.error().file == file);
          // a field the reader reads as a whole (an integer) or as a quantity's value
          CHECK(r.error().field == path);
        }
      }
    }
  }
  CHECK(fields > 200);
}

TEST_CASE("A rate of 1e308 Gb/s (infinity in bytes/s) and a latency of -0 are refused, naming the field", "[quick]")
{
  Catalog cat;
  const std::string file = cat.root() + "/switch/inline.json";
  auto inf = cat.check_text(R"({"kind": "socket_link", "bandwidth": {"value": 1e308, "unit": "Gb/s", "source": "x y z"},
    "latency": {"value": 1, "unit": "us", "source": "x y z"},
    "gpu_p2p_bandwidth": {"value": 1, "unit": "GB/s", "source": "x y z"}})",
                            file);
  REQUIRE_FALSE(inf.ok());
  CHECK(inf.error().field == "bandwidth.value");
  CHECK(inf.error().got.find("infinity") != std::string::npos);
  CHECK(inf.error().expected.find("1e+15") != std::string::npos); // the ceiling it breaks
  auto neg = cat.check_text(R"({"kind": "switch", "latency": {"value": -0.0, "unit": "ns", "source": "x y z"}})", file);
  REQUIRE_FALSE(neg.ok());
  CHECK(neg.error().field == "latency.value");
  CHECK(neg.error().got.find("-0") != std::string::npos);
  // the rule's limits are the field's: 0 and the dimension's ceiling are still right
  CHECK(cat.check_text(R"({"kind": "switch", "latency": {"value": 0, "unit": "ns", "source": "x y z"}})", file).ok());
  CHECK(cat.check_text(R"({"kind": "switch", "latency": {"value": 3600, "unit": "s", "source": "x y z"}})", file).ok());
}

TEST_CASE("A key given twice in a profile is refused with its path", "[quick]")
{
  Catalog cat;
  const std::string file = cat.root() + "/switch/inline.json";
  auto top = cat.check_text(R"({"kind": "switch", "latency": {"value": 1, "unit": "ns", "source": "x y z"},
                                "latency": {"value": 2, "unit": "ns", "source": "x y z"}})",
                            file);
  REQUIRE_FALSE(top.ok());
  CHECK(top.error().field == "latency");
  CHECK(top.error().expected == "each key once in an object");
  auto nested = cat.check_text(R"({"kind": "switch", "latency": {"value": 1, "unit": "ns", "unit": "us",
                                   "source": "x y z"}})",
                               file);
  REQUIRE_FALSE(nested.ok());
  CHECK(nested.error().field == "latency.unit");
  ScratchCatalog s("dupkey");
  s.write("switch", "twice", R"({"kind": "switch", "kind": "switch",
                                 "latency": {"value": 1, "unit": "ns", "source": "x y z"}})");
  auto file_dup = Catalog(s.root.string()).network_switch("twice");
  REQUIRE_FALSE(file_dup.ok());
  CHECK(file_dup.error().file.find("twice.json") != std::string::npos);
  CHECK(file_dup.error().field == "kind");
}

namespace {

/// A scratch directory of one's own profiles (not a copy of models/hw), removed at the end.
struct OwnDir {
  fs::path dir;
  explicit OwnDir(const std::string& tag)
  {
    dir = fs::temp_directory_path() / ("tp_own_" + tag + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~OwnDir() { fs::remove_all(dir); }
  std::string write(const fs::path& rel, const std::string& text) const
  {
    fs::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel) << text;
    return (dir / rel).string();
  }
};

/// A shipped NIC with another name and line rate.
std::string nic_text(double gbps)
{
  json j = json::parse(slurp(std::string(TENSORPATH_SOURCE_DIR) + "/models/hw/nic/connectx3-40gbe-roce.json"));
  j["line_rate"]["value"] = gbps;
  j.erase("name");
  return j.dump();
}

/// A shipped host whose NIC is `nic` (a name).
std::string host_text(const std::string& nic)
{
  json j = json::parse(slurp(std::string(TENSORPATH_SOURCE_DIR) + "/models/hw/host/hkust-k40m-cx3.json"));
  j["nics"][0]["model"] = nic;
  j.erase("name");
  return j.dump();
}

} // namespace

TEST_CASE("Profiles of one's own: --models-dir (set_models_dirs) first, then TENSORPATH_MODELS_DIR, then built-in",
          "[quick]")
{
  OwnDir cli("cli"), env("env");
  cli.write("nic/my-nic.json", nic_text(25));
  env.write("nic/my-nic.json", nic_text(50)); // shadowed by --models-dir's
  env.write("nic/env-nic.json", nic_text(50));
  env.write("host/my-host.json", host_text("env-nic"));
  ::setenv("TENSORPATH_MODELS_DIR", ("/no/such/dir:" + env.dir.string() + ":").c_str(), 1);
  set_models_dirs({cli.dir.string()});
  const auto path = models_search_path();
  REQUIRE(path.size() == 4); // the empty entry is skipped, the missing one kept (and said so when not found)
  CHECK(path[0].origin == "--models-dir");
  CHECK(path[1].path == "/no/such/dir");
  CHECK(path[2].origin == "TENSORPATH_MODELS_DIR");
  CHECK(path[3].origin == "built-in");
  Catalog cat;
  auto mine = cat.nic("my-nic");
  REQUIRE(mine.ok());
  CHECK(mine->line_rate == Approx(25e9 / 8));
  CHECK(mine->name == "my-nic");
  auto host = cat.host("my-host"); // found in the environment's directory, its NIC too
  REQUIRE(host.ok());
  CHECK(host->nics[0].nic.line_rate == Approx(50e9 / 8));
  CHECK(host->sockets.size() == 2); // its CPU and the rest from the built-in profiles
  CHECK(cat.kind_of("my-host").value() == "host");
  const auto nics = cat.list("nic");
  CHECK(std::count(nics.begin(), nics.end(), "my-nic") == 1);
  CHECK(std::count(nics.begin(), nics.end(), "connectx3-40gbe-roce") == 1);
  // the unknown name says where it looked
  auto missing = cat.nic("nowhere-nic");
  REQUIRE_FALSE(missing.ok());
  const std::string m = missing.error().message();
  CHECK(m.find("nowhere-nic") != std::string::npos);
  CHECK(m.find("--models-dir: " + cli.dir.string()) != std::string::npos);
  CHECK(m.find("TENSORPATH_MODELS_DIR: /no/such/dir (missing)") != std::string::npos);
  CHECK(m.find("TENSORPATH_MODELS_DIR: " + env.dir.string()) != std::string::npos);
  CHECK(m.find("built-in: " + builtin_models_dir()) != std::string::npos);
  set_models_dirs({});
  ::unsetenv("TENSORPATH_MODELS_DIR");
  CHECK_FALSE(Catalog().nic("my-nic").ok());
}

TEST_CASE("A profile's references are looked for beside its file first, an unknown one names the places", "[quick]")
{
  OwnDir own("beside");
  // a flat directory: the host, its NIC beside it, and a file of another kind with a referenced name
  const std::string host = own.write("lab/my-host.json", host_text("lab-nic"));
  own.write("lab/lab-nic.json", nic_text(100));
  own.write("lab/gen3-x8.json", GOOD_SWITCH); // a switch named like the NIC's PCIe profile: passed over
  Catalog cat(std::string(TENSORPATH_SOURCE_DIR) + "/models/hw");
  auto h = cat.host(host);
  REQUIRE(h.ok());
  CHECK(h->nics[0].nic.line_rate == Approx(100e9 / 8));
  CHECK(h->nics[0].pcie.name == "gen3-x8"); // the built-in PCIe profile
  // a models-dir layout: host/ and nic/ side by side
  const std::string host2 = own.write("tree/host/h2.json", host_text("tree-nic"));
  own.write("tree/nic/tree-nic.json", nic_text(10));
  auto h2 = cat.host(host2);
  REQUIRE(h2.ok());
  CHECK(h2->nics[0].nic.line_rate == Approx(10e9 / 8));
  // a NIC's default PCIe attachment beside the NIC's file
  json nic = json::parse(nic_text(40));
  nic["pcie"] = "lab-pcie";
  own.write("lab2/n.json", nic.dump());
  json pcie = json::parse(slurp(std::string(TENSORPATH_SOURCE_DIR) + "/models/hw/pcie/gen3-x8.json"));
  pcie["lanes"] = 4;
  own.write("lab2/lab-pcie.json", pcie.dump());
  const std::string host3 = own.write("lab3/h3.json", host_text((own.dir / "lab2/n.json").string()));
  auto h3 = cat.host(host3);
  REQUIRE(h3.ok());
  CHECK(h3->nics[0].pcie.lanes == 4);
  // unknown: at the referring field, with the places searched
  const std::string bad = own.write("lab/bad-host.json", host_text("no-such-nic"));
  auto r = cat.host(bad);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().file == bad);
  CHECK(r.error().field == "nics[0].model");
  CHECK(r.error().detail.find("beside " + bad) != std::string::npos);
  CHECK(r.error().detail.find((own.dir / "lab").string()) != std::string::npos);
  CHECK(r.error().detail.find(std::string(TENSORPATH_SOURCE_DIR) + "/models/hw") != std::string::npos);
}

TEST_CASE("PCIe switches and NVLink: a host's devices behind its switches, refused when the switch does not fit",
          "[quick]")
{
  Catalog cat(std::string(TENSORPATH_SOURCE_DIR) + "/models/hw");
  auto h = cat.host("hgx-h100-8gpu");
  REQUIRE(h.ok());
  REQUIRE(h->nvlink);
  CHECK(h->nvlink->links == 18);
  CHECK(h->nvlink->goodput() == Approx(h->nvlink->bandwidth() * h->nvlink->payload_efficiency));
  CHECK(h->gpus.size() == 8);
  CHECK(h->nics.size() == 8);
  for (int k = 0; k < 8; ++k) {
    INFO("GPU " << k);
    CHECK(h->same_pcie_switch(k, k)); // one GPU and its NIC per switch, as DGX H100
    CHECK_FALSE(h->same_pcie_switch(k, (k + 1) % 8));
  }
  CHECK_FALSE(cat.host("broadwell-p100")->nvlink); // the older hosts: no NVLink, no switches
  CHECK(cat.host("broadwell-p100")->pcie_switches.empty());

  ScratchCatalog s("pcieswitch");
  const std::string head =
      R"({"kind": "host", "sockets": [{"cpu": "xeon-e5-2603-v4", "memory": {"value": 1, "unit": "GiB", "source": "x y z"}},
                                     {"cpu": "xeon-e5-2603-v4", "memory": {"value": 1, "unit": "GiB", "source": "x y z"}}],
        "socket_link": "qpi-broadwell", "registration": "mlx-reg-mr", "tcp": "tcp-ethernet",
        "pcie_switches": [{"socket": 0, "uplink": "gen3-x16", "latency": {"value": 150, "unit": "ns", "source": "x y z"}}],)";
  s.write("host", "othersocket",
          head + R"("nics": [{"model": "connectx3-40gbe-roce", "socket": 1, "pcie_switch": 0}]})");
  s.write("host", "noswitch", head + R"("nics": [{"model": "connectx3-40gbe-roce", "socket": 0, "pcie_switch": 1}]})");
  s.write(
      "host", "nolatency",
      R"({"kind": "host", "sockets": [{"cpu": "xeon-e5-2603-v4", "memory": {"value": 1, "unit": "GiB", "source": "x y z"}}],
              "registration": "mlx-reg-mr", "tcp": "tcp-ethernet", "pcie_switches": [{"socket": 0, "uplink": "gen3-x16"}],
              "nics": [{"model": "connectx3-40gbe-roce", "socket": 0}]})");
  s.write("nvlink", "slow",
          R"({"kind": "nvlink", "links": {"value": 4, "unit": "count", "source": "x y z"},
              "link_bandwidth": {"value": 25, "unit": "GB/s", "source": "x y z"},
              "payload_efficiency": {"value": 0, "unit": "fraction", "source": "x y z"},
              "latency": {"value": 1, "unit": "us", "source": "x y z"}})");
  Catalog scratch(s.root.string());
  auto other = scratch.host("othersocket");
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().field == "nics[0].pcie_switch");
  CHECK(other.error().expected.find("under the device's socket 1") != std::string::npos);
  auto none = scratch.host("noswitch");
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().field == "nics[0].pcie_switch");
  auto nolat = scratch.host("nolatency");
  REQUIRE_FALSE(nolat.ok());
  CHECK(nolat.error().field == "pcie_switches[0].latency");
  auto slow = scratch.nvlink("slow");
  REQUIRE_FALSE(slow.ok());
  CHECK(slow.error().field == "payload_efficiency");
}

TEST_CASE("A switch's buffer: its pools and alphas load, wrong ones are refused naming the field", "[quick]")
{
  auto sn2100 = Catalog().network_switch("mellanox-sn2100");
  REQUIRE(sn2100.ok());
  REQUIRE(sn2100->buffer);
  CHECK(sn2100->buffer->lossy_pool == 4580864); // SONiC's T0 egress_lossy_pool on Spectrum-1
  CHECK(sn2100->buffer->lossy_alpha == 8);      // q_lossy_profile dynamic_th 3
  CHECK(sn2100->buffer->lossless_alpha == 1);
  CHECK(sn2100->buffer->memory == 16000000);
  REQUIRE(sn2100->buffer->pfc.size() == 5); // pg_profile_lookup.ini's 5 m rows, 10G to 100G
  CHECK(sn2100->buffer->pfc.back().rate == 100e9);
  CHECK(sn2100->buffer->pfc.back().xoff == 30720);
  CHECK(sn2100->buffer->pfc.back().xon == 19456);
  auto sx = Catalog().network_switch("mellanox-sx1036");
  REQUIRE(sx.ok());
  CHECK_FALSE(sx->buffer);

  ScratchCatalog s("swbuf");
  const std::string head =
      R"({"kind": "switch", "latency": {"value": 100, "unit": "ns", "source": "a test's value"}, "buffer": )";
  auto q = [](const std::string& v, const std::string& unit) {
    return R"({"value": )" + v + R"(, "unit": ")" + unit + R"(", "source": "a test's value"})";
  };
  struct Case {
    const char* name;
    std::string buffer;
    const char* field;
  } cases[] = {
      {"notobject", "5", "buffer"},
      {"alpha3", R"({"lossy_pool": )" + q("1", "MB") + R"(, "lossy_alpha": )" + q("3", "1") + "}",
       "buffer.lossy_alpha"},
      {"alphatiny", R"({"lossy_pool": )" + q("1", "MB") + R"(, "lossy_alpha": )" + q("0.001953125", "1") + "}",
       "buffer.lossy_alpha"},
      {"alpha0", R"({"lossy_pool": )" + q("1", "MB") + R"(, "lossy_alpha": )" + q("0", "1") + "}",
       "buffer.lossy_alpha"},
      {"nopool", R"({"lossy_alpha": )" + q("1", "1") + "}", "buffer.lossy_pool"},
      {"halflossless",
       R"({"lossy_pool": )" + q("1", "MB") + R"(, "lossy_alpha": )" + q("1", "1") + R"(, "lossless_pool": )" +
           q("1", "MB") + "}",
       "buffer.lossless_alpha"},
      {"overmemory",
       R"({"memory": )" + q("1", "MB") + R"(, "lossy_pool": )" + q("2", "MB") + R"(, "lossy_alpha": )" + q("1", "1") +
           "}",
       "buffer.lossy_pool"},
      {"typo", R"({"lossy_pool": )" + q("1", "MB") + R"(, "lossy_alpha": )" + q("1", "1") + R"(, "lossy_alfa": 1})",
       "buffer.lossy_alfa"},
      {"pfcshort",
       R"({"lossy_pool": )" + q("1", "MB") + R"(, "lossy_alpha": )" + q("1", "1") +
           R"(, "pfc": {"cable": "5m", "speeds_gbps": [40, 100], "xon_bytes": [1, 2], "xoff_bytes": [3],
           "source": "a test's value"}})",
       "buffer.pfc.xoff_bytes"},
      {"pfctwice",
       R"({"lossy_pool": )" + q("1", "MB") + R"(, "lossy_alpha": )" + q("1", "1") +
           R"(, "pfc": {"cable": "5m", "speeds_gbps": [40, 40], "xon_bytes": [1, 2], "xoff_bytes": [3, 4],
           "source": "a test's value"}})",
       "buffer.pfc.speeds_gbps"},
      {"pfcnosource",
       R"({"lossy_pool": )" + q("1", "MB") + R"(, "lossy_alpha": )" + q("1", "1") +
           R"(, "pfc": {"cable": "5m", "speeds_gbps": [40], "xon_bytes": [1], "xoff_bytes": [3]}})",
       "buffer.pfc.source"},
      {"pfczero",
       R"({"lossy_pool": )" + q("1", "MB") + R"(, "lossy_alpha": )" + q("1", "1") +
           R"(, "pfc": {"cable": "5m", "speeds_gbps": [40], "xon_bytes": [1], "xoff_bytes": [0],
           "source": "a test's value"}})",
       "buffer.pfc.xoff_bytes"},
  };
  for (const auto& c : cases) {
    s.write("switch", c.name, head + c.buffer + "}");
    auto r = Catalog(s.root.string()).network_switch(c.name);
    INFO(c.name);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message().find(c.field) != std::string::npos);
  }
  s.write("switch", "good",
          head + R"({"lossy_pool": )" + q("9000", "B") + R"(, "lossy_alpha": )" + q("0.125", "1") + "}}");
  auto good = Catalog(s.root.string()).network_switch("good");
  REQUIRE(good.ok());
  CHECK(good->buffer->lossless_pool == 0);
  // One hot port under alpha 1/8 holds a ninth of the pool.
  CHECK(lossy_port_buffer(good.value(), 1).value() == 1000);
}

TEST_CASE("The dynamic threshold's share: alpha B / (1 + n alpha) for n queues filling together", "[quick]")
{
  // q = alpha (B - n q): one queue at alpha 8 takes 8/9 of the pool, two 8/17 each, eight 8/65 each.
  CHECK(dynamic_threshold_share(9000, 8, 1) == 8000);
  CHECK(dynamic_threshold_share(17000, 8, 2) == 8000);
  CHECK(dynamic_threshold_share(65000, 8, 8) == 8000);
  CHECK(dynamic_threshold_share(9000, 0.125, 1) == 1000);
  CHECK(dynamic_threshold_share(9000, 1, 2) == 3000);
  // never more than the pool, less for every queue added
  uint64_t last = 9000;
  for (int n = 1; n <= 64; ++n) {
    const uint64_t s = dynamic_threshold_share(9000, 64, n);
    CHECK(s < last);
    CHECK(s * uint64_t(n) <= 9000);
    last = s;
  }
  CHECK(dynamic_threshold_share(9000, 0, 1) == 0);
  CHECK(dynamic_threshold_share(9000, 1, 0) == 0);
  SwitchProfile none{"plain", 1e-7, {}};
  auto r = lossy_port_buffer(none, 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("plain") != std::string::npos);
}
