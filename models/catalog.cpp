// Profile loading: strict JSON reading with file/field error messages. Internally a LoadError exception
// carries the Error up to the public functions, which return it as a value.
#include "models/catalog.hpp"
#include "models/quantity.hpp"
#include "models/simgrid_platform.hpp"

#include "core/common/suggest.hpp"
#include "models/json_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#ifndef TENSORPATH_DEFAULT_MODELS_DIR
#define TENSORPATH_DEFAULT_MODELS_DIR "models/hw"
#endif

namespace fs = std::filesystem;

namespace tp::models {

const char* to_string(LinkLayerKind k)
{
  switch (k) {
  case LinkLayerKind::INFINIBAND:
    return "infiniband";
  case LinkLayerKind::ROCE_V1:
    return "roce_v1";
  case LinkLayerKind::ROCE_V2:
    return "roce_v2";
  case LinkLayerKind::ETHERNET:
    return "ethernet";
  }
  return "?";
}

std::string builtin_models_dir()
{
  return TENSORPATH_DEFAULT_MODELS_DIR;
}

namespace {

std::vector<std::string>& cli_models_dirs()
{
  static std::vector<std::string> dirs;
  return dirs;
}

} // namespace

void set_models_dirs(const std::vector<std::string>& dirs)
{
  cli_models_dirs() = dirs;
}

std::vector<ModelsDir> models_search_path()
{
  std::vector<ModelsDir> out;
  auto add = [&out](const std::string& path, const char* origin) {
    if (path.empty()) return;
    for (const auto& d : out)
      if (d.path == path) return; // the first mention decides its place
    out.push_back({path, origin});
  };
  for (const auto& d : cli_models_dirs())
    add(d, "--models-dir");
  if (const char* env = std::getenv("TENSORPATH_MODELS_DIR")) {
    std::string list = env;
    size_t start = 0;
    while (start <= list.size()) {
      const size_t colon = std::min(list.find(':', start), list.size());
      add(list.substr(start, colon - start), "TENSORPATH_MODELS_DIR");
      start = colon + 1;
    }
  }
  add(builtin_models_dir(), "built-in");
  return out;
}

namespace {

using json_input::fail;
using json_input::json;
using json_input::LoadError;
using Obj = json_input::Object;

std::string type_name(const json& j)
{
  return std::string(j.type_name());
}

using json_input::quantity;

json read_json_file(const std::string& path)
{
  return json_input::read_file(path);
}

void check_kind(Obj& o, const std::string& kind)
{
  if (o.has("kind")) {
    std::string k = o.str("kind");
    if (k != kind) fail(o.file(), o.field("kind"), "\"" + kind + "\"", "\"" + k + "\"");
  }
}

// ---- component parsers ----

NicProfile parse_nic(Obj o)
{
  check_kind(o, "nic");
  NicProfile p;
  p.name = o.str("name", "");
  p.description = o.str("description", "");
  p.file = o.file();
  std::string ll = o.str("link_layer");
  if (ll == "infiniband")
    p.link_layer = LinkLayerKind::INFINIBAND;
  else if (ll == "roce_v1")
    p.link_layer = LinkLayerKind::ROCE_V1;
  else if (ll == "roce_v2")
    p.link_layer = LinkLayerKind::ROCE_V2;
  else if (ll == "ethernet")
    p.link_layer = LinkLayerKind::ETHERNET;
  else
    fail(o.file(), o.field("link_layer"), "one of infiniband, roce_v1, roce_v2, ethernet (no RDMA)", "\"" + ll + "\"");
  p.line_rate = quantity(o, "line_rate", Dimension::BYTE_RATE, std::nullopt, 1.0);
  double mtu = quantity(o, "mtu", Dimension::BYTES);
  if (mtu != 256 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096)
    fail(o.file(), o.field("mtu"), "an IB path MTU (256, 512, 1024, 2048 or 4096 bytes)", std::to_string(mtu));
  p.mtu = uint32_t(mtu);
  p.packet_overhead = quantity(o, "packet_overhead", Dimension::BYTES);
  p.rdma_header_bytes = quantity(o, "rdma_header_bytes", Dimension::BYTES);
  p.imm_header_bytes = quantity(o, "imm_header_bytes", Dimension::BYTES);
  p.ack_packet_bytes = quantity(o, "ack_packet_bytes", Dimension::BYTES);
  p.pcie = o.str("pcie");
  p.port_latency = quantity(o, "port_latency", Dimension::TIME);
  p.tx_pipeline_latency = quantity(o, "tx_pipeline_latency", Dimension::TIME);
  p.rx_pipeline_latency = quantity(o, "rx_pipeline_latency", Dimension::TIME);
  p.wqe_processing_time = quantity(o, "wqe_processing_time", Dimension::TIME);
  p.max_message_rate = quantity(o, "max_message_rate", Dimension::MESSAGE_RATE, 0.0);
  p.max_inline_data = uint32_t(quantity(o, "max_inline_data", Dimension::BYTES, 0.0, 0.0, 1 << 20)); // fits 32 bits
  o.finish();
  return p;
}

PcieProfile parse_pcie(Obj o)
{
  check_kind(o, "pcie");
  PcieProfile p;
  p.name = o.str("name", "");
  p.transfer_rate = quantity(o, "transfer_rate", Dimension::TRANSFER_RATE, std::nullopt, 1.0);
  p.encoding_efficiency = quantity(o, "encoding_efficiency", Dimension::FRACTION, std::nullopt, 0.5);
  if (p.encoding_efficiency > 1)
    fail(o.file(), o.field("encoding_efficiency"), "a fraction <= 1", std::to_string(p.encoding_efficiency));
  p.lanes = int(o.integer("lanes", 1, 32));
  p.max_payload_size = quantity(o, "max_payload_size", Dimension::BYTES, std::nullopt, 128);
  p.write_tlp_overhead = quantity(o, "write_tlp_overhead", Dimension::BYTES);
  p.completion_tlp_overhead = quantity(o, "completion_tlp_overhead", Dimension::BYTES);
  p.dllp_overhead = quantity(o, "dllp_overhead", Dimension::FRACTION);
  if (p.dllp_overhead >= 1) fail(o.file(), o.field("dllp_overhead"), "a fraction < 1", std::to_string(p.dllp_overhead));
  p.link_latency = quantity(o, "link_latency", Dimension::TIME);
  o.finish();
  return p;
}

CpuProfile parse_cpu(Obj o)
{
  check_kind(o, "cpu");
  CpuProfile p;
  p.name = o.str("name", "");
  p.cores = int(o.integer("cores", 1, 1024));
  p.frequency = quantity(o, "frequency", Dimension::FREQUENCY, std::nullopt, 1.0);
  p.l2_size = quantity(o, "l2_size", Dimension::BYTES);
  p.l3_size = quantity(o, "l3_size", Dimension::BYTES);
  p.memcpy_l2_bandwidth = quantity(o, "memcpy_l2_bandwidth", Dimension::BYTE_RATE, std::nullopt, 1.0);
  p.memcpy_llc_bandwidth = quantity(o, "memcpy_llc_bandwidth", Dimension::BYTE_RATE, std::nullopt, 1.0);
  p.memcpy_dram_bandwidth = quantity(o, "memcpy_dram_bandwidth", Dimension::BYTE_RATE, std::nullopt, 1.0);
  p.memory_bandwidth = quantity(o, "memory_bandwidth", Dimension::BYTE_RATE, 0.0);
  p.work_handoff_latency = quantity(o, "work_handoff_latency", Dimension::TIME, 0.0);
  p.mpi_call_overhead = quantity(o, "mpi_call_overhead", Dimension::TIME, CpuProfile{}.mpi_call_overhead);
  p.memcpy_call_overhead = quantity(o, "memcpy_call_overhead", Dimension::TIME);
  p.dma_read_latency = quantity(o, "dma_read_latency", Dimension::TIME);
  p.posted_write_latency = quantity(o, "posted_write_latency", Dimension::TIME);
  p.mmio_write_latency = quantity(o, "mmio_write_latency", Dimension::TIME);
  p.read_completion_size = quantity(o, "read_completion_size", Dimension::BYTES, std::nullopt, 16);
  p.post_overhead = quantity(o, "post_overhead", Dimension::TIME);
  p.completion_overhead = quantity(o, "completion_overhead", Dimension::TIME);
  p.serialize_bandwidth = quantity(o, "serialize_bandwidth", Dimension::BYTE_RATE, std::nullopt, 1.0);
  p.deserialize_bandwidth = quantity(o, "deserialize_bandwidth", Dimension::BYTE_RATE, std::nullopt, 1.0);
  if (p.l3_size < p.l2_size) fail(o.file(), o.field("l3_size"), "l3_size >= l2_size", std::to_string(p.l3_size));
  o.finish();
  return p;
}

GpuProfile parse_gpu(Obj o)
{
  check_kind(o, "gpu");
  GpuProfile p;
  p.name = o.str("name", "");
  p.file = o.file();
  p.architecture = o.str("architecture", "");
  static const std::vector<std::string> ARCHITECTURES = {"kepler", "maxwell", "pascal", "volta",
                                                         "turing", "ampere",  "hopper", "blackwell"};
  if (!p.architecture.empty() &&
      std::find(ARCHITECTURES.begin(), ARCHITECTURES.end(), p.architecture) == ARCHITECTURES.end())
    fail(o.file(), o.field("architecture"), one_of_names(p.architecture, ARCHITECTURES),
         unknown_name(p.architecture, ARCHITECTURES));
  p.pcie = o.str("pcie");
  p.memory = quantity(o, "memory", Dimension::BYTES, std::nullopt, 1.0);
  p.memory_bandwidth = quantity(o, "memory_bandwidth", Dimension::BYTE_RATE, std::nullopt, 1.0);
  p.fp32_peak = quantity(o, "fp32_peak", Dimension::FLOP_RATE, std::nullopt, 1.0);
  p.memcpy_launch_overhead = quantity(o, "memcpy_launch_overhead", Dimension::TIME);
  p.kernel_launch_overhead = quantity(o, "kernel_launch_overhead", Dimension::TIME);
  p.p2p_read_bandwidth = quantity(o, "p2p_read_bandwidth", Dimension::BYTE_RATE, std::nullopt, 1.0);
  o.finish();
  return p;
}

SocketLinkProfile parse_socket_link(Obj o)
{
  check_kind(o, "socket_link");
  SocketLinkProfile p;
  p.name = o.str("name", "");
  p.bandwidth = quantity(o, "bandwidth", Dimension::BYTE_RATE, std::nullopt, 1.0);
  p.latency = quantity(o, "latency", Dimension::TIME);
  p.gpu_p2p_bandwidth = quantity(o, "gpu_p2p_bandwidth", Dimension::BYTE_RATE, std::nullopt, 1.0);
  o.finish();
  return p;
}

NvlinkProfile parse_nvlink(Obj o)
{
  check_kind(o, "nvlink");
  NvlinkProfile p;
  p.name = o.str("name", "");
  p.links = int(quantity(o, "links", Dimension::COUNT, std::nullopt, 1));
  p.link_bandwidth = quantity(o, "link_bandwidth", Dimension::BYTE_RATE, std::nullopt, 1.0);
  p.payload_efficiency = quantity(o, "payload_efficiency", Dimension::FRACTION);
  if (!(p.payload_efficiency > 0))
    fail(o.file(), o.field("payload_efficiency"), "a fraction above 0 (the share of the line rate that carries data)",
         std::to_string(p.payload_efficiency));
  p.latency = quantity(o, "latency", Dimension::TIME);
  o.finish();
  return p;
}

/// A lossless priority group's PFC rows by port speed (SwitchBuffer::pfc): {cable, speeds_gbps, xon_bytes,
/// xoff_bytes, optional xon_offset_bytes, source, status}, one sourced table.
SwitchBuffer parse_switch_pfc(const Obj& parent, const json& j, SwitchBuffer b)
{
  const std::string field = parent.field("pfc");
  if (!j.is_object())
    fail(parent.file(), field, "an object {cable, speeds_gbps, xon_bytes, xoff_bytes, source}", type_name(j));
  Obj o(j, parent.file(), field);
  b.pfc_cable = o.str("cable");
  auto list = [&](const char* key, double lo, double hi) {
    const json& a = o.get(key);
    if (!a.is_array() || a.empty())
      fail(o.file(), o.field(key), "a non-empty list of numbers", a.is_array() ? "an empty list" : type_name(a));
    std::vector<double> out;
    for (const auto& v : a) {
      if (!v.is_number() || !(v.get<double>() >= lo && v.get<double>() <= hi))
        fail(o.file(), o.field(key), fmt::format("numbers from {} to {}", lo, hi), v.dump());
      out.push_back(v.get<double>());
    }
    return out;
  };
  const auto speeds = list("speeds_gbps", 1, 1e5), xon = list("xon_bytes", 0, 1e9), xoff = list("xoff_bytes", 1, 1e9);
  if (xon.size() != speeds.size() || xoff.size() != speeds.size())
    fail(o.file(), o.field(xon.size() != speeds.size() ? "xon_bytes" : "xoff_bytes"),
         "one value per speed (" + std::to_string(speeds.size()) + ")",
         std::to_string(xon.size() != speeds.size() ? xon.size() : xoff.size()));
  for (size_t i = 0; i < speeds.size(); ++i) {
    for (size_t k = 0; k < i; ++k)
      if (speeds[k] == speeds[i])
        fail(o.file(), o.field("speeds_gbps"), "each speed once", fmt::format("{} twice", speeds[i]));
    b.pfc.push_back({speeds[i] * 1e9, uint64_t(xoff[i]), uint64_t(xon[i])});
  }
  b.xon_offset = uint64_t(o.number("xon_offset_bytes", 0, 1e9, 0));
  const std::string source = o.str("source");
  if (source.size() < 3)
    fail(o.file(), o.field("source"), "a non-empty source (paper, manual, repository file) for these numbers",
         "\"" + source + "\"");
  if (o.has("status")) {
    static const std::set<std::string> statuses = {"confirmed", "secondary", "derived", "assumption", "standard"};
    if (const std::string st = o.str("status"); !statuses.count(st))
      fail(o.file(), o.field("status"), "one of confirmed, secondary, derived, assumption, standard", "\"" + st + "\"");
  }
  o.finish();
  return b;
}

/// A switch's packet buffer (models/switch_model.hpp): its pools and their dynamic thresholds' alphas, each a sourced
/// quantity. Alphas are powers of two from 1/128 to 64, the values the ASICs take (SAI's dynamic_th -7 .. 6).
SwitchBuffer parse_switch_buffer(const Obj& parent, const json& j)
{
  const std::string field = parent.field("buffer");
  if (!j.is_object())
    fail(parent.file(), field, "an object {lossy_pool, lossy_alpha[, lossless_pool, lossless_alpha, memory]}",
         type_name(j));
  Obj o(j, parent.file(), field);
  SwitchBuffer b;
  auto alpha = [&](const char* key) {
    const double a = quantity(o, key, Dimension::COUNT, std::nullopt, 0.0, 64.0);
    const double exponent = std::log2(a);
    if (!(a > 0) || exponent != std::round(exponent) || exponent < -7)
      fail(o.file(), o.field(key), "a power of two from 1/128 to 64 (a dynamic threshold's alpha)",
           fmt::format("{}", a));
    return a;
  };
  b.memory = uint64_t(quantity(o, "memory", Dimension::BYTES, 0.0));
  b.lossy_pool = uint64_t(quantity(o, "lossy_pool", Dimension::BYTES, std::nullopt, 1518.0));
  b.lossy_alpha = alpha("lossy_alpha");
  if (o.has("lossless_pool") != o.has("lossless_alpha"))
    fail(o.file(), o.field(o.has("lossless_pool") ? "lossless_alpha" : "lossless_pool"),
         "lossless_pool and lossless_alpha together (a lossless class's pool and its threshold)", "one of them");
  if (o.has("lossless_pool")) {
    b.lossless_pool = uint64_t(quantity(o, "lossless_pool", Dimension::BYTES, std::nullopt, 1518.0));
    b.lossless_alpha = alpha("lossless_alpha");
  }
  if (o.has("pfc")) b = parse_switch_pfc(o, o.get("pfc"), std::move(b));
  for (const auto& [key, pool] : {std::pair{"lossy_pool", b.lossy_pool}, {"lossless_pool", b.lossless_pool}})
    if (b.memory > 0 && pool > b.memory)
      fail(o.file(), o.field(key), "at most the memory (" + std::to_string(b.memory) + " bytes) it is carved from",
           std::to_string(pool));
  o.finish();
  return b;
}

SwitchProfile parse_switch(Obj o)
{
  check_kind(o, "switch");
  SwitchProfile p;
  p.name = o.str("name", "");
  p.latency = quantity(o, "latency", Dimension::TIME);
  if (o.has("buffer")) p.buffer = parse_switch_buffer(o, o.get("buffer"));
  o.finish();
  return p;
}

RegistrationProfile parse_registration(Obj o)
{
  check_kind(o, "registration");
  RegistrationProfile p;
  p.name = o.str("name", "");
  p.register_fixed = quantity(o, "register_fixed", Dimension::TIME);
  p.register_per_page = quantity(o, "register_per_page", Dimension::TIME);
  p.deregister_fixed = quantity(o, "deregister_fixed", Dimension::TIME);
  p.deregister_per_page = quantity(o, "deregister_per_page", Dimension::TIME);
  p.page_size = quantity(o, "page_size", Dimension::BYTES, std::nullopt, 512);
  o.finish();
  return p;
}

/// A "topology" profile: tiers, leaf ports, pod size, per-tier oversubscription, wiring, ECMP placement, switch and
/// the uplinks' line rate (models/topology_model.hpp).
TopologyProfile parse_topology(const Catalog& cat, Obj o);

TcpProfile parse_tcp(Obj o)
{
  check_kind(o, "tcp");
  TcpProfile p;
  p.name = o.str("name", "");
  p.mss = quantity(o, "mss", Dimension::BYTES, std::nullopt, 64);
  p.segment_overhead = quantity(o, "segment_overhead", Dimension::BYTES);
  p.stack_latency = quantity(o, "stack_latency", Dimension::TIME);
  p.connection_bandwidth = quantity(o, "connection_bandwidth", Dimension::BYTE_RATE, 0.0);
  p.rpc_connection_bandwidth = quantity(o, "rpc_connection_bandwidth", Dimension::BYTE_RATE, 0.0);
  p.rpc_message_cpu = quantity(o, "rpc_message_cpu", Dimension::TIME, 0.0);
  o.finish();
  return p;
}

} // namespace

// ---- catalog ----

Catalog::Catalog() : dirs_(models_search_path()) {}
Catalog::Catalog(std::string root) : dirs_{{std::move(root), "catalog root"}} {}
Catalog::Catalog(std::vector<ModelsDir> dirs) : dirs_(std::move(dirs))
{
  if (dirs_.empty()) dirs_.push_back({builtin_models_dir(), "built-in"});
}

namespace {

const char* const KINDS[] = {"host",        "cluster", "nic",    "pcie",         "cpu", "gpu",
                             "socket_link", "nvlink",  "switch", "registration", "tcp", "topology"};

bool is_path(const std::string& name_or_path)
{
  return name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json");
}

bool regular_file(const fs::path& p)
{
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

/// The directory of a referring file ("." for a bare file name); empty when `referrer` is not a file.
fs::path dir_of(const std::string& referrer)
{
  if (referrer.empty() || !regular_file(referrer)) return {};
  const fs::path dir = fs::path(referrer).parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

/// A file in a flat directory is a profile of `kind` only if it says so: a scenario or another kind's profile that
/// happens to share the name is passed over. A file that is not valid JSON is taken when `broken_too` (a lookup by
/// name: loading it names the problem), not when listing.
bool flat_profile_of(const fs::path& p, const std::string& kind, bool broken_too = true)
{
  if (!regular_file(p)) return false;
  try {
    const json j = json_input::read_file(p.string());
    return j.is_object() && j.contains("kind") && j["kind"].is_string() && j["kind"].get<std::string>() == kind;
  } catch (const LoadError&) {
    return broken_too;
  }
}

/// Beside `dir`: <dir>/<name>.json (saying its kind), <dir>/<kind>/<name>.json, <dir>/../<kind>/<name>.json.
std::string find_beside(const fs::path& dir, const std::string& kind, const std::string& name)
{
  if (dir.empty()) return {};
  if (flat_profile_of(dir / (name + ".json"), kind)) return (dir / (name + ".json")).string();
  for (const fs::path& p : {dir / kind / (name + ".json"), dir / ".." / kind / (name + ".json")})
    if (regular_file(p)) return p.lexically_normal().string();
  return {};
}

/// In a search-path directory: <dir>/<kind>/<name>.json, then <dir>/<name>.json (saying its kind).
std::string find_in(const std::string& dir, const std::string& kind, const std::string& name)
{
  const fs::path nested = fs::path(dir) / kind / (name + ".json");
  if (regular_file(nested)) return nested.string();
  const fs::path flat = fs::path(dir) / (name + ".json");
  if (flat_profile_of(flat, kind)) return flat.string();
  return {};
}

/// "beside h.json: /x, /x/nic, /nic; --models-dir: /a; TENSORPATH_MODELS_DIR: /b (missing); built-in: /src/models/hw"
std::string searched(const std::vector<ModelsDir>& dirs, const std::string& kind, const std::string& near)
{
  std::string out;
  if (const fs::path dir = dir_of(near); !dir.empty())
    out = "beside " + near + ": " + dir.string() + ", " + (dir / kind).string() + ", " +
          (dir / ".." / kind).lexically_normal().string();
  for (const auto& d : dirs) {
    std::error_code ec;
    out += (out.empty() ? "" : "; ") + d.origin + ": " + d.path + (fs::is_directory(d.path, ec) ? "" : " (missing)");
  }
  return "looked for <dir>/" + kind + "/<name>.json and <dir>/<name>.json in " + out;
}

} // namespace

Result<std::string> Catalog::locate(const std::string& kind, const std::string& name_or_path,
                                    const std::string& near) const
{
  if (name_or_path.empty()) return Error::at(near, kind, "a profile name or a path to a .json file", "an empty string");
  if (is_path(name_or_path)) {
    // a relative path from the referring file's directory first, then as given (the working directory)
    if (const fs::path dir = dir_of(near); !dir.empty() && fs::path(name_or_path).is_relative())
      if (regular_file(dir / name_or_path)) return (dir / name_or_path).lexically_normal().string();
    if (regular_file(name_or_path)) return name_or_path;
    return Error::at(name_or_path, "", "an existing profile file", "no such file");
  }
  if (auto p = find_beside(dir_of(near), kind, name_or_path); !p.empty()) return p;
  for (const auto& d : dirs_)
    if (auto p = find_in(d.path, kind, name_or_path); !p.empty()) return p;
  const std::vector<std::string> names = list(kind);
  Error e =
      Error::at(near, kind,
                "a known " + kind + " profile" + (names.empty() ? "" : " (" + one_of_names(name_or_path, names) + ")"),
                unknown_name(name_or_path, names));
  e.detail = searched(dirs_, kind, near);
  return e;
}

std::vector<std::string> Catalog::list(const std::string& kind) const
{
  std::set<std::string> names;
  for (const auto& d : dirs_) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(d.path) / kind, ec))
      if (e.path().extension() == ".json") names.insert(e.path().stem().string());
    // a flat directory's files of this kind (profiles are small: larger files, such as traces, are not opened)
    for (const auto& e : fs::directory_iterator(fs::path(d.path), ec)) {
      std::error_code size_ec;
      if (e.path().extension() == ".json" && e.file_size(size_ec) < (1u << 20) && !size_ec &&
          flat_profile_of(e.path(), kind, false))
        names.insert(e.path().stem().string());
    }
  }
  return {names.begin(), names.end()};
}

std::string profile_beside(const std::string& name, const std::string& referrer, const std::vector<std::string>& kinds)
{
  const fs::path dir = dir_of(referrer);
  if (dir.empty() || name.empty()) return name;
  if (is_path(name)) {
    if (fs::path(name).is_relative() && regular_file(dir / name)) return (dir / name).lexically_normal().string();
    return name;
  }
  for (const auto& kind : kinds)
    if (auto p = find_beside(dir, kind, name); !p.empty()) return p;
  return name;
}

namespace {

template <class T, class Parse>
Result<T> load(const Catalog& cat, const std::string& kind, const std::string& name_or_path, Parse parse,
               const std::string& near = {})
{
  auto path = cat.locate(kind, name_or_path, near);
  if (!path.ok()) return path.error();
  try {
    json j = read_json_file(*path);
    T p = parse(Obj(j, *path, ""));
    if (p.name.empty()) p.name = fs::path(*path).stem().string();
    return p;
  } catch (const LoadError& e) {
    return e.error;
  }
}

/// A profile named by field `key` of `o`: looked for beside o's file first; an unknown name is reported at the field.
template <class T, class Parse>
T referenced(const Catalog& cat, Obj& o, const std::string& key, const std::string& kind, const std::string& name,
             Parse parse)
{
  auto path = cat.locate(kind, name, o.file());
  if (!path.ok()) {
    Error e = path.error();
    if (!is_path(name)) { // an unknown name: at the referring field
      e.file = o.file();
      e.field = o.field(key);
    }
    throw LoadError{e};
  }
  auto r = load<T>(cat, kind, *path, parse);
  if (!r.ok()) throw LoadError{r.error()};
  return r.value();
}

/// A field that names a profile ("k40m") or holds one inline ({...}); a missing field takes `def`, a name given by
/// the profile `def_near` (a NIC's or GPU's default PCIe attachment) and resolved beside that profile's file.
template <class T, class Parse>
T component(const Catalog& cat, Obj& o, const std::string& key, const std::string& kind, Parse parse,
            std::optional<std::string> def = std::nullopt, const std::string& def_near = {})
{
  if (!o.has(key) && def) {
    o.accept(key);
    auto r = load<T>(cat, kind, *def, parse, def_near);
    if (!r.ok()) throw LoadError{r.error()};
    return r.value();
  }
  const json& v = o.get(key);
  if (v.is_object()) {
    T p = parse(Obj(v, o.file(), o.field(key)));
    if (p.name.empty()) p.name = o.field(key);
    return p;
  }
  if (!v.is_string()) fail(o.file(), o.field(key), "a " + kind + " profile name or an inline object", type_name(v));
  return referenced<T>(cat, o, key, kind, v.get<std::string>(), parse);
}

/// A host's "pcie_switches": [{socket, uplink, latency}, ...] (none when absent).
void parse_pcie_switches(const Catalog& cat, Obj& o, HostProfile& h)
{
  if (!o.has("pcie_switches")) return;
  const json& sws = o.get("pcie_switches");
  if (!sws.is_array())
    fail(o.file(), o.field("pcie_switches"), "an array of {socket, uplink, latency}", type_name(sws));
  for (size_t i = 0; i < sws.size(); ++i) {
    Obj w(sws[i], o.file(), o.field("pcie_switches[" + std::to_string(i) + "]"));
    PcieSwitchSpec spec;
    spec.socket = int(w.integer("socket", 0, int64_t(h.sockets.size()) - 1));
    spec.uplink = component<PcieProfile>(cat, w, "uplink", "pcie", parse_pcie);
    spec.latency = quantity(w, "latency", Dimension::TIME);
    w.finish();
    h.pcie_switches.push_back(spec);
  }
}

/// A GPU's or NIC's "pcie_switch" (-1 when absent): an index of the host's switches, under the device's socket.
int pcie_switch_of(Obj& d, const HostProfile& h, int socket)
{
  if (!d.has("pcie_switch")) return -1;
  if (h.pcie_switches.empty())
    fail(d.file(), d.field("pcie_switch"), "a host with \"pcie_switches\" to refer to", "a host without any");
  const int sw = int(d.integer("pcie_switch", 0, int64_t(h.pcie_switches.size()) - 1));
  if (h.pcie_switches[size_t(sw)].socket != socket)
    fail(d.file(), d.field("pcie_switch"), "a switch under the device's socket " + std::to_string(socket),
         "switch " + std::to_string(sw) + " under socket " + std::to_string(h.pcie_switches[size_t(sw)].socket));
  return sw;
}

HostProfile parse_host(const Catalog& cat, Obj o)
{
  check_kind(o, "host");
  HostProfile h;
  h.name = o.str("name", "");
  h.file = o.file();
  const json& sockets = o.get("sockets");
  if (!sockets.is_array() || sockets.empty() || sockets.size() > 2)
    fail(o.file(), o.field("sockets"), "an array of 1 or 2 sockets",
         sockets.is_array() ? std::to_string(sockets.size()) + " entries" : type_name(sockets));
  for (size_t i = 0; i < sockets.size(); ++i) {
    Obj s(sockets[i], o.file(), o.field("sockets[" + std::to_string(i) + "]"));
    SocketSpec spec;
    spec.cpu = component<CpuProfile>(cat, s, "cpu", "cpu", parse_cpu);
    spec.memory = quantity(s, "memory", Dimension::BYTES, std::nullopt, 1.0);
    s.finish();
    h.sockets.push_back(spec);
  }
  if (h.sockets.size() == 2)
    h.socket_link = component<SocketLinkProfile>(cat, o, "socket_link", "socket_link", parse_socket_link);
  else if (o.has("socket_link"))
    h.socket_link = component<SocketLinkProfile>(cat, o, "socket_link", "socket_link", parse_socket_link);
  const int nsock = int(h.sockets.size());
  parse_pcie_switches(cat, o, h);
  if (o.has("nvlink")) h.nvlink = component<NvlinkProfile>(cat, o, "nvlink", "nvlink", parse_nvlink);
  if (o.has("gpus")) {
    const json& gpus = o.get("gpus");
    if (!gpus.is_array()) fail(o.file(), o.field("gpus"), "an array", type_name(gpus));
    for (size_t i = 0; i < gpus.size(); ++i) {
      Obj g(gpus[i], o.file(), o.field("gpus[" + std::to_string(i) + "]"));
      GpuSpec spec;
      spec.gpu = component<GpuProfile>(cat, g, "model", "gpu", parse_gpu);
      spec.socket = int(g.integer("socket", 0, nsock - 1));
      spec.pcie = component<PcieProfile>(cat, g, "pcie", "pcie", parse_pcie, spec.gpu.pcie, spec.gpu.file);
      spec.pcie_switch = pcie_switch_of(g, h, spec.socket);
      g.finish();
      h.gpus.push_back(spec);
    }
  }
  const json& nics = o.get("nics");
  if (!nics.is_array() || nics.empty())
    fail(o.file(), o.field("nics"), "an array of at least one NIC",
         nics.is_array() ? "an empty array" : type_name(nics));
  for (size_t i = 0; i < nics.size(); ++i) {
    Obj n(nics[i], o.file(), o.field("nics[" + std::to_string(i) + "]"));
    NicSpec spec;
    spec.nic = component<NicProfile>(cat, n, "model", "nic", parse_nic);
    spec.socket = int(n.integer("socket", 0, nsock - 1));
    spec.pcie = component<PcieProfile>(cat, n, "pcie", "pcie", parse_pcie, spec.nic.pcie, spec.nic.file);
    spec.pcie_switch = pcie_switch_of(n, h, spec.socket);
    n.finish();
    h.nics.push_back(spec);
  }
  h.registration = component<RegistrationProfile>(cat, o, "registration", "registration", parse_registration);
  h.tcp = component<TcpProfile>(cat, o, "tcp", "tcp", parse_tcp);
  o.finish();
  return h;
}

/// The topology of a SimGrid FAT_TREE cluster for `c` (hosts of one NIC each: the tree's hosts are its ports). Level 1
/// switches are the leaves (m1 ports), level 2 the spines (m2 leaves per pod); each level's down:up ratio is
/// m_i p_i : w_{i+1} p_{i+1}; routes destination-mod-k as SimGrid's FatTreeZone; every link at the cluster's bw.
TopologyProfile fat_tree_topology(const NetworkImport& net, const ClusterProfile& c, const std::string& file,
                                  const std::string& field)
{
  const FatTreeShape& f = *net.fat_tree;
  for (const auto& g : c.groups)
    if (g.host.nics.size() != 1)
      fail(file, field,
           "hosts of one NIC for a FAT_TREE platform file (its hosts are the tree's ports; give a node of several "
           "NICs a topology profile instead, models/hw/topology)",
           g.host.name + " with " + std::to_string(g.host.nics.size()) + " NICs");
  TopologyProfile t;
  t.name = "simgrid:" + fs::path(net.file).filename().string();
  t.file = net.file;
  t.tiers = f.levels;
  t.leaf_ports = f.down[0];
  if (f.levels == 3) t.pod_leaves = f.down[1];
  for (int i = 0; i + 1 < f.levels; ++i) {
    const double ratio =
        double(f.down[size_t(i)]) * f.parallel[size_t(i)] / (double(f.up[size_t(i) + 1]) * f.parallel[size_t(i) + 1]);
    if (ratio < 1)
      fail(net.file, "line " + std::to_string(f.line),
           "a fat tree whose level " + std::to_string(i + 1) +
               " switches have no more uplinks than downlinks (m_i p_i >= w_i+1 p_i+1)",
           fmt::format("{} down, {} up", f.down[size_t(i)] * f.parallel[size_t(i)],
                       f.up[size_t(i) + 1] * f.parallel[size_t(i) + 1]));
    t.oversubscription.push_back(ratio);
  }
  t.wiring = Wiring::RAIL_OPTIMIZED; // one NIC per host: both wirings fill the leaves in host order
  t.ecmp = EcmpPlacement::DMODK;
  t.switch_model = c.network_switch;
  t.uplink_line_rate = net.link_bandwidth;
  return t;
}

TopologyProfile parse_topology(const Catalog& cat, Obj o)
{
  check_kind(o, "topology");
  TopologyProfile t;
  t.name = o.str("name", "");
  t.file = o.file();
  t.tiers = int(o.integer("tiers", 1, 3));
  if (t.tiers >= 2) t.leaf_ports = int(o.integer("leaf_ports", 1, 1 << 16));
  if (t.tiers == 3) t.pod_leaves = int(o.integer("pod_leaves", 1, 1 << 16));
  if (t.tiers == 2) t.max_leaves = int(o.integer("max_leaves", 0, 1 << 20, 0));
  if (t.tiers == 3) t.max_pods = int(o.integer("max_pods", 0, 1 << 20, 0));
  if (t.tiers >= 2) {
    const json& r = o.get("oversubscription");
    const size_t want = size_t(t.tiers - 1);
    if (!r.is_array() || r.size() != want)
      fail(o.file(), o.field("oversubscription"),
           want == 1 ? "an array of one ratio (the leaves' down:up capacity, 1 for non-blocking)"
                     : "an array of two ratios (leaves', then spines' down:up capacity, 1 for non-blocking)",
           r.is_array() ? std::to_string(r.size()) + " value(s)" : type_name(r));
    for (size_t i = 0; i < r.size(); ++i) {
      const std::string f = o.field("oversubscription[" + std::to_string(i) + "]");
      if (!r[i].is_number()) fail(o.file(), f, "a number of at least 1", type_name(r[i]));
      const double v = r[i].get<double>();
      if (!(v >= 1) || !(v <= 1024)) fail(o.file(), f, "a ratio from 1 (non-blocking) to 1024", r[i].dump());
      t.oversubscription.push_back(v);
    }
    auto w = parse_wiring(o.str("wiring", "rail_optimized"));
    if (!w.ok()) fail(o.file(), o.field("wiring"), w.error().expected, w.error().got);
    t.wiring = w.value();
    auto e = parse_ecmp(o.str("ecmp"));
    if (!e.ok()) fail(o.file(), o.field("ecmp"), e.error().expected, e.error().got);
    t.ecmp = e.value();
    t.uplink_line_rate = quantity(o, "uplink", Dimension::BYTE_RATE, 0.0);
    if (o.has("spine_switch"))
      t.spine_switch = component<SwitchProfile>(cat, o, "spine_switch", "switch", parse_switch);
  }
  if (t.tiers == 3) {
    t.spine_uplink_line_rate = quantity(o, "spine_uplink", Dimension::BYTE_RATE, 0.0);
    if (o.has("core_switch")) t.core_switch = component<SwitchProfile>(cat, o, "core_switch", "switch", parse_switch);
  }
  t.switch_model = component<SwitchProfile>(cat, o, "switch", "switch", parse_switch);
  o.finish();
  return t;
}

ClusterProfile parse_cluster(const Catalog& cat, Obj o)
{
  check_kind(o, "cluster");
  ClusterProfile c;
  c.name = o.str("name", "");
  const json& groups = o.get("hosts");
  if (!groups.is_array() || groups.empty())
    fail(o.file(), o.field("hosts"), "a non-empty array of {host, count, prefix}", type_name(groups));
  std::set<std::string> prefixes;
  for (size_t i = 0; i < groups.size(); ++i) {
    Obj g(groups[i], o.file(), o.field("hosts[" + std::to_string(i) + "]"));
    HostGroup hg;
    hg.count = int(g.integer("count", 1, 1 << 20, 1));
    hg.prefix = g.str("prefix", "node");
    if (!prefixes.insert(hg.prefix).second)
      fail(o.file(), g.field("prefix"), "a prefix unique within the cluster", "\"" + hg.prefix + "\" again");
    const json& hv = g.get("host");
    if (hv.is_object()) {
      hg.host = parse_host(cat, Obj(hv, o.file(), g.field("host")));
    } else if (hv.is_string()) {
      hg.host = referenced<HostProfile>(cat, g, "host", "host", hv.get<std::string>(),
                                        [&cat](Obj h) { return parse_host(cat, std::move(h)); });
    } else {
      fail(o.file(), g.field("host"), "a host profile name or an inline host", type_name(hv));
    }
    g.finish();
    c.groups.push_back(hg);
  }
  c.network_switch = component<SwitchProfile>(cat, o, "switch", "switch", parse_switch);
  if (o.has("topology"))
    c.topology = component<TopologyProfile>(cat, o, "topology", "topology",
                                            [&cat](Obj t) { return parse_topology(cat, std::move(t)); });
  if (o.has("network")) {
    // A SimGrid platform file as the network part: the hosts' link rate and latency and the backbone's latency.
    std::string xml = o.str("network");
    if (!xml.empty() && xml[0] != '/') xml = (fs::path(o.file()).parent_path() / xml).string();
    auto net = import_simgrid_platform(xml);
    if (!net.ok()) throw LoadError{net.error()};
    size_t hosts = 0;
    for (const auto& g : c.groups)
      hosts += size_t(g.count);
    if (c.groups.size() == 1 && !groups[0].contains("count")) {
      c.groups[0].count = int(net->hosts.size());
    } else if (hosts != net->hosts.size()) {
      fail(o.file(), o.field("network"), std::to_string(hosts) + " hosts (the cluster's)",
           std::to_string(net->hosts.size()) + " in " + xml);
    }
    for (auto& g : c.groups)
      for (auto& nic : g.host.nics) {
        nic.nic.line_rate = net->link_bandwidth;
        nic.nic.port_latency = net->link_latency;
        nic.nic.name += "@" + fs::path(xml).filename().string();
      }
    c.network_switch.name = "simgrid:" + fs::path(xml).filename().string();
    c.network_switch.latency = net->switch_latency;
    if (net->fat_tree) {
      if (c.topology)
        fail(o.file(), o.field("topology"), "a topology or a FAT_TREE network file, not both",
             "both (the network file " + xml + " is a fat tree)");
      c.topology = fat_tree_topology(*net, c, o.file(), o.field("network"));
    }
  }
  o.finish();
  return c;
}

} // namespace

Result<NicProfile> Catalog::nic(const std::string& n) const
{
  return load<NicProfile>(*this, "nic", n, parse_nic);
}
Result<PcieProfile> Catalog::pcie(const std::string& n) const
{
  return load<PcieProfile>(*this, "pcie", n, parse_pcie);
}
Result<CpuProfile> Catalog::cpu(const std::string& n) const
{
  return load<CpuProfile>(*this, "cpu", n, parse_cpu);
}
Result<GpuProfile> Catalog::gpu(const std::string& n) const
{
  return load<GpuProfile>(*this, "gpu", n, parse_gpu);
}
Result<SocketLinkProfile> Catalog::socket_link(const std::string& n) const
{
  return load<SocketLinkProfile>(*this, "socket_link", n, parse_socket_link);
}
Result<NvlinkProfile> Catalog::nvlink(const std::string& n) const
{
  return load<NvlinkProfile>(*this, "nvlink", n, parse_nvlink);
}
Result<SwitchProfile> Catalog::network_switch(const std::string& n) const
{
  return load<SwitchProfile>(*this, "switch", n, parse_switch);
}
Result<RegistrationProfile> Catalog::registration(const std::string& n) const
{
  return load<RegistrationProfile>(*this, "registration", n, parse_registration);
}
Result<TcpProfile> Catalog::tcp(const std::string& n) const
{
  return load<TcpProfile>(*this, "tcp", n, parse_tcp);
}
Result<TopologyProfile> Catalog::topology(const std::string& n) const
{
  return load<TopologyProfile>(*this, "topology", n, [this](Obj o) { return parse_topology(*this, std::move(o)); });
}
Result<HostProfile> Catalog::host(const std::string& n) const
{
  return load<HostProfile>(*this, "host", n, [this](Obj o) { return parse_host(*this, std::move(o)); });
}
Result<ClusterProfile> Catalog::cluster(const std::string& n) const
{
  return load<ClusterProfile>(*this, "cluster", n, [this](Obj o) { return parse_cluster(*this, std::move(o)); });
}

Result<std::string> Catalog::kind_of(const std::string& name_or_path) const
{
  std::string path = name_or_path;
  if (!is_path(name_or_path)) {
    // the first directory of the search path holding a profile of that name, of any kind
    for (const auto& d : dirs_)
      for (const char* kind : KINDS)
        if (!find_in(d.path, kind, name_or_path).empty()) return std::string(kind);
    std::string where;
    for (const auto& d : dirs_)
      where += (where.empty() ? "" : ", ") + d.path + " (" + d.origin + ")";
    std::set<std::string> all;
    for (const char* kind : KINDS)
      for (auto& n : list(kind))
        all.insert(std::move(n));
    return Error::at("", "", "a profile name found in " + where + " or a path to a .json file",
                     unknown_name(name_or_path, {all.begin(), all.end()}));
  }
  if (!regular_file(path)) return Error::at(path, "", "an existing profile file", "no such file");
  try {
    json j = read_json_file(path);
    if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string())
      return Error::at(path, "kind", "a \"kind\" string (nic, host, cluster, ...)", "nothing (missing)");
    return j["kind"].get<std::string>();
  } catch (const LoadError& e) {
    return e.error;
  }
}

Result<std::string> Catalog::check_text(const std::string& text, const std::string& file) const
{
  try {
    const json j = json_input::parse_text(text, file);
    if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string())
      return Error::at(file, "kind", "a \"kind\" string (nic, host, cluster, ...)", "nothing (missing)");
    const std::string kind = j["kind"].get<std::string>();
    const Obj o(j, file, "");
    if (kind == "nic")
      parse_nic(o);
    else if (kind == "pcie")
      parse_pcie(o);
    else if (kind == "cpu")
      parse_cpu(o);
    else if (kind == "gpu")
      parse_gpu(o);
    else if (kind == "socket_link")
      parse_socket_link(o);
    else if (kind == "nvlink")
      parse_nvlink(o);
    else if (kind == "switch")
      parse_switch(o);
    else if (kind == "registration")
      parse_registration(o);
    else if (kind == "tcp")
      parse_tcp(o);
    else if (kind == "host")
      parse_host(*this, o);
    else if (kind == "cluster")
      parse_cluster(*this, o);
    else if (kind == "topology")
      parse_topology(*this, o);
    else
      fail(file, "kind",
           "nic, pcie, cpu, gpu, socket_link, nvlink, switch, registration, tcp, topology, host or cluster",
           "\"" + kind + "\"");
    return kind;
  } catch (const LoadError& e) {
    return e.error;
  }
}

} // namespace tp::models
