// Loading of scenarios, validation cases and sweep points' jobs from JSON (strict: unknown fields and wrong
// types are errors naming the file and the field). Parsing only: nothing here runs a simulation (run_job in
// spec_files.cpp does), so the fuzz build compiles this file without the simulator (tests/fuzz/fuzz_scenario.cpp).
#include "apps/lib/fault_spec.hpp"
#include "apps/lib/hw_resolve.hpp"
#include "apps/lib/spec_files.hpp"
#include "core/collectives/library_defaults.hpp"
#include "core/common/number_rule.hpp"
#include "core/common/suggest.hpp"
#include "core/transports/mpi/mpi.hpp"
#include "core/transports/transport.hpp"
#include "models/catalog.hpp"
#include "models/json_reader.hpp"
#include "models/nccl/collective_model.hpp"
#include "models/nccl/data_parallel.hpp"
#include "models/network_models.hpp"
#include "models/tf_rpc_threads.hpp"
#include "models/workload/language_model.hpp"
#include "models/workload/workload.hpp"

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

namespace fs = std::filesystem;

namespace tp::frontend {

namespace {

using json_input::fail;
using json_input::json;
using Reader = json_input::Object;
using SpecError = json_input::LoadError;

/// A number as %g (1e+308, not its 309 digits).
std::string short_number(double v)
{
  char b[40];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

/// The switches of every registered transport that a training job may set (each transport's OptionKnob list,
/// core/transports/transport_options.hpp), in registry order.
void read_transport_knobs(Reader& r, transports::TransportOptions& options)
{
  for (const auto* knob : transports::option_knobs())
    if (!knob->json_field.empty()) knob->set(options, r.boolean(knob->json_field, knob->default_value));
}

json read_json(const std::string& path)
{
  return json_input::read_file(path);
}

// The ranges of the job's numbers (the rule: core/common/number_rule.hpp). Beyond them a number cannot be right.
constexpr double MIN_TICK_MS = 1e-6; ///< the coordinator's tick: 1 ns ..
constexpr double MAX_TICK_MS = 1e4;  ///< .. 10 s

/// Every profile a job names must load when its file is read: a misspelt NIC found after hours of sweeping is found
/// too late, and a scenario with a bad name is bad input (exit 2), not a failed job. Loaded once per name.
void check_profiles(const JobSpec& j, const Reader& r)
{
  static std::map<std::string, std::optional<Error>> seen;
  const models::Catalog cat;
  auto check = [&](const std::string& field, const std::string& key, auto&& load) {
    auto it = seen.find(key);
    if (it == seen.end()) {
      auto st = load();
      it = seen.emplace(key, st.ok() ? std::nullopt : std::optional<Error>(st.error())).first;
    }
    if (!it->second) return;
    const Error& e = *it->second;
    Error out = Error::at(r.file(), r.field(field), e.expected, e.got);
    out.detail = e.file.empty() ? e.detail : "in " + e.file + (e.field.empty() ? "" : ": " + e.field);
    throw SpecError{out};
  };
  check("hw", "hw\n" + j.hw + "\n" + j.switch_name, [&]() -> Status {
    auto c = cluster_for(cat, j.hw, 1, j.switch_name);
    if (!c.ok()) return c.error();
    return ok_status();
  });
  auto simple = [&](const std::string& field, const std::string& name, auto getter) {
    if (name.empty()) return;
    check(field, field + "\n" + name, [&]() -> Status {
      auto p = (cat.*getter)(name);
      if (!p.ok()) return p.error();
      return ok_status();
    });
  };
  // An NCCL job's setup must run on the host (GPUs enough, NICs for several nodes, an algorithm the op has) and on its
  // topology: an error names a field of the job, else the topology's or the host's file.
  auto nccl_setup = [&](const CollectiveJob& c) {
    auto s = collective_setup_for(cat, j.hw, j.switch_name, c.setup, c.network);
    if (s.ok()) return s.value();
    const Error& e = s.error();
    if (e.file.empty()) throw SpecError{Error::at(r.file(), r.field(e.field), e.expected, e.got)};
    auto cl = cluster_for(cat, j.hw, 1, j.switch_name);
    const bool topology = !c.network.topology.empty() || (cl.ok() && cl->topology);
    Error out = Error::at(r.file(), r.field(topology && e.field != "gpus" && e.field != "nics" ? "topology" : "hw"),
                          e.expected, e.got);
    out.detail = "in " + e.file + (e.field.empty() ? "" : ": " + e.field);
    throw SpecError{out};
  };
  if (j.kind == JobSpec::Kind::COLLECTIVE) {
    const auto s = nccl_setup(j.collective);
    auto b = models::nccl::collective_bytes(s.op, j.collective.bytes, s.nodes * s.gpus_per_node);
    if (!b.ok()) throw SpecError{Error::at(r.file(), r.field("size"), b.error().expected, b.error().got)};
  }
  if (j.kind == JobSpec::Kind::DATA_PARALLEL) {
    // ... and a data_parallel job's model must have a measured compute time on its GPU at that precision
    const auto& d = j.data_parallel;
    const auto s = nccl_setup(d.collective);
    auto w = models::WorkloadLibrary().make(d.model, s.host.gpus[0].gpu.name, d.batch, d.precision);
    if (!w.ok()) {
      const Error& e = w.error();
      throw SpecError{Error::at(r.file(), r.field(e.field == "precision" || e.field == "batch" ? e.field : "model"),
                                e.expected, e.got)};
    }
  }
  simple("fabric", j.fabric, &models::Catalog::tcp);
  if (j.has_baseline) simple("baseline", j.baseline_fabric, &models::Catalog::tcp);
  if (j.kind == JobSpec::Kind::TRAINING) {
    simple("nic", j.training.nic, &models::Catalog::nic);
    simple("fabric", j.training.fabric, &models::Catalog::tcp);
  }
}

/// A profile the file `r` names, looked for beside the file first (models::profile_beside), then on the search path.
std::string beside(const Reader& r, const std::string& name, std::vector<std::string> kinds)
{
  return models::profile_beside(name, r.file(), kinds);
}

/// The fields of a "perftest" job: the verb, the metric, the sizes and the perftest options.
void parse_perftest_job(Reader& r, JobSpec& j)
{
  j.kind = JobSpec::Kind::PERFTEST;
  auto& c = j.perftest.config;
  const std::string op = r.str("op", "write");
  if (!microbench::parse_verb(op, c.verb)) fail(r.file(), r.field("op"), "write, read or send", "\"" + op + "\"");
  const std::string metric = r.str("metric", "bw");
  if (metric != "bw" && metric != "lat") fail(r.file(), r.field("metric"), "bw or lat", "\"" + metric + "\"");
  c.metric = metric == "bw" ? microbench::Metric::BW : microbench::Metric::LAT;
  if (r.has("sizes")) {
    const json& s = r.get("sizes");
    if (s.is_string() && s.get<std::string>() == "all")
      c.sizes = microbench::PerftestConfig::all_sizes();
    else if (s.is_array() && !s.empty()) {
      c.sizes.clear();
      for (const auto& v : s) {
        if (!v.is_number_unsigned() || v.get<uint64_t>() == 0)
          fail(r.file(), r.field("sizes"), "positive integers (bytes) or \"all\"", v.dump());
        c.sizes.push_back(v.get<uint64_t>());
      }
    } else
      fail(r.file(), r.field("sizes"), "an array of sizes or \"all\"", s.dump());
  } else {
    c.sizes = {r.size("size", 65536)};
  }
  c.iterations = uint64_t(r.integer("iterations", 1, 100000000, 0));
  c.qps = int(r.integer("qps", 1, 1024, 1));
  c.tx_depth = int(r.integer("tx_depth", 1, 16384, 128));
  c.inline_size = int(r.integer("inline", -1, 4096, -1));
  j.perftest.nic = int(r.integer("nic", 0, 64, 0));
  j.perftest.cross_socket = r.boolean("cross_socket", false);
  j.perftest.gpu = r.boolean("gpu", false);
  j.perftest.server = r.str("server", "");
  j.perftest.client = r.str("client", "");
}

/// The fields of a "pcie_copy" job: one copy between a GPU and host memory (and, with peer_gpu, a GPU peer copy).
void parse_pcie_copy_job(Reader& r, JobSpec& j)
{
  j.kind = JobSpec::Kind::PCIE_COPY;
  sim::CopyJob cj;
  cj.config.gpu = int(r.integer("gpu", 0, 1024, 0));
  cj.config.host_node = int(r.integer("host_node", 0, 7, 0));
  cj.config.bytes = r.size("size", 32ull << 20);
  cj.config.iterations = int(r.integer("iterations", 1, 1000000, 10));
  cj.config.pinned = r.boolean("pinned", true);
  cj.config.peer_gpu = int(r.integer("peer_gpu", -1, 1024, -1));
  if (cj.config.peer_gpu == cj.config.gpu)
    fail(r.file(), r.field("peer_gpu"), "a GPU other than gpu " + std::to_string(cj.config.gpu) + " (or -1: none)",
         std::to_string(cj.config.peer_gpu));
  cj.machine = r.str("machine", "");
  j.copies.push_back(cj);
}

/// The fields every NCCL job shares: algorithm, protocol, nodes, GPUs per node, channels, and the network between the
/// nodes (topology, oversubscription, ECMP placement, the NIC of every node).
void parse_nccl_fields(Reader& r, models::nccl::CollectiveSetup& c, CollectiveNetwork& net)
{
  auto algo = models::nccl::parse_algo(r.str("algo", "auto"));
  if (!algo.ok()) fail(r.file(), r.field("algo"), algo.error().expected, algo.error().got);
  c.algo = algo.value();
  auto proto = models::nccl::parse_proto(r.str("proto", "auto"));
  if (!proto.ok()) fail(r.file(), r.field("proto"), proto.error().expected, proto.error().got);
  c.proto = proto.value();
  c.nodes = int(r.integer("nodes", 1, 1 << 20, 1));
  c.gpus_per_node = int(r.integer("gpus_per_node", 0, 1024, 0));
  c.channels = int(r.integer("channels", 0, 64, 0));
  net.topology = beside(r, r.str("topology", ""), {"topology"});
  net.nic = beside(r, r.str("nic", ""), {"nic"});
  net.pcie = beside(r, r.str("pcie", ""), {"pcie"});
  if (r.has("oversubscription")) {
    const json& v = r.get("oversubscription");
    const std::string f = r.field("oversubscription");
    auto ratio = [&](const json& x, const std::string& field) {
      if (!x.is_number()) fail(r.file(), field, "a ratio from 1 (non-blocking) to 1024", std::string(x.type_name()));
      const double d = x.get<double>();
      if (!(d >= 1) || !(d <= 1024)) fail(r.file(), field, "a ratio from 1 (non-blocking) to 1024", x.dump());
      return d;
    };
    if (v.is_array()) {
      if (v.empty()) fail(r.file(), f, "a ratio or an array of one per tier below the top", "an empty array");
      for (size_t i = 0; i < v.size(); ++i)
        net.oversubscription.push_back(ratio(v[i], f + "[" + std::to_string(i) + "]"));
    } else {
      net.oversubscription.push_back(ratio(v, f));
    }
  }
  if (r.has("ecmp")) {
    auto e = models::parse_ecmp(r.str("ecmp"));
    if (!e.ok()) fail(r.file(), r.field("ecmp"), e.error().expected, e.error().got);
    net.ecmp = e.value();
  }
}

/// The fields of a "collective" job: the op, the NCCL fields and the size.
void parse_collective_job(Reader& r, JobSpec& j)
{
  j.kind = JobSpec::Kind::COLLECTIVE;
  auto& c = j.collective.setup;
  const std::string op = r.str("op", "all_reduce");
  auto o = models::nccl::parse_op(op);
  if (!o.ok()) fail(r.file(), r.field("op"), o.error().expected, o.error().got);
  c.op = o.value();
  parse_nccl_fields(r, c, j.collective.network);
  j.collective.bytes = r.size("size", 32ull << 20);
  if (j.collective.bytes == 0) fail(r.file(), r.field("size"), "a size of at least 4 bytes", "0");
}

/// The fields of a "data_parallel" job: the model, batch and precision, the library's bucketing, the NCCL fields.
void parse_data_parallel_job(Reader& r, JobSpec& j)
{
  j.kind = JobSpec::Kind::DATA_PARALLEL;
  auto& d = j.data_parallel;
  d.collective.setup.op = models::nccl::Op::ALL_REDUCE;
  parse_nccl_fields(r, d.collective.setup, d.collective.network);
  d.model = r.str("model", "resnet50");
  d.batch = int(r.integer("batch", 1, 1 << 20, 256));
  d.precision = r.str("precision", "amp");
  if (!models::known_precision(d.precision))
    fail(r.file(), r.field("precision"), models::PRECISIONS, "\"" + d.precision + "\"");
  auto lib = models::nccl::parse_bucketing(r.str("library", "ddp"));
  if (!lib.ok()) fail(r.file(), r.field("library"), lib.error().expected, lib.error().got);
  auto& o = d.options;
  o.bucketing = lib.value();
  if (o.bucketing == models::nccl::Bucketing::DDP) {
    o.bucket_cap = r.number("bucket_cap_mb", 1e-6, 1e6, 25) * 1024 * 1024;
  } else {
    o.fusion = double(r.size("fusion", uint64_t(o.fusion)));
    o.cycle = r.number("cycle_ms", 1e-3, 1e4, o.cycle * 1e3) * 1e-3;
  }
  const bool ddp = o.bucketing == models::nccl::Bucketing::DDP;
  for (const char* other :
       ddp ? std::vector<const char*>{"fusion", "cycle_ms"} : std::vector<const char*>{"bucket_cap_mb"})
    if (r.has(other)) {
      r.accept(other);
      fail(r.file(), r.field(other),
           std::string("a field of the other library (bucket_cap_mb: ddp; fusion, cycle_ms: horovod)"),
           std::string("with library ") + models::nccl::to_string(o.bucketing));
    }
}

/// A transfer's placement field `key` of `t`: cpu, numaN or gpuN (N < 10000).
Location read_placement(Reader& t, const std::string& key)
{
  const std::string v = t.str(key, "cpu");
  if (v == "cpu") return Location::host(0);
  if (v.rfind("numa", 0) == 0 && v.size() == 5 && std::isdigit(static_cast<unsigned char>(v[4])))
    return Location::host(v[4] - '0');
  // gpuN with N < 10000: digits only, so that no conversion can overflow
  if (v.rfind("gpu", 0) == 0 && v.size() >= 4 && v.size() <= 7 &&
      std::all_of(v.begin() + 3, v.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return Location::gpu(std::stoi(v.substr(3)));
  fail(t.file(), t.field(key), "cpu, numaN or gpuN (N < 10000)", "\"" + v + "\"");
}

/// One transfer of a "transfer" job read from `t` (the job or its baseline); its fabric profile is looked for beside
/// the job's file `r`.
void read_transfer(const Reader& r, Reader& t, sim::TransferJob& tj, std::string& fabric)
{
  tj.transport = t.str("transport");
  if (!transports::find_transport(tj.transport))
    fail(t.file(), t.field("transport"), one_of_names(tj.transport, transports::transport_names()),
         unknown_name(tj.transport, transports::transport_names()));
  auto st = memory::parse_strategy(t.str("strategy", "pool_visitor"));
  if (!st.ok()) fail(t.file(), t.field("strategy"), st.error().expected, st.error().got);
  tj.strategy = st.value();
  tj.sizes = {t.size("size", 1 << 20)};
  tj.steps = int(t.integer("steps", 1, 100, 3));
  tj.tensors_per_step = int(t.integer("tensors", 1, 100000, 1));
  tj.src = read_placement(t, "src");
  tj.dst = read_placement(t, "dst");
  fabric = beside(r, t.str("fabric", ""), {"tcp"});
}

/// The fields of a "transfer" job: its transfer and, when given, the baseline transfer it is compared with.
void parse_transfer_job(Reader& r, JobSpec& j)
{
  j.kind = JobSpec::Kind::TRANSFER;
  read_transfer(r, r, j.transfer, j.fabric);
  if (r.has("baseline")) {
    j.has_baseline = true;
    Reader b(r.get("baseline"), r.file(), r.field("baseline"));
    read_transfer(r, b, j.baseline, j.baseline_fabric);
    b.finish();
  }
}

/// The fields of a "synthetic" training model: its size (parameters and layers, or a language model's variables)
/// and its compute time.
void read_synthetic_model(Reader& r, TrainingSpec& t)
{
  // Checked as a double before the conversion (a double beyond int64_t does not convert).
  t.synthetic_variables_of = r.str("variables_of", "");
  if (t.synthetic_variables_of.empty()) {
    t.synthetic_parameters = int64_t(r.number("parameters", 1, 1e15));
    t.synthetic_layers = int(r.integer("layers", 1, 100000));
  } else {
    auto lm = models::language_model(t.synthetic_variables_of);
    if (!lm.ok()) fail(r.file(), r.field("variables_of"), lm.error().expected, lm.error().got);
    if (r.has("parameters") || r.has("layers"))
      fail(r.file(), r.field(r.has("parameters") ? "parameters" : "layers"),
           "no parameters/layers with variables_of (the model's variable list sets both)", "both given");
  }
  t.synthetic_compute_ms = r.number("compute_ms", -DBL_MAX, DBL_MAX);
  if (!number_ok(t.synthetic_compute_ms, 0, sim::MAX_SIMULATED_SECONDS * 1e3)) // -0 too
    fail(r.file(), r.field("compute_ms"),
         "a time in ms in [0, " + short_number(sim::MAX_SIMULATED_SECONDS * 1e3) +
             "] (the simulated clock resolves nanoseconds up to about 52 days)",
         short_number(t.synthetic_compute_ms));
}

/// A training job's transports: the "transports" list, else the one "transport"; each a registered transport.
void read_training_transports(Reader& r, TrainingSpec& t)
{
  t.transports.clear();
  if (r.has("transports")) {
    const json& list = r.get("transports");
    if (!list.is_array() || list.empty())
      fail(r.file(), r.field("transports"), "a non-empty list of transport names", std::string(list.type_name()));
    for (const auto& x : list) {
      if (!x.is_string() || !transports::find_transport(x.get<std::string>()))
        fail(r.file(), r.field("transports"),
             "transport names, each " + one_of_names("", transports::transport_names()),
             x.is_string() ? unknown_name(x.get<std::string>(), transports::transport_names()) : x.dump());
      t.transports.push_back(x.get<std::string>());
    }
  } else {
    t.transports.push_back(r.str("transport"));
    if (!transports::find_transport(t.transports[0]))
      fail(r.file(), r.field("transport"), one_of_names(t.transports[0], transports::transport_names()),
           unknown_name(t.transports[0], transports::transport_names()));
  }
}

/// A training job's allreduce options: the library's own defaults (Horovod's unless the job names another), then the
/// job's overrides, and the collective mode.
void read_allreduce_options(Reader& r, TrainingSpec& t)
{
  const std::string lib = r.str("library", "horovod");
  auto parsed_lib = collectives::parse_allreduce_library(lib);
  if (!parsed_lib.ok()) fail(r.file(), r.field("library"), parsed_lib.error().expected, "\"" + lib + "\"");
  t.library = parsed_lib.value();
  const collectives::EngineOptions d = collectives::library_defaults(t.library);
  t.collectives.coordinator = r.boolean("coordinator", d.coordinator);
  t.collectives.tick_seconds = r.number("tick_ms", MIN_TICK_MS, MAX_TICK_MS, d.tick_seconds * 1e3) * 1e-3;
  t.collectives.fusion_threshold =
      r.has("fusion") && r.get("fusion").is_number_integer() && r.get("fusion").get<long long>() == 0
          ? 0 // "fusion": 0 turns it off, as HOROVOD_FUSION_THRESHOLD=0 does
          : r.size("fusion", d.fusion_threshold);
  t.collectives.response_cache = r.boolean("response_cache", d.response_cache);
  // HOROVOD_BATCH_D2D_MEMCOPIES: the batched copy kernel's tensors per launch, or one copy per tensor.
  t.collectives.batched_copies =
      r.boolean("batch_d2d_memcopies", d.batched_copies > 0)
          ? (d.batched_copies > 0 ? d.batched_copies : collectives::HOROVOD_BATCHED_D2D_CAPACITY)
          : 0;
  t.initial_broadcast = r.boolean("initial_broadcast", false);
  t.allreduce_on_host = r.boolean("allreduce_on_host", false);
  auto collective_mode = sim::parse_collective_mode(r.str("collective_mode", "protocol"));
  if (!collective_mode.ok())
    fail(r.file(), r.field("collective_mode"), collective_mode.error().expected, collective_mode.error().got);
  t.collective_mode = collective_mode.value();
  t.symmetric_ranks = r.boolean("symmetric_ranks", false);
}

/// Refuse a field of the other synchronisation mode: it would be silently ignored.
void refuse_other_mode_fields(Reader& r, const TrainingSpec& t)
{
  const char* allreduce_only[] = {"library",         "coordinator",         "tick_ms",           "fusion",
                                  "response_cache",  "batch_d2d_memcopies", "initial_broadcast", "allreduce_on_host",
                                  "collective_mode", "ranks_per_host",      "symmetric_ranks"};
  const char* ps_only[] = {"ps", "fetch", "gpus_per_worker"};
  if (t.mode == training::SyncMode::PARAMETER_SERVER)
    for (const char* f : allreduce_only)
      if (r.has(f)) fail(r.file(), r.field(f), "no allreduce option in a ps-mode job (\"mode\": \"ps\")", "one");
  if (t.mode == training::SyncMode::ALLREDUCE)
    for (const char* f : ps_only)
      if (r.has(f))
        fail(r.file(), r.field(f), "no parameter-server option in an allreduce-mode job (\"mode\": \"allreduce\")",
             "one");
}

void read_roce_settings(Reader& r, models::RoceConfig& c);

/// The fields of a "training" job: the model, the mode, the transports, the job's shape and options, the faults.
void parse_training_job(Reader& r, JobSpec& j)
{
  j.kind = JobSpec::Kind::TRAINING;
  TrainingSpec& t = j.training;
  t.hw = j.hw;
  t.switch_name = j.switch_name;
  t.model = r.str("model");
  t.batch = int(r.integer("batch", 1, 4096, 32));
  t.precision = r.str("precision", "fp32");
  if (!models::known_precision(t.precision))
    fail(r.file(), r.field("precision"), models::PRECISIONS, "\"" + t.precision + "\"");
  if (t.model == "synthetic" && r.has("precision"))
    fail(r.file(), r.field("precision"), "no precision with a synthetic model (its compute_ms is given)",
         "\"" + t.precision + "\"");
  if (t.model == "synthetic") read_synthetic_model(r, t);
  read_transport_knobs(r, t.transport_options);
  auto mode = training::parse_sync_mode(r.str("mode", "ps"));
  if (!mode.ok()) fail(r.file(), r.field("mode"), mode.error().expected, mode.error().got);
  t.mode = mode.value();
  read_training_transports(r, t);
  // A transport's switch set for a job with no run of that transport would change nothing: refused.
  for (const auto* knob : transports::option_knobs()) {
    if (knob->json_field.empty() || !r.has(knob->json_field) || knob->get(t.transport_options) == knob->default_value)
      continue;
    const std::string owner = transports::knob_transport(knob);
    if (std::find(t.transports.begin(), t.transports.end(), owner) == t.transports.end())
      fail(r.file(), r.field(knob->json_field), "a job with a run of " + owner + " (the field changes only its runs)",
           "transports without " + owner);
  }
  t.workers = int(r.integer("workers", 0, 100000000, 0)); // large counts meet the memory estimate, not a range
  t.gpus_per_worker = int(r.integer("gpus_per_worker", 0, 64, 0));
  t.ps_tasks = int(r.integer("ps", -1, 100000, -1));
  t.ps_own_hosts = r.boolean("ps_own_hosts", false);
  if (t.ps_own_hosts && (t.workers < 1 || t.ps_tasks < 1))
    fail(r.file(), r.field("ps_own_hosts"), "\"workers\" and \"ps\" given (hosts: workers first, then the PS tasks)",
         "true without them");
  t.fetch = r.str("fetch", "per_tower");
  if (t.fetch != "per_tower" && t.fetch != "per_worker")
    fail(r.file(), r.field("fetch"), "per_tower or per_worker", "\"" + t.fetch + "\"");
  auto st = memory::parse_strategy(r.str("strategy", "pool_visitor"));
  if (!st.ok()) fail(r.file(), r.field("strategy"), st.error().expected, st.error().got);
  t.strategy = st.value();
  t.steps = int(r.integer("steps", 2, 1000, 3));
  t.fabric = beside(r, r.str("fabric", ""), {"tcp"});
  t.tf_version = r.str("tf_version", "");
  if (auto tv = r.has("tf_version") ? models::given_tf_rpc_threading(t.tf_version, "tf_version")
                                    : models::tf_rpc_threading(t.tf_version);
      !tv.ok())
    fail(r.file(), r.field("tf_version"), tv.error().expected, tv.error().got);
  t.nic = beside(r, r.str("nic", ""), {"nic"});
  t.one_gpu_reference = r.boolean("reference", true);
  t.ranks_per_host = int(r.integer("ranks_per_host", 0, 1024, 0));
  read_allreduce_options(r, t);
  refuse_other_mode_fields(r, t);
  t.faults = read_fault_plan(r);
  t.tcp_port_buffer = r.size("port_buffer", 0);
  if (r.has("port_buffer") && t.tcp_port_buffer < 1502) // models::check_incast: one full packet (MSS 1448 + headers)
    fail(r.file(), r.field("port_buffer"), "at least one full TCP packet (1502 bytes: MSS 1448 + 54 of headers)",
         std::to_string(t.tcp_port_buffer));
  if (r.has("roce_fabric")) { // the RoCE fabric of network model roce (checked there)
    const auto& o = r.get("roce_fabric");
    if (!o.is_object())
      fail(r.file(), r.field("roce_fabric"), "an object of roce settings (docs/formats.md)", o.dump().substr(0, 60));
    Reader sub(o, r.file(), r.field("roce_fabric"));
    models::RoceConfig c = models::roce_hpcc_defaults(100e9); // the rate is the ranks' NIC's (sim/training_job.cpp)
    read_roce_settings(sub, c);
    sub.finish();
    t.roce_fabric = c;
  }
  if (auto st = check_collective_mode(t); !st.ok())
    fail(r.file(), r.field("collective_mode"), st.error().expected, st.error().got);
  t.stall_timeout = r.number("stall_timeout", -DBL_MAX, DBL_MAX, 1000);
  if (!number_ok(t.stall_timeout, 0, sim::MAX_SIMULATED_SECONDS) || t.stall_timeout == 0)
    fail(r.file(), r.field("stall_timeout"),
         "a positive number of simulated seconds, at most " + short_number(sim::MAX_SIMULATED_SECONDS) +
             " (about 52 days: the simulated clock's range)",
         short_number(t.stall_timeout));
}

/// An N-to-1 TCP incast through one switch port (models/congestion/tcp_incast.hpp); fields as `tensorpath incast`.
void parse_incast_job(Reader& r, JobSpec& j)
{
  j.kind = JobSpec::Kind::INCAST;
  auto& c = j.incast;
  c.senders = int(r.integer("senders", 1, 65536, 8));
  c.bytes_per_sender = r.size("size", 1000000);
  c.buffer_bytes = r.size("buffer", 131072);
  if (r.has("switch")) { // the port's dynamic-threshold share of the switch profile's lossy pool, the only hot port
    if (r.has("buffer"))
      fail(r.file(), r.field("buffer"), "buffer or switch, not both (the switch profile gives the port's share)",
           "both");
    auto sw = models::Catalog().network_switch(beside(r, r.str("switch"), {"switch"}));
    if (!sw.ok()) fail(r.file(), r.field("switch"), sw.error().expected, sw.error().got);
    auto share = models::lossy_port_buffer(sw.value(), 1);
    if (!share.ok()) fail(r.file(), r.field("switch"), share.error().expected, share.error().got);
    c.buffer_bytes = share.value();
  }
  c.link_rate = r.number("rate_gbps", 1e-6, 1e6, 10) * 1e9 / 8;
  c.link_delay = r.number("delay_us", 0, 1e7, 1) * 1e-6;
  c.min_rto = r.number("min_rto_ms", 1e-3, 60000, 200) * 1e-3; // at most the 60 s maximum RTO
  c.initial_window = int(r.integer("init_cwnd", 1, 1000000, 10));
  c.mss = int(r.integer("mss", 64, 65000, 1448));
  c.start_jitter = r.number("jitter_ns", 0, 1e9, 0) * 1e-9;
  c.start_stagger = r.number("stagger_ns", 0, 1e6, 0) * 1e-9;
  c.syn_bytes = int(r.integer("syn_bytes", 40, 1000, 60));
  c.ns3_quirks = r.boolean("ns3_quirks", false);
  c.seed = uint64_t(r.integer("seed", 0, 1L << 40, 1));
  j.incast_seeds = int(r.integer("seeds", 1, 1000, 1));
  if (r.has("start_offsets_ns")) {
    // The starts a packet-level run drew (validation/ns3/incast_reference prints them): one list per seed, one offset
    // per sender, in place of the jitter and the stagger.
    const std::string field = r.field("start_offsets_ns");
    const auto& lists = r.get("start_offsets_ns");
    const std::string expected = std::to_string(j.incast_seeds) + " list(s) (one per seed) of " +
                                 std::to_string(c.senders) + " whole ns (one per sender), each 0 to 1e6";
    for (const char* beside : {"jitter_ns", "stagger_ns"})
      if (r.has(beside))
        fail(r.file(), field, "no jitter_ns or stagger_ns beside it (the offsets are the starts)",
             std::string(beside) + " too");
    if (!lists.is_array() || lists.empty() || !lists[0].is_array())
      fail(r.file(), field, expected, lists.dump().substr(0, 80));
    if (lists.size() != size_t(j.incast_seeds))
      fail(r.file(), field, expected, std::to_string(lists.size()) + " list(s)");
    for (const auto& list : lists) {
      if (!list.is_array() || list.size() != size_t(c.senders))
        fail(r.file(), field, expected, list.is_array() ? "a list of " + std::to_string(list.size()) : list.dump());
      std::vector<double> offsets;
      for (const auto& o : list) {
        if (!o.is_number_integer() || o.get<long long>() < 0 || o.get<long long>() > 1000000)
          fail(r.file(), field, expected, o.dump());
        offsets.push_back(double(o.get<long long>()) * 1e-9);
      }
      j.incast_offsets.push_back(std::move(offsets));
    }
    for (const auto& offsets : j.incast_offsets) { // each run's starts against the link delay
      auto run = c;
      run.start_offsets = offsets;
      if (auto st = models::check_incast(run); !st.ok()) fail(r.file(), field, st.error().expected, st.error().got);
    }
  } else if (j.incast_seeds > 1 && c.start_jitter == 0)
    fail(r.file(), r.field("seeds"), "1 without jitter_ns (every seed would run the same incast)",
         std::to_string(j.incast_seeds));
  if (auto st = models::check_incast(c); !st.ok()) {
    const std::map<std::string, std::string> in_file = {{"rate", "rate_gbps"},
                                                        {"delay", "delay_us"},
                                                        {"min_rto", "min_rto_ms"},
                                                        {"jitter", "jitter_ns"},
                                                        {"stagger", "stagger_ns"}};
    const auto it = in_file.find(st.error().field);
    const std::string key = st.error().field == "buffer" && r.has("switch") ? "switch"
                            : it == in_file.end()                           ? st.error().field
                                                                            : it->second;
    fail(r.file(), r.field(key), st.error().expected, st.error().got);
  }
}

/// The fabric's settings a roce job and a training job's `roce_fabric` share (units in their names): the profile, the
/// leaf-spine shape, the switch buffer, PFC, ECN and DCQCN.
void read_roce_settings(Reader& r, models::RoceConfig& c)
{
  const std::string profile = r.str("profile", "hpcc");
  if (profile == "paper") {
    c.dcqcn = models::dcqcn_paper_profile();
    c.ecn = models::ecn_paper_profile();
  } else if (profile != "hpcc") {
    fail(r.file(), r.field("profile"), "hpcc or paper", "\"" + profile + "\"");
  }
  c.leaves = int(r.integer("leaves", 1, 1024, c.leaves));
  c.oversubscription = r.number("oversubscription", 1, 64, c.oversubscription);
  const std::string placement = r.str("placement", "interleaved");
  if (placement != "interleaved" && placement != "leaf-major")
    fail(r.file(), r.field("placement"), "interleaved or leaf-major", "\"" + placement + "\"");
  c.interleaved = placement == "interleaved";
  c.delay = r.number("delay_us", 0, 1e4, 1) * 1e-6;
  if (r.has("switch")) { // the switch profile's lossless pool and PFC threshold
    if (r.has("buffer"))
      fail(r.file(), r.field("buffer"), "buffer or switch, not both (the switch profile gives the pool)", "both");
    auto sw = models::Catalog().network_switch(beside(r, r.str("switch"), {"switch"}));
    if (!sw.ok()) fail(r.file(), r.field("switch"), sw.error().expected, sw.error().got);
    if (auto st = models::apply_switch_buffer(sw.value(), c); !st.ok())
      fail(r.file(), r.field("switch"), st.error().expected, st.error().got);
    if (!c.pfc.rows.empty() && r.has("headroom_bdps"))
      fail(r.file(), r.field("headroom_bdps"),
           "no headroom_bdps beside switch \"" + sw->name + "\" (its profile's pfc rows give each port's headroom)",
           "both");
  }
  c.buffer = r.size("buffer", c.buffer);
  c.dcqcn.enabled = r.boolean("dcqcn", true);
  c.ecn.enabled = r.boolean("ecn", true);
  c.pfc.enabled = r.boolean("pfc", true);
  c.ecn.kmin = r.size("kmin", c.ecn.kmin);
  c.ecn.kmax = r.size("kmax", c.ecn.kmax);
  c.ecn.pmax = r.number("pmax", 0, 1, c.ecn.pmax);
  c.dcqcn.t_alpha = r.number("t_alpha_us", 1e-3, 1e6, c.dcqcn.t_alpha * 1e6) * 1e-6;
  c.dcqcn.t_dec = r.number("t_dec_us", 1e-3, 1e6, c.dcqcn.t_dec * 1e6) * 1e-6;
  c.dcqcn.t_inc = r.number("t_inc_us", 1e-3, 1e6, c.dcqcn.t_inc * 1e6) * 1e-6;
  c.dcqcn.g = r.number("g", 1e-9, 1, c.dcqcn.g);
  c.dcqcn.fast_recovery = int(r.integer("fast_recovery", 0, 1000, c.dcqcn.fast_recovery));
  c.dcqcn.ai = r.number("ai_mbps", 0, 1e7, c.dcqcn.ai * 1e-6) * 1e6;
  c.dcqcn.hai = r.number("hai_mbps", 0, 1e7, c.dcqcn.hai * 1e-6) * 1e6;
  c.dcqcn.min_rate = r.number("min_rate_gbps", 1e-6, 1e4, c.dcqcn.min_rate * 1e-9) * 1e9;
  c.dcqcn.cnp_interval = r.number("cnp_interval_us", 0, 1e6, c.dcqcn.cnp_interval * 1e6) * 1e-6;
  c.dcqcn.byte_counter = r.size("byte_counter", c.dcqcn.byte_counter);
  c.pfc.headroom_bdps = r.number("headroom_bdps", 0, 1000, c.pfc.headroom_bdps);
}

/// RoCE congestion on one of the roce fabrics (models/congestion/roce_fabric.hpp); fields as `tensorpath roce`, with
/// units in their names.
void parse_roce_job(Reader& r, JobSpec& j)
{
  j.kind = JobSpec::Kind::ROCE;
  const double rate = r.number("rate_gbps", 1e-3, 1e4, 100) * 1e9;
  auto& c = j.roce = models::roce_hpcc_defaults(rate);
  auto scenario = models::parse_roce_scenario(r.str("scenario", "incast"));
  if (!scenario.ok()) fail(r.file(), r.field("scenario"), scenario.error().expected, scenario.error().got);
  c.scenario = scenario.value();
  for (const char* field : {"leaves", "oversubscription", "placement", "start2_us", "duration_ms", "warmup_ms", "local",
                            "victim_priority"}) {
    const models::RoceSettingUnit* unit = models::roce_setting_unit(field);
    const std::string name = unit ? unit->field : field;
    if (r.has(field))
      if (const std::string owner = models::roce_field_scenario(name, c.scenario); !owner.empty())
        fail(r.file(), r.field(field), "scenario \"" + owner + "\" (only it reads the field)",
             std::string("scenario \"") + models::roce_scenario_name(c.scenario) + "\"");
  }
  c.senders = int(r.integer("senders", 1, 1024, c.scenario == models::RoceScenario::CONVERGE ? 2 : 8));
  c.local = int(r.integer("local", 0, 1024, 0));
  c.victim_priority = int(r.integer("victim_priority", 0, 7, 0));
  c.size = r.size("size", c.size);
  read_roce_settings(r, c);
  c.start2 = r.number("start2_us", 0, 1e7, c.start2 * 1e6) * 1e-6;
  c.duration = r.number("duration_ms", 1e-6, 1e4, c.duration * 1e3) * 1e-3;
  c.warmup = r.number("warmup_ms", 0, 1e4, c.warmup * 1e3) * 1e-3;
  c.start_jitter = r.number("jitter_ns", 0, 1e9, 0) * 1e-9;
  c.seed = uint64_t(r.integer("seed", 0, 1L << 40, 1));
  j.roce_seeds = int(r.integer("seeds", 1, 1000, 1));
  c.step = r.number("step_ns", 0, 1e6, 0) * 1e-9;
  c.stop = r.number("stop_s", 1e-9, 100, c.stop);
  if (auto st = models::check_roce(c); !st.ok()) {
    const models::RoceSettingUnit* unit = models::roce_setting_unit(st.error().field);
    const std::string key = st.error().field == "shared_pool" ? "switch" : unit ? unit->key : st.error().field;
    fail(r.file(), r.field(key), st.error().expected, st.error().got);
  }
}

/// A training job's RoCE fabric checked when the file is read, on the ring the job will most likely have: its ranks
/// host by host (ranks_per_host, else every GPU), one hop between hosts per host used, at the NIC's rate (the job's
/// `nic`, else the first host's). The run checks the ring it places again.
void check_roce_fabric(Reader& r, const JobSpec& j, const models::Catalog& cat, const models::ClusterProfile& cluster)
{
  const auto& t = j.training;
  if (cluster.host_count() == 0) return;
  const auto& host = cluster.host(0);
  double bps = host.nics.empty() ? 0 : host.nics[0].nic.line_rate * 8;
  if (!t.nic.empty())
    if (auto nic = cat.nic(t.nic); nic.ok()) bps = nic->line_rate * 8;
  if (!(bps > 0)) return;
  const int per_host = t.ranks_per_host > 0 ? t.ranks_per_host : std::max(1, int(host.gpus.size()));
  const int hosts = int(cluster.host_count());
  const int ranks = t.workers > 0 ? t.workers : hosts * per_host;
  const int used = std::min(hosts, (ranks + per_host - 1) / per_host);
  const int hops = used > 1 ? used : 0;
  const auto fabric = models::roce_at_nic_rate(*t.roce_fabric, bps);
  if (auto st = models::check_roce(models::roce_ring(fabric, std::max(ranks, 2), std::max(hops, 2), 1e6)); !st.ok()) {
    const Error e = models::roce_fabric_error(st.error(), std::max(hops, 2), fabric.switch_name);
    fail(r.file(), r.field(e.field), e.expected, e.got);
  }
}

/// The kind's own network model when the file names none; otherwise the named one, if it honours the kind.
void parse_network_model(Reader& r, JobSpec& j, const std::string& kind)
{
  std::string fallback = "flow";
  if (j.kind == JobSpec::Kind::COLLECTIVE || j.kind == JobSpec::Kind::DATA_PARALLEL) fallback = "nccl";
  if (j.kind == JobSpec::Kind::INCAST) fallback = "tcp-incast";
  if (j.kind == JobSpec::Kind::ROCE) fallback = "roce";
  if (j.kind == JobSpec::Kind::TRAINING && j.training.collective_mode == sim::FabricMode::ANALYTICAL)
    fallback = "analytical";
  const bool named = r.has("network_model");
  j.network_model = r.str("network_model", fallback);
  auto m = models::network_model_for(j.network_model, kind);
  if (!m.ok()) fail(r.file(), r.field("network_model"), m.error().expected, m.error().got);
  if (j.kind == JobSpec::Kind::TRAINING) {
    // tcp-incast in training: each gRPC burst pays its losses at the receiver's switch port (sim/incast_ports.hpp).
    const bool incast = j.network_model == "tcp-incast";
    if (incast && j.training.mode != training::SyncMode::PARAMETER_SERVER)
      fail(r.file(), r.field("network_model"),
           "\"flow\", \"analytical\" or \"roce\" for an allreduce job (tcp-incast charges the N-to-1 pushes of a "
           "parameter server; a ring has one sender per receiver)",
           "\"tcp-incast\"");
    j.training.tcp_incast = incast;
    if (incast && j.training.tcp_port_buffer == 0) {
      // Without port_buffer the ports take their dynamic-threshold share of the receivers' switch's buffer: the
      // switch profile must give one (a broken hw or switch is check_profiles' error).
      auto cluster = cluster_for(models::Catalog(), j.hw, 1, j.switch_name);
      if (cluster.ok()) {
        const auto& leaf = cluster->leaf_switch();
        if (auto b = models::lossy_port_buffer(leaf, 1); !b.ok())
          fail(r.file(), r.field("port_buffer"),
               "the bytes each switch port toward a receiver holds, or a switch profile (\"switch\") whose buffer "
               "the ports share (network_model tcp-incast; docs/network-models.md)",
               "no port_buffer, and switch \"" + leaf.name + "\" gives no buffer");
        // Each port's share shrinks as more fill at once: with every host's port full it must still hold a packet
        // (models::check_incast: MSS 1448 + 54 bytes of headers).
        const int hosts = int(cluster->host_count());
        if (const uint64_t least = models::lossy_port_buffer(leaf, hosts).value(); least < 1502)
          fail(r.file(), r.field(r.has("switch") ? "switch" : "hw"),
               "a switch whose lossy pool gives each port at least one full TCP packet (1502 bytes) with all " +
                   std::to_string(hosts) + " hosts' ports filling at once, or a port_buffer",
               "switch \"" + leaf.name + "\": " + std::to_string(least) + " bytes each");
      }
    }
    // roce in training: each ring allreduce waits the congestion the roce model finds on the job's RoCE fabric.
    const bool roce = j.network_model == "roce";
    if (roce && j.training.mode != training::SyncMode::ALLREDUCE)
      fail(r.file(), r.field("network_model"),
           "\"flow\" or \"tcp-incast\" for a parameter-server job (roce charges the ring allreduces of an allreduce "
           "job)",
           "\"roce\"");
    if (!roce && r.has("roce_fabric"))
      fail(r.file(), r.field("roce_fabric"), "network_model \"roce\" with it (only that model has a RoCE fabric)",
           "network_model \"" + j.network_model + "\"");
    if (roce) {
      if (r.has("collective_mode") && j.training.collective_mode != sim::FabricMode::ANALYTICAL)
        fail(r.file(), r.field("network_model"),
             "collective_mode \"analytical\" or none (roce times the rings analytically and adds their congestion)",
             "collective_mode \"" + r.str("collective_mode") + "\"");
      j.training.collective_mode = sim::FabricMode::ANALYTICAL;
      if (!j.training.roce_fabric) j.training.roce_fabric = models::roce_hpcc_defaults(100e9);
      // A fabric whose file names neither a buffer nor a switch has the cluster's switch's pool when its profile gives
      // one (the leaves' model, else HPCC's buffer at the NIC's rate).
      const auto* given = r.has("roce_fabric") ? &r.get("roce_fabric") : nullptr;
      const models::Catalog cat;
      auto cluster = cluster_for(cat, j.hw, 1, j.switch_name); // a broken hw or switch is check_profiles' error
      if (cluster.ok() &&
          (!given || (!given->contains("buffer") && !given->contains("switch") && !given->contains("headroom_bdps")))) {
        const auto& leaf = cluster->leaf_switch();
        if (leaf.buffer && leaf.buffer->lossless_pool > 0)
          if (auto st = models::apply_switch_buffer(leaf, *j.training.roce_fabric); !st.ok())
            fail(r.file(), r.field(r.has("switch") ? "switch" : "hw"), st.error().expected, st.error().got);
      }
      if (auto st = check_collective_mode(j.training); !st.ok())
        fail(r.file(), r.field("network_model"), st.error().expected, st.error().got);
      if (cluster.ok()) check_roce_fabric(r, j, cat, cluster.value());
    }
    if (!incast && r.has("port_buffer"))
      fail(r.file(), r.field("port_buffer"),
           j.training.mode == training::SyncMode::PARAMETER_SERVER
               ? "network_model \"tcp-incast\" with it (only that model has port buffers)"
               : "no port_buffer in an allreduce job (tcp-incast charges parameter-server jobs only)",
           "network_model \"" + j.network_model + "\"");
  }
  if (named && j.kind == JobSpec::Kind::TRAINING) {
    // A training job's collectives choose between the two: "analytical" is collective_mode "analytical".
    const bool analytical = j.network_model == "analytical";
    if (analytical && r.has("collective_mode") && j.training.collective_mode != sim::FabricMode::ANALYTICAL)
      fail(r.file(), r.field("network_model"), "\"flow\", as collective_mode \"" + r.str("collective_mode") + "\" says",
           "\"analytical\"");
    if (!analytical && j.network_model != "roce" && j.training.collective_mode == sim::FabricMode::ANALYTICAL)
      fail(r.file(), r.field("network_model"), "\"analytical\", as collective_mode \"analytical\" says",
           "\"" + j.network_model + "\"");
    if (analytical && j.training.mode != training::SyncMode::ALLREDUCE)
      fail(r.file(), r.field("network_model"),
           "\"flow\" for a parameter-server job (the analytical model times ring allreduces only)", "\"analytical\"");
    if (analytical) {
      j.training.collective_mode = sim::FabricMode::ANALYTICAL;
      // The same checks as collective_mode "analytical" (parse_training_job ran them before the mode was set).
      if (auto st = check_collective_mode(j.training); !st.ok())
        fail(r.file(), r.field("network_model"), st.error().expected, st.error().got);
    }
  }
}

/// The job kinds whose scenario jobs take `faults` (read_fault_plan): the others refuse the field.
const char* const FAULT_JOBS[] = {"training"};

/// A job's faults against its network model, once both are read: a training job's fault types must be ones its
/// model injects (field faults[i].type); a job of another kind takes no `faults` at all, and says why (its model
/// injects none, or faults are injected into training jobs only). Never a job that runs without a fault it names.
void check_job_faults(Reader& r, const JobSpec& j, const std::string& kind)
{
  const bool takes_faults = std::find(std::begin(FAULT_JOBS), std::end(FAULT_JOBS), kind) != std::end(FAULT_JOBS);
  if (takes_faults) {
    if (j.kind != JobSpec::Kind::TRAINING) return;
    if (auto st = models::check_faults_supported(j.network_model, kind, sim::fault_type_names(j.training.faults));
        !st.ok()) {
      std::string got = st.error().got;
      if (!r.has("network_model") && j.network_model == "analytical") got += " (collective_mode \"analytical\")";
      fail(r.file(), r.field(st.error().field), st.error().expected, got);
    }
    return;
  }
  if (!r.has("faults")) return;
  std::string why;
  for (const auto& m : models::network_models())
    if (m.name == j.network_model && m.fault_types.empty())
      why = "network model \"" + m.name + "\" injects no fault (" + m.faults + "), and ";
  std::string kinds;
  for (const char* k : FAULT_JOBS)
    kinds += (kinds.empty() ? "" : ", ") + std::string(k);
  const std::string a_job = std::string(kind == "incast" ? "an " : "a ") + kind + " job";
  fail(r.file(), r.field("faults"),
       "no faults in " + a_job + ": " + why + "faults are injected into " + kinds +
           " jobs only, on network model \"flow\" (docs/faults.md)",
       "a fault list on " + a_job + " (network model \"" + j.network_model + "\")");
}

JobSpec parse_job(Reader r, const std::string& default_hw)
{
  JobSpec j;
  j.label = r.str("label", "");
  const std::string kind = r.str("kind");
  if (kind == "incast" || kind == "roce") { // no host profile: the links and switches are the job's own fields
    if (kind == "incast")
      parse_incast_job(r, j);
    else
      parse_roce_job(r, j);
    parse_network_model(r, j, kind);
    check_job_faults(r, j, kind);
    r.finish();
    return j;
  }
  // Profiles named by the file are looked for beside it first (models::profile_beside), then on the search path.
  j.hw =
      beside(r, r.str("hw", default_hw.empty() ? std::optional<std::string>() : std::optional<std::string>(default_hw)),
             {"host", "cluster", "nic"});
  j.switch_name = beside(r, r.str("switch", ""), {"switch"});
  if (kind == "perftest") {
    parse_perftest_job(r, j);
  } else if (kind == "pcie_copy") {
    parse_pcie_copy_job(r, j);
  } else if (kind == "transfer") {
    parse_transfer_job(r, j);
  } else if (kind == "training") {
    parse_training_job(r, j);
  } else if (kind == "collective") {
    parse_collective_job(r, j);
  } else if (kind == "data_parallel") {
    parse_data_parallel_job(r, j);
  } else {
    fail(r.file(), r.field("kind"),
         "perftest, pcie_copy, transfer, training, collective, data_parallel, incast or roce", "\"" + kind + "\"");
  }
  parse_network_model(r, j, kind);
  check_job_faults(r, j, kind);
  r.finish();
  check_profiles(j, r);
  return j;
}

} // namespace

namespace {

/// The cases of one case file (parsed JSON `j` of file `f`), appended to `out`; names must be unique in `names`.
void cases_from(const json& j, const std::string& f, std::set<std::string>& names, std::vector<ValidationCase>& out)
{
  Reader top(j, f, "");
  const std::string prefix = top.str("group", "");
  const std::string default_hw = top.str("hw", "");
  const json& cases = top.get("cases");
  if (!cases.is_array() || cases.empty()) fail(f, "cases", "a non-empty array of cases", cases.type_name());
  top.finish({"description", "notes"});
  for (size_t i = 0; i < cases.size(); ++i) {
    Reader r(cases[i], f, "cases[" + std::to_string(i) + "]");
    ValidationCase c;
    c.file = f;
    const std::string case_name = r.str("case");
    if (case_name.empty()) fail(f, r.field("case"), "a case name", "\"\"");
    c.name = (prefix.empty() ? "" : prefix + "/") + case_name;
    if (!names.insert(c.name).second) fail(f, r.field("case"), "a unique case name", "\"" + c.name + "\" again");
    c.description = r.str("description", "");
    c.source = r.str("source");
    c.measure = r.str("measure");
    if (c.measure.empty()) fail(f, r.field("measure"), "the name of a metric the job reports", "\"\"");
    c.unit = r.str("unit", "");
    c.expected = r.number("expected", -DBL_MAX, DBL_MAX);
    c.tolerance = r.number("tolerance", 0, 1);
    if (c.tolerance <= 0 || c.tolerance >= 1)
      fail(f, r.field("tolerance"), "a relative tolerance in (0, 1), e.g. 0.05", number_text(c.tolerance));
    if (c.expected == 0) fail(f, r.field("expected"), "a non-zero expected value (the error is relative)", "0");
    c.note = r.str("note", "");
    c.quote = r.str("quote", "");
    for (const char* key : {"known", "assumptions"}) {
      if (!r.has(key)) continue;
      const json& list = r.get(key);
      if (!list.is_array()) fail(f, r.field(key), "a list of sentences (strings)", std::string(list.type_name()));
      for (size_t k = 0; k < list.size(); ++k) {
        if (!list[k].is_string() || list[k].get<std::string>().empty())
          fail(f, r.field(key) + "[" + std::to_string(k) + "]", "a non-empty sentence (string)", list[k].dump());
        (std::string(key) == "known" ? c.known : c.assumptions).push_back(list[k].get<std::string>());
      }
    }
    const std::string check = r.str("check", "within");
    if (check == "within")
      c.check = ValidationCase::Check::WITHIN;
    else if (check == "at_least")
      c.check = ValidationCase::Check::AT_LEAST;
    else if (check == "at_most")
      c.check = ValidationCase::Check::AT_MOST;
    else
      fail(f, r.field("check"), "within, at_least or at_most", "\"" + check + "\"");
    c.expected_to_fail = r.str("expected_to_fail", "");
    c.job = parse_job(Reader(r.get("setup"), f, r.field("setup")), default_hw);
    r.finish();
    out.push_back(std::move(c));
  }
}

} // namespace

bool ValidationCase::passes(double got) const
{
  if (!std::isfinite(got)) return false;
  switch (check) {
  case Check::AT_LEAST:
    return got >= expected - tolerance * std::fabs(expected);
  case Check::AT_MOST:
    return got <= expected + tolerance * std::fabs(expected);
  case Check::WITHIN:
    break;
  }
  return std::fabs(got - expected) <= tolerance * std::fabs(expected);
}

Result<std::vector<ValidationCase>> load_cases(const std::vector<std::string>& paths)
{
  std::vector<std::string> files;
  for (const auto& p : paths) {
    if (fs::is_directory(p)) {
      std::vector<std::string> in_dir;
      for (const auto& e : fs::directory_iterator(p))
        if (e.path().extension() == ".json") in_dir.push_back(e.path().string());
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (fs::is_regular_file(p)) {
      files.push_back(p);
    } else {
      return Error::at(p, "", "a validation case file or directory", "no such file or directory");
    }
  }
  std::vector<ValidationCase> out;
  std::set<std::string> names;
  try {
    for (const auto& f : files)
      cases_from(read_json(f), f, names, out);
  } catch (const SpecError& e) {
    return e.error;
  }
  return out;
}

Result<std::vector<ValidationCase>> load_cases_text(const std::string& text, const std::string& name)
{
  std::vector<ValidationCase> out;
  std::set<std::string> names;
  try {
    cases_from(json_input::parse_text(text, name), name, names, out);
  } catch (const SpecError& e) {
    return e.error;
  }
  return out;
}

namespace {
Result<Scenario> scenario_from(const json& j, const std::string& path)
{
  try {
    Reader r(j, path, "");
    Scenario s;
    s.file = path;
    const std::string kind = r.str("kind", "microbenchmarks");
    if (kind != "microbenchmarks" && kind != "training")
      fail(path, "kind", "\"microbenchmarks\" or \"training\"", "\"" + kind + "\"");
    s.name = r.str("name", fs::path(path).stem().string());
    s.description = r.str("description", "");
    const std::string hw = r.str("hw", "");
    const json& jobs = r.get("jobs");
    if (!jobs.is_array() || jobs.empty()) fail(path, "jobs", "a non-empty array of jobs", jobs.type_name());
    for (size_t i = 0; i < jobs.size(); ++i)
      s.jobs.push_back(parse_job(Reader(jobs[i], path, "jobs[" + std::to_string(i) + "]"), hw));
    r.finish({"notes"});
    return s;
  } catch (const SpecError& e) {
    return e.error;
  }
}
} // namespace

Result<Scenario> load_scenario(const std::string& path)
{
  try {
    return scenario_from(read_json(path), path);
  } catch (const SpecError& e) {
    return e.error;
  }
}

Result<Scenario> load_scenario_text(const std::string& text, const std::string& name)
{
  try {
    return scenario_from(json_input::parse_text(text, name), name);
  } catch (const SpecError& e) {
    return e.error;
  }
}

Status check_collective_mode(const TrainingSpec& spec)
{
  if (spec.mode != training::SyncMode::ALLREDUCE || spec.collective_mode != sim::FabricMode::ANALYTICAL)
    return ok_status();
  for (const auto& t : spec.transports)
    if (t != "mpi")
      return Error::at("", "collective_mode analytical",
                       "transport mpi (the analytical rings time the mpi transport's data path only)", t);
  const auto& mpi = spec.transport_options.of<transports::MpiOptions>();
  if (!mpi.optimal_path || !mpi.nonblocking_recv)
    return Error::at("", "collective_mode analytical",
                     "mpi_optimal_path and mpi_nonblocking_recv (--mpi-optimal-path --mpi-nonblocking-recv): the "
                     "fabric modes model no MPI thread, and a blocking receive would serialize the ring's steps",
                     std::string(mpi.optimal_path ? "" : "no mpi_optimal_path ") +
                         (mpi.nonblocking_recv ? "" : "no mpi_nonblocking_recv"));
  return ok_status();
}

std::vector<std::string> metric_names(const JobSpec& job)
{
  std::vector<std::string> out;
  switch (job.kind) {
  case JobSpec::Kind::PERFTEST:
    if (job.perftest.config.metric == microbench::Metric::BW)
      out = {"bw_average_gbps", "bw_peak_gbps", "msg_rate_mpps", "bw_average_GBps"};
    else
      out = {"lat_typical_us", "lat_avg_us"};
    out.insert(out.end(), {"wall_seconds", "operations"});
    break;
  case JobSpec::Kind::COLLECTIVE:
    out = {"time_us", "algbw_GBps", "busbw_GBps"};
    if (job.collective.setup.nodes > 1) {
      out.push_back("busbw_per_nic_GBps");
      // with a multi-tier topology: the busiest link's utilisation and each tier's (frontend/spec_files.cpp)
      auto s = collective_setup_for(models::Catalog(), job.hw, job.switch_name, job.collective.setup,
                                    job.collective.network);
      if (s.ok())
        for (auto& m : utilisation_metrics(s.value()))
          out.push_back(std::move(m));
    }
    break;
  case JobSpec::Kind::DATA_PARALLEL: {
    out = {"step_ms",    "images_per_second", "scaling_efficiency", "speedup_over_one_gpu",
           "gpus",       "compute_ms",        "communication_ms",   "exposed_ms",
           "allreduces", "path_compute_ms",   "path_network_ms"};
    const auto& d = job.data_parallel;
    auto s = collective_setup_for(models::Catalog(), job.hw, job.switch_name, d.collective.setup, d.collective.network);
    if (s.ok())
      for (auto& m : utilisation_metrics(s.value()))
        out.push_back(std::move(m));
    break;
  }
  case JobSpec::Kind::INCAST:
    out = {"completion_ms", "first_ms", "goodput_gbps", "drops", "timeouts", "fast_retransmits", "peak_queue_bytes"};
    break;
  case JobSpec::Kind::ROCE:
    out = {"completion_ms", "first_ms",         "goodput_gbps", "peak_queue_bytes", "mean_queue_bytes",
           "pause_frames",  "longest_pause_us", "cnps",         "victim_gbps",      "victim_completion_ms",
           "window_gbps",   "algbw_gbps",       "busbw_gbps"};
    break;
  case JobSpec::Kind::PCIE_COPY:
    out = {"h2d_GBps", "d2h_GBps", "d2d_GBps"};
    if (!job.copies.empty() && job.copies[0].config.peer_gpu >= 0) out.push_back("p2p_GBps");
    break;
  case JobSpec::Kind::TRANSFER:
    out = {"latency_us", "first_latency_us", "bandwidth_GBps", "bandwidth_MBps"};
    if (job.has_baseline)
      out.insert(out.end(), {"baseline_latency_us", "speedup_vs_baseline", "latency_reduction_vs_baseline"});
    break;
  case JobSpec::Kind::TRAINING: {
    const auto& t = job.training;
    std::vector<std::string> per_run = {"step_ms",
                                        "images_per_second",
                                        "scaling_efficiency",
                                        "speedup_over_one_gpu",
                                        "network_ms",
                                        "gpu_busy_fraction",
                                        "path_compute_ms",
                                        "path_copy_ms",
                                        "path_registration_ms",
                                        "path_pcie_ms",
                                        "path_network_ms",
                                        "path_aggregate_apply_ms",
                                        "path_cpu_ms",
                                        "path_waiting_ms",
                                        "path_retry_ms",
                                        "incast_bursts_charged",
                                        "gpus"};
    if (!t.faults.empty())
      per_run.insert(per_run.end(), {"failed", "completed_steps", "packets_lost", "rc_retransmissions", "rnr_naks",
                                     "tcp_retransmissions", "retry_ms", "failed_step"});
    if (t.tcp_incast) per_run.insert(per_run.end(), {"incast_port_buffer_min", "incast_port_buffer_max"});
    for (const auto& m : per_run) {
      for (const auto& tr : t.transports)
        out.push_back(m + "." + tr);
      if (t.transports.size() == 1) out.push_back(m);
    }
    for (const auto& a : t.transports)
      for (const auto& b : t.transports)
        if (a != b) out.push_back("speedup." + a + "_over_" + b);
    if (t.one_gpu_reference) out.push_back("one_gpu_step_ms");
    out.push_back("compute_ms");
    break;
  }
  }
  return out;
}

Result<JobSpec> parse_job_text(const std::string& json_text, const std::string& file, const std::string& field)
{
  try {
    const json j = json_input::parse_text(json_text, file);
    return parse_job(Reader(j, file, field), "");
  } catch (const SpecError& e) {
    return e.error;
  } catch (const std::exception& e) {
    return Error::at(file, field, "a job object", e.what());
  }
}

} // namespace tp::frontend
