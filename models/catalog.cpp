// Profile loading: strict JSON reading with file/field error messages. Internally a LoadError exception
// carries the Error up to the public functions, which return it as a value.
#include "models/catalog.hpp"
#include "models/quantity.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#ifndef TENSORPATH_DEFAULT_MODELS_DIR
#define TENSORPATH_DEFAULT_MODELS_DIR "models/hw"
#endif

namespace fs = std::filesystem;
using json = nlohmann::json;

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
  }
  return "?";
}

std::string default_models_dir()
{
  if (const char* env = std::getenv("TENSORPATH_MODELS_DIR")) return env;
  return TENSORPATH_DEFAULT_MODELS_DIR;
}

namespace {

struct LoadError {
  Error error;
};

[[noreturn]] void fail(const std::string& file, const std::string& field, const std::string& expected,
                       const std::string& got)
{
  throw LoadError{Error::at(file, field, expected, got)};
}

std::string type_name(const json& j)
{
  return std::string(j.type_name());
}

/// A JSON object being read: remembers the keys used so that unknown (misspelt) keys are reported.
class Obj {
public:
  Obj(const json& j, std::string file, std::string path) : j_(j), file_(std::move(file)), path_(std::move(path))
  {
    if (!j_.is_object()) fail(file_, path_.empty() ? "(top level)" : path_, "an object", type_name(j_));
  }
  std::string field(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const std::string& file() const { return file_; }
  bool has(const std::string& key) const { return j_.contains(key); }

  const json& get(const std::string& key)
  {
    used_.insert(key);
    if (!j_.contains(key)) fail(file_, field(key), "this field", "nothing (missing)");
    return j_.at(key);
  }

  std::string str(const std::string& key, std::optional<std::string> def = std::nullopt)
  {
    used_.insert(key);
    if (!j_.contains(key)) {
      if (def) return *def;
      fail(file_, field(key), "a string", "nothing (missing)");
    }
    const json& v = j_.at(key);
    if (!v.is_string()) fail(file_, field(key), "a string", type_name(v));
    return v.get<std::string>();
  }

  long integer(const std::string& key, long lo, long hi, std::optional<long> def = std::nullopt)
  {
    used_.insert(key);
    if (!j_.contains(key)) {
      if (def) return *def;
      fail(file_, field(key), "an integer", "nothing (missing)");
    }
    const json& v = j_.at(key);
    if (!v.is_number_integer()) fail(file_, field(key), "an integer", type_name(v));
    long x = v.get<long>();
    if (x < lo || x > hi)
      fail(file_, field(key), "an integer in " + std::to_string(lo) + ".." + std::to_string(hi), std::to_string(x));
    return x;
  }

  /// {"value": v, "unit": u, "source": s}; converted to SI. `min_si` guards against nonsense (e.g. 0 bandwidth).
  double quantity(const std::string& key, Dimension dim, std::optional<double> def = std::nullopt, double min_si = 0.0)
  {
    used_.insert(key);
    if (!j_.contains(key)) {
      if (def) return *def;
      fail(file_, field(key), std::string("a quantity {value, unit, source}: ") + to_string(dim), "nothing (missing)");
    }
    const json& v = j_.at(key);
    const std::string f = field(key);
    if (!v.is_object()) fail(file_, f, "an object {\"value\": ..., \"unit\": ..., \"source\": ...}", type_name(v));
    for (auto it = v.begin(); it != v.end(); ++it) {
      static const std::set<std::string> allowed = {"value", "unit", "source", "status", "note"};
      if (!allowed.count(it.key()))
        fail(file_, f + "." + it.key(), "one of value, unit, source, status, note", "unknown field");
    }
    if (!v.contains("value") || !v["value"].is_number())
      fail(file_, f + ".value", "a number", v.contains("value") ? type_name(v["value"]) : "nothing (missing)");
    if (!v.contains("unit") || !v["unit"].is_string())
      fail(file_, f + ".unit", std::string("a unit string for ") + to_string(dim),
           v.contains("unit") ? type_name(v["unit"]) : "nothing (missing)");
    if (!v.contains("source") || !v["source"].is_string() || v["source"].get<std::string>().size() < 3)
      fail(file_, f + ".source", "a non-empty source (paper, manual, repository file) for this number",
           v.contains("source") ? "\"" + v["source"].dump() + "\"" : "nothing (missing)");
    if (v.contains("status")) {
      static const std::set<std::string> statuses = {"confirmed", "secondary", "derived", "assumption", "standard"};
      if (!v["status"].is_string() || !statuses.count(v["status"].get<std::string>()))
        fail(file_, f + ".status", "one of confirmed, secondary, derived, assumption, standard", v["status"].dump());
    }
    auto si = to_si(v["value"].get<double>(), v["unit"].get<std::string>(), dim);
    if (!si.ok()) fail(file_, f + ".unit", si.error().expected, si.error().got);
    if (*si < min_si) fail(file_, f + ".value", "a value >= " + std::to_string(min_si) + " (SI)", std::to_string(*si));
    return *si;
  }

  /// Report fields that no reader asked for (typos, fields from another kind).
  void finish() const
  {
    static const std::set<std::string> always = {"kind", "name", "description", "notes", "$schema"};
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!used_.count(it.key()) && !always.count(it.key()))
        fail(file_, field(it.key()), "a known field", "unknown field \"" + it.key() + "\"");
  }

private:
  const json& j_;
  std::string file_;
  std::string path_;
  std::set<std::string> used_;
};

json read_json_file(const std::string& path)
{
  std::ifstream in(path);
  if (!in) fail(path, "", "a readable JSON file", "cannot open");
  try {
    return json::parse(in);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    fail(path, "byte " + std::to_string(e.byte), "valid JSON", what.substr(what.find(':') + 1));
  }
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
  std::string ll = o.str("link_layer");
  if (ll == "infiniband")
    p.link_layer = LinkLayerKind::INFINIBAND;
  else if (ll == "roce_v1")
    p.link_layer = LinkLayerKind::ROCE_V1;
  else if (ll == "roce_v2")
    p.link_layer = LinkLayerKind::ROCE_V2;
  else
    fail(o.file(), o.field("link_layer"), "one of infiniband, roce_v1, roce_v2", "\"" + ll + "\"");
  p.line_rate = o.quantity("line_rate", Dimension::BYTE_RATE, std::nullopt, 1.0);
  double mtu = o.quantity("mtu", Dimension::BYTES);
  if (mtu != 256 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096)
    fail(o.file(), o.field("mtu"), "an IB path MTU (256, 512, 1024, 2048 or 4096 bytes)", std::to_string(mtu));
  p.mtu = uint32_t(mtu);
  p.packet_overhead = o.quantity("packet_overhead", Dimension::BYTES);
  p.rdma_header_bytes = o.quantity("rdma_header_bytes", Dimension::BYTES);
  p.imm_header_bytes = o.quantity("imm_header_bytes", Dimension::BYTES);
  p.ack_packet_bytes = o.quantity("ack_packet_bytes", Dimension::BYTES);
  p.pcie = o.str("pcie");
  p.port_latency = o.quantity("port_latency", Dimension::TIME);
  p.tx_pipeline_latency = o.quantity("tx_pipeline_latency", Dimension::TIME);
  p.rx_pipeline_latency = o.quantity("rx_pipeline_latency", Dimension::TIME);
  p.wqe_processing_time = o.quantity("wqe_processing_time", Dimension::TIME);
  p.max_message_rate = o.quantity("max_message_rate", Dimension::MESSAGE_RATE, 0.0);
  p.max_inline_data = uint32_t(o.quantity("max_inline_data", Dimension::BYTES, 0.0));
  o.finish();
  return p;
}

PcieProfile parse_pcie(Obj o)
{
  check_kind(o, "pcie");
  PcieProfile p;
  p.name = o.str("name", "");
  p.transfer_rate = o.quantity("transfer_rate", Dimension::TRANSFER_RATE, std::nullopt, 1.0);
  p.encoding_efficiency = o.quantity("encoding_efficiency", Dimension::FRACTION, std::nullopt, 0.5);
  if (p.encoding_efficiency > 1)
    fail(o.file(), o.field("encoding_efficiency"), "a fraction <= 1", std::to_string(p.encoding_efficiency));
  p.lanes = int(o.integer("lanes", 1, 32));
  p.max_payload_size = o.quantity("max_payload_size", Dimension::BYTES, std::nullopt, 128);
  p.write_tlp_overhead = o.quantity("write_tlp_overhead", Dimension::BYTES);
  p.completion_tlp_overhead = o.quantity("completion_tlp_overhead", Dimension::BYTES);
  p.dllp_overhead = o.quantity("dllp_overhead", Dimension::FRACTION);
  if (p.dllp_overhead >= 1) fail(o.file(), o.field("dllp_overhead"), "a fraction < 1", std::to_string(p.dllp_overhead));
  p.link_latency = o.quantity("link_latency", Dimension::TIME);
  o.finish();
  return p;
}

CpuProfile parse_cpu(Obj o)
{
  check_kind(o, "cpu");
  CpuProfile p;
  p.name = o.str("name", "");
  p.cores = int(o.integer("cores", 1, 1024));
  p.frequency = o.quantity("frequency", Dimension::FREQUENCY, std::nullopt, 1.0);
  p.l2_size = o.quantity("l2_size", Dimension::BYTES);
  p.l3_size = o.quantity("l3_size", Dimension::BYTES);
  p.memcpy_l2_bandwidth = o.quantity("memcpy_l2_bandwidth", Dimension::BYTE_RATE, std::nullopt, 1.0);
  p.memcpy_llc_bandwidth = o.quantity("memcpy_llc_bandwidth", Dimension::BYTE_RATE, std::nullopt, 1.0);
  p.memcpy_dram_bandwidth = o.quantity("memcpy_dram_bandwidth", Dimension::BYTE_RATE, std::nullopt, 1.0);
  p.memcpy_call_overhead = o.quantity("memcpy_call_overhead", Dimension::TIME);
  p.dma_read_latency = o.quantity("dma_read_latency", Dimension::TIME);
  p.posted_write_latency = o.quantity("posted_write_latency", Dimension::TIME);
  p.mmio_write_latency = o.quantity("mmio_write_latency", Dimension::TIME);
  p.read_completion_size = o.quantity("read_completion_size", Dimension::BYTES, std::nullopt, 16);
  p.post_overhead = o.quantity("post_overhead", Dimension::TIME);
  p.completion_overhead = o.quantity("completion_overhead", Dimension::TIME);
  p.serialize_bandwidth = o.quantity("serialize_bandwidth", Dimension::BYTE_RATE, std::nullopt, 1.0);
  p.deserialize_bandwidth = o.quantity("deserialize_bandwidth", Dimension::BYTE_RATE, std::nullopt, 1.0);
  if (p.l3_size < p.l2_size) fail(o.file(), o.field("l3_size"), "l3_size >= l2_size", std::to_string(p.l3_size));
  o.finish();
  return p;
}

GpuProfile parse_gpu(Obj o)
{
  check_kind(o, "gpu");
  GpuProfile p;
  p.name = o.str("name", "");
  p.pcie = o.str("pcie");
  p.memory = o.quantity("memory", Dimension::BYTES, std::nullopt, 1.0);
  p.memory_bandwidth = o.quantity("memory_bandwidth", Dimension::BYTE_RATE, std::nullopt, 1.0);
  p.fp32_peak = o.quantity("fp32_peak", Dimension::FLOP_RATE, std::nullopt, 1.0);
  p.memcpy_launch_overhead = o.quantity("memcpy_launch_overhead", Dimension::TIME);
  p.kernel_launch_overhead = o.quantity("kernel_launch_overhead", Dimension::TIME);
  p.p2p_read_bandwidth = o.quantity("p2p_read_bandwidth", Dimension::BYTE_RATE, std::nullopt, 1.0);
  o.finish();
  return p;
}

SocketLinkProfile parse_socket_link(Obj o)
{
  check_kind(o, "socket_link");
  SocketLinkProfile p;
  p.name = o.str("name", "");
  p.bandwidth = o.quantity("bandwidth", Dimension::BYTE_RATE, std::nullopt, 1.0);
  p.latency = o.quantity("latency", Dimension::TIME);
  p.gpu_p2p_bandwidth = o.quantity("gpu_p2p_bandwidth", Dimension::BYTE_RATE, std::nullopt, 1.0);
  o.finish();
  return p;
}

SwitchProfile parse_switch(Obj o)
{
  check_kind(o, "switch");
  SwitchProfile p;
  p.name = o.str("name", "");
  p.latency = o.quantity("latency", Dimension::TIME);
  o.finish();
  return p;
}

RegistrationProfile parse_registration(Obj o)
{
  check_kind(o, "registration");
  RegistrationProfile p;
  p.name = o.str("name", "");
  p.register_fixed = o.quantity("register_fixed", Dimension::TIME);
  p.register_per_page = o.quantity("register_per_page", Dimension::TIME);
  p.deregister_fixed = o.quantity("deregister_fixed", Dimension::TIME);
  p.deregister_per_page = o.quantity("deregister_per_page", Dimension::TIME);
  p.page_size = o.quantity("page_size", Dimension::BYTES, std::nullopt, 512);
  o.finish();
  return p;
}

TcpProfile parse_tcp(Obj o)
{
  check_kind(o, "tcp");
  TcpProfile p;
  p.name = o.str("name", "");
  p.mss = o.quantity("mss", Dimension::BYTES, std::nullopt, 64);
  p.segment_overhead = o.quantity("segment_overhead", Dimension::BYTES);
  p.stack_latency = o.quantity("stack_latency", Dimension::TIME);
  p.connection_bandwidth = o.quantity("connection_bandwidth", Dimension::BYTE_RATE, 0.0);
  o.finish();
  return p;
}

} // namespace

// ---- catalog ----

Catalog::Catalog(std::string root) : root_(std::move(root)) {}

Result<std::string> Catalog::locate(const std::string& kind, const std::string& name_or_path) const
{
  if (name_or_path.empty()) return Error::at("", kind, "a profile name or a path to a .json file", "an empty string");
  if (name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json")) {
    if (fs::is_regular_file(name_or_path)) return name_or_path;
    return Error::at(name_or_path, "", "an existing profile file", "no such file");
  }
  fs::path p = fs::path(root_) / kind / (name_or_path + ".json");
  if (fs::is_regular_file(p)) return p.string();
  auto names = list(kind);
  std::string known;
  for (const auto& n : names)
    known += (known.empty() ? "" : ", ") + n;
  return Error::at((fs::path(root_) / kind).string(), kind,
                   "a known " + kind + " profile" + (known.empty() ? "" : " (" + known + ")"),
                   "\"" + name_or_path + "\"");
}

std::vector<std::string> Catalog::list(const std::string& kind) const
{
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(root_) / kind, ec))
    if (e.path().extension() == ".json") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

template <class T, class Parse>
Result<T> load(const Catalog& cat, const std::string& kind, const std::string& name_or_path, Parse parse)
{
  auto path = cat.locate(kind, name_or_path);
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

/// A field that names a profile ("k40m") or holds one inline ({...}).
template <class T, class Parse>
T component(const Catalog& cat, Obj& o, const std::string& key, const std::string& kind, Parse parse,
            std::optional<std::string> def = std::nullopt)
{
  if (!o.has(key) && def) {
    auto r = load<T>(cat, kind, *def, parse);
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
  auto r = load<T>(cat, kind, v.get<std::string>(), parse);
  if (!r.ok()) {
    Error e = r.error();
    if (e.file.find(cat.root()) == 0 && e.got.find("\"" + v.get<std::string>() + "\"") == 0) {
      // unknown name: report it at the referring field
      e.file = o.file();
      e.field = o.field(key);
    }
    throw LoadError{e};
  }
  return r.value();
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
    spec.memory = s.quantity("memory", Dimension::BYTES, std::nullopt, 1.0);
    s.finish();
    h.sockets.push_back(spec);
  }
  if (h.sockets.size() == 2)
    h.socket_link = component<SocketLinkProfile>(cat, o, "socket_link", "socket_link", parse_socket_link);
  else if (o.has("socket_link"))
    h.socket_link = component<SocketLinkProfile>(cat, o, "socket_link", "socket_link", parse_socket_link);
  const int nsock = int(h.sockets.size());
  if (o.has("gpus")) {
    const json& gpus = o.get("gpus");
    if (!gpus.is_array()) fail(o.file(), o.field("gpus"), "an array", type_name(gpus));
    for (size_t i = 0; i < gpus.size(); ++i) {
      Obj g(gpus[i], o.file(), o.field("gpus[" + std::to_string(i) + "]"));
      GpuSpec spec;
      spec.gpu = component<GpuProfile>(cat, g, "model", "gpu", parse_gpu);
      spec.socket = int(g.integer("socket", 0, nsock - 1));
      spec.pcie = component<PcieProfile>(cat, g, "pcie", "pcie", parse_pcie, spec.gpu.pcie);
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
    spec.pcie = component<PcieProfile>(cat, n, "pcie", "pcie", parse_pcie, spec.nic.pcie);
    n.finish();
    h.nics.push_back(spec);
  }
  h.registration = component<RegistrationProfile>(cat, o, "registration", "registration", parse_registration);
  h.tcp = component<TcpProfile>(cat, o, "tcp", "tcp", parse_tcp);
  o.finish();
  return h;
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
      auto r = cat.host(hv.get<std::string>());
      if (!r.ok()) throw LoadError{r.error()};
      hg.host = r.value();
    } else {
      fail(o.file(), g.field("host"), "a host profile name or an inline host", type_name(hv));
    }
    g.finish();
    c.groups.push_back(hg);
  }
  c.network_switch = component<SwitchProfile>(cat, o, "switch", "switch", parse_switch);
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
  if (!(name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json"))) {
    // search every kind for that name
    for (const char* kind :
         {"host", "cluster", "nic", "pcie", "cpu", "gpu", "socket_link", "switch", "registration", "tcp"}) {
      auto p = fs::path(root_) / kind / (name_or_path + ".json");
      if (fs::is_regular_file(p)) return std::string(kind);
    }
    return Error::at(root_, "", "a profile name found under " + root_ + " or a path to a .json file",
                     "\"" + name_or_path + "\"");
  }
  try {
    json j = read_json_file(path);
    if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string())
      return Error::at(path, "kind", "a \"kind\" string (nic, host, cluster, ...)", "nothing (missing)");
    return j["kind"].get<std::string>();
  } catch (const LoadError& e) {
    return e.error;
  }
}

} // namespace tp::models
