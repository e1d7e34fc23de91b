// Workload models: architectures against the Keras Applications parameter totals, the PipeDream profile
// parser, and how a step's compute is derived from measured throughput (exact, interpolated, scaled).
#include "models/workload/architectures.hpp"
#include "models/workload/layer_profile.hpp"
#include "models/workload/workload.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

using namespace tp::models;
namespace fs = std::filesystem;

namespace {

Architecture arch(const std::string& name)
{
  auto a = architecture(name);
  REQUIRE(a.ok());
  return a.value();
}

std::string profile_path(const std::string& file)
{
  return (fs::path(default_workloads_dir()) / "pipedream" / file).string();
}

/// A scratch workloads dir with one throughput file of the given text (and the real profiles).
std::string scratch_workloads(const std::string& name, const std::string& text)
{
  const fs::path d = fs::temp_directory_path() / ("tp_workloads_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d / "throughput");
  fs::create_directory_symlink(fs::path(default_workloads_dir()) / "pipedream", d / "pipedream");
  std::ofstream(d / "throughput" / "t.json") << text;
  return d.string();
}

} // namespace

TEST_CASE("architecture totals match the Keras Applications table", "[workload]")
{
  // keras.io/api/applications (exact counts): independent of the generator.
  CHECK(arch("vgg16").parameters() == 138357544);
  CHECK(arch("resnet50-keras").parameters() == 25636712);
  CHECK(arch("inception3").parameters() == 23851784);
  CHECK(arch("resnet101-keras").parameters() == 44707176);
  CHECK(arch("resnet152-keras").parameters() == 60419944);
}

TEST_CASE("tf_cnn_benchmarks variants have the reference tensor counts", "[workload]")
{
  const auto r50 = arch("resnet50");
  CHECK(r50.parameters() == 25612201);
  CHECK(r50.parameters(true) == 25559081);
  CHECK(r50.variable_count() == 267);
  CHECK(arch("alexnet").parameters() == 61842345);
  CHECK(arch("googlenet").parameters() == 6999577);
  CHECK(arch("vgg16").variable_count() == 32);
  CHECK(arch("inception3").variable_count() == 378);
  // ResNet-152 (He et al. 2016, bottleneck blocks [3, 8, 36, 3]): ~60.2 M trainable parameters, the count the
  // paper's family is usually cited with (the AR-gRPC training case runs this list).
  CHECK(double(arch("resnet152").parameters(true)) == Approx(60.2e6).epsilon(0.01));
}

TEST_CASE("forward FLOPs agree with the papers' multiply-add counts", "[workload]")
{
  // VGG16 15.5 G multiply-adds (Simonyan & Zisserman table / common counts), ResNet-50 3.8 G (He et al. Table 1),
  // GoogLeNet 1.5 G (Szegedy et al.). One multiply-add = 2 FLOPs.
  CHECK(arch("vgg16").forward_flops() == Approx(2 * 15.5e9).epsilon(0.03));
  CHECK(arch("resnet50").forward_flops() == Approx(2 * 3.8e9).epsilon(0.10));
  CHECK(arch("resnet152").forward_flops() == Approx(2 * 11.3e9).epsilon(0.10));
  CHECK(arch("googlenet").forward_flops() == Approx(2 * 1.5e9).epsilon(0.15));
}

TEST_CASE("unknown architecture names the field and the choices", "[workload]")
{
  auto a = architecture("vgg17");
  REQUIRE_FALSE(a.ok());
  CHECK(a.error().field == "model");
  CHECK(a.error().expected.find("vgg16") != std::string::npos);
}

TEST_CASE("PipeDream VGG16 profile parses in topological order with torchvision's parameters", "[workload]")
{
  auto p = parse_pipedream_profile(profile_path("vgg16.graph.txt"));
  REQUIRE(p.ok());
  CHECK(p->parameter_bytes() == Approx(138357544.0 * 4));
  std::vector<std::string> with_params;
  for (const auto& l : p->layers)
    if (l.parameter_bytes > 0) with_params.push_back(l.module.substr(0, l.module.find('(')));
  REQUIRE(with_params.size() == 16);
  CHECK(with_params.front() == "Conv2d");
  CHECK(with_params.back() == "Linear");
  CHECK(p->layers.front().module.rfind("Input", 0) == 0);
  CHECK(p->compute_seconds() > 0);
}

TEST_CASE("malformed profile line is an error naming file and line", "[workload]")
{
  const fs::path f = fs::temp_directory_path() / ("tp_bad_profile_" + std::to_string(::getpid()) + ".graph.txt");
  std::ofstream(f) << "node1 -- Input -- forward_compute_time=0.0, backward_compute_time=0.0, activation_size=1, "
                      "parameter_size=0\nnode2 -- Conv2d(3, 64) -- forward_compute_time=abc, backward_compute_time=1, "
                      "activation_size=1, parameter_size=4\n";
  auto p = parse_pipedream_profile(f.string());
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().file == f.string());
  CHECK(p.error().field.find("line 2") != std::string::npos);
  CHECK(p.error().field.find("forward_compute_time") != std::string::npos);
}

TEST_CASE("a profile's numbers that cannot be right (NaN, infinity, -0, absurd) and repeated keys are refused",
          "[workload]")
{
  const fs::path f = fs::temp_directory_path() / ("tp_nan_profile_" + std::to_string(::getpid()) + ".graph.txt");
  const std::string keys[] = {"forward_compute_time", "backward_compute_time", "activation_size", "parameter_size"};
  for (const auto& key : keys)
    for (const char* bad : {"nan", "inf", "-inf", "-0", "-1", "1e300", "1e999"}) {
      std::string line = "node1 -- A --";
      for (const auto& k : keys)
        line += std::string(k == keys[0] ? " " : ", ") + k + "=" + (k == key ? bad : "1");
      std::ofstream(f) << line << "\n";
      auto p = parse_pipedream_profile(f.string());
      INFO(line);
      REQUIRE_FALSE(p.ok());
      CHECK(p.error().field == "line 1: " + key);
    }
  std::ofstream(f) << "node1 -- A -- forward_compute_time=1, backward_compute_time=1, activation_size=1, "
                      "parameter_size=4, forward_compute_time=2\n";
  auto twice = parse_pipedream_profile(f.string());
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().field == "line 1: forward_compute_time");
  fs::remove(f);
}

TEST_CASE("profile with a cycle is rejected", "[workload]")
{
  const fs::path f = fs::temp_directory_path() / ("tp_cycle_profile_" + std::to_string(::getpid()) + ".graph.txt");
  const std::string kv = " -- forward_compute_time=1, backward_compute_time=1, activation_size=1, parameter_size=4\n";
  std::ofstream(f) << "node1 -- A" << kv << "node2 -- B" << kv << "\tnode1 -- node2\n\tnode2 -- node1\n";
  auto p = parse_pipedream_profile(f.string());
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().got == "a cycle");
}

TEST_CASE("VGG16 on a K80 die at batch 32 takes the measured throughput", "[workload]")
{
  WorkloadLibrary lib;
  auto w = lib.make("vgg16", "k80", 32);
  REQUIRE(w.ok());
  // Two measured runs (GCE 35.4, AWS 36.3 img/s) averaged.
  CHECK(w->compute_seconds() == Approx(32.0 / ((35.4 + 36.3) / 2)).epsilon(1e-9));
  CHECK(w->variable_count() == 32);
  CHECK(w->parameter_bytes() == arch("vgg16").bytes());
  // Layer by layer agreement: every conv variable sits on a Conv2d layer, every fc variable on a Linear one.
  for (const auto& l : w->layers)
    for (const auto& v : l.variables) {
      INFO(v.name << " on " << l.name);
      CHECK(l.name.find(v.name.rfind("fc", 0) == 0 ? "Linear" : "Conv2d") != std::string::npos);
    }
}

TEST_CASE("gradients of late layers become ready first", "[workload]")
{
  WorkloadLibrary lib;
  auto w = lib.make("resnet50", "p100-sxm2", 64);
  REQUIRE(w.ok());
  CHECK(w->compute_seconds() == Approx(64.0 / 219).epsilon(1e-9));
  CHECK(w->parameter_bytes() == arch("resnet50").bytes());
  // The fc layer's variables are on the last parameter layer of the profile.
  const WorkloadLayer* last = nullptr;
  for (const auto& l : w->layers)
    if (!l.variables.empty()) last = &l;
  REQUIRE(last);
  bool has_fc = false;
  for (const auto& v : last->variables)
    has_fc |= v.name.rfind("fc/", 0) == 0;
  CHECK(has_fc);
}

TEST_CASE("batch between two measured sizes interpolates images per second", "[workload]")
{
  WorkloadLibrary lib;
  std::string how;
  auto t = lib.step_compute_seconds("vgg16", "p100-sxm2", 48, &how);
  REQUIRE(t.ok());
  CHECK(t.value() == Approx(48.0 / 149.0).epsilon(1e-9)); // 144 img/s at 32, 154 at 64
  CHECK(how.find("interpolated") != std::string::npos);
}

TEST_CASE("GPU without measurements is scaled from the closest measured GPU by FP32 peak", "[workload]")
{
  WorkloadLibrary lib;
  std::string how;
  auto k40 = lib.step_compute_seconds("vgg16", "k40m", 32, &how);
  auto k80 = lib.step_compute_seconds("vgg16", "k80", 32);
  REQUIRE(k40.ok());
  REQUIRE(k80.ok());
  CHECK(k40.value() == Approx(k80.value() * 4.37 / 4.29).epsilon(1e-9));
  CHECK(how.find("derived") != std::string::npos);
  auto p100 = lib.step_compute_seconds("resnet50", "p100-pcie", 64);
  REQUIRE(p100.ok());
  CHECK(p100.value() == Approx(64.0 / 219 * 10.6 / 9.3).epsilon(1e-9));
}

TEST_CASE("model without measurements is scaled from ResNet-50 by profile or FLOPs", "[workload]")
{
  WorkloadLibrary lib;
  std::string how;
  auto r101 = lib.step_compute_seconds("resnet101", "p100-sxm2", 64, &how);
  REQUIRE(r101.ok());
  auto p50 = parse_pipedream_profile(profile_path("resnet50.graph.txt"));
  auto p101 = parse_pipedream_profile(profile_path("resnet101.graph.txt"));
  CHECK(r101.value() == Approx(64.0 / 219 * p101->compute_seconds() / p50->compute_seconds()).epsilon(1e-9));
  auto g = lib.make("googlenet", "p100-sxm2", 64);
  REQUIRE(g.ok());
  CHECK(g->compute_seconds() ==
        Approx(64.0 / 219 * arch("googlenet").forward_flops() / arch("resnet50").forward_flops()).epsilon(1e-9));
  for (const auto& l : g->layers)
    CHECK(l.backward_seconds == Approx(2 * l.forward_seconds));
  CHECK(g->provenance.find("FLOPs") != std::string::npos);
}

TEST_CASE("throughput file with an unknown GPU names file and field", "[workload]")
{
  const auto dir = scratch_workloads("badgpu", R"({"kind": "training_throughput", "entries": [
    {"gpu": "k41m", "model": "vgg16", "batch": 32, "images_per_second": {"value": 30, "unit": "img/s", "source": "test"}}]})");
  WorkloadLibrary lib(dir);
  auto w = lib.make("vgg16", "k80", 32);
  REQUIRE_FALSE(w.ok());
  CHECK(w.error().field == "entries[0].gpu");
  CHECK(w.error().file.find("t.json") != std::string::npos);
}

TEST_CASE("throughput with a wrong unit is rejected", "[workload]")
{
  const auto dir = scratch_workloads("badunit", R"({"kind": "training_throughput", "entries": [
    {"gpu": "k80", "model": "vgg16", "batch": 32, "images_per_second": {"value": 30, "unit": "GB/s", "source": "test"}}]})");
  WorkloadLibrary lib(dir);
  auto w = lib.make("vgg16", "k80", 32);
  REQUIRE_FALSE(w.ok());
  CHECK(w.error().field == "entries[0].images_per_second.unit");
}
