// The shipped profiles load, and bad profiles are refused with the file and the field named.
#include "models/catalog.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

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
  auto overflow =
      cat.check_text(R"({"kind": "switch", "latency": {"value": 1e400, "unit": "ns", "source": "x y z"}})", file);
  REQUIRE_FALSE(overflow.ok());
  CHECK(overflow.error().expected == "valid JSON");
  ScratchCatalog s("overflow");
  s.write("switch", "huge", R"({"kind": "switch", "latency": {"value": 1e400, "unit": "ns", "source": "x y z"}})");
  auto huge = Catalog(s.root.string()).network_switch("huge");
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.error().expected == "valid JSON");
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
