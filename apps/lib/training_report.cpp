// Training runs, reports and traces (see training_report.hpp).
#include "apps/lib/training_report.hpp"
#include "core/common/file_io.hpp"
#include "core/common/suggest.hpp"

#include "apps/lib/hw_resolve.hpp"
#include "core/common/isolated_run.hpp"
#include "core/transports/transport.hpp"
#include "models/catalog.hpp"
#include "models/tf_rpc_threads.hpp"
#include "models/workload/language_model.hpp"
#include "models/workload/workload.hpp"
#include "sim/job_estimate.hpp"
#include "traces/chrome_trace_writer.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>

namespace tp::frontend {

using json = nlohmann::json;

bool TrainingReport::all_ok() const
{
  return failed_runs(*this).empty();
}

std::vector<std::string> failed_runs(const TrainingReport& r)
{
  std::vector<std::string> out;
  for (const auto& run : r.runs) {
    if (!run.error.empty())
      out.push_back(run.transport + ": ERROR " + run.error);
    else if (const auto& f = run.result.failure)
      out.push_back(fmt::format("{}: {} in step {} ({} step(s) completed)", run.transport,
                                !f->stalled ? "failed"
                                : f->slow   ? "too slow (stall_timeout)"
                                            : "stalled",
                                f->step, run.result.step_seconds.size()));
  }
  return out;
}

double TrainingReport::scaling_efficiency(const sim::TrainingResult& r) const
{
  if (!reference || reference->images_per_second <= 0 || r.gpus <= 0) return 0;
  return r.images_per_second / (r.gpus * reference->images_per_second);
}

double TrainingReport::speedup_over_one_gpu(const sim::TrainingResult& r) const
{
  return reference && reference->images_per_second > 0 ? r.images_per_second / reference->images_per_second : 0;
}

namespace {

json breakdown_json(const sim::StepBreakdown& b)
{
  return {{"compute", b.compute}, {"copy", b.copy},       {"registration", b.registration},
          {"pcie", b.pcie},       {"network", b.network}, {"aggregate_apply", b.aggregate_apply},
          {"waiting", b.waiting}, {"retry", b.retry},     {"gpu_busy", b.gpu_busy},
          {"cpu", b.cpu}};
}

sim::StepBreakdown breakdown_from(const json& j)
{
  sim::StepBreakdown b;
  b.compute = j.at("compute");
  b.waiting = j.at("waiting");
  b.copy = j.at("copy");
  b.registration = j.at("registration");
  b.pcie = j.at("pcie");
  b.network = j.at("network");
  b.aggregate_apply = j.at("aggregate_apply");
  b.gpu_busy = j.at("gpu_busy");
  b.retry = j.value("retry", 0.0);
  b.cpu = j.at("cpu");
  return b;
}

json faults_json(const sim::TrainingResult& r)
{
  const auto& f = r.fault_stats;
  json j = {{"packets_lost", f.packets_lost},
            {"rc_retransmissions", f.rc_retransmissions},
            {"rc_timeouts", f.rc_timeouts},
            {"rnr_naks", f.rnr_naks},
            {"tcp_retransmissions", f.tcp_retransmissions},
            {"qps_failed", f.qps_failed},
            {"retry_seconds", f.retry_seconds},
            {"first_error", f.first_error},
            {"events", f.events}};
  if (r.failure) {
    const auto& x = *r.failure;
    j["failure"] = {{"step", x.step},
                    {"at", x.at},
                    {"stalled", x.stalled},
                    {"slow", x.slow},
                    {"task", x.task},
                    {"op_kind", x.op_kind ? training::to_string(*x.op_kind) : ""},
                    {"op", x.op},
                    {"transfer", x.transfer},
                    {"error", x.error},
                    {"original", x.original},
                    {"unfinished", x.unfinished}};
  }
  return j;
}

/// An op kind read back from the child's result (to_string's word); a word it does not know throws.
training::OpKind op_kind_from(const json& j)
{
  auto k = training::parse_op_kind(j.get<std::string>());
  if (!k.ok()) throw std::runtime_error(k.error().message());
  return k.value();
}

void faults_from(const json& j, sim::TrainingResult& r)
{
  r.faults_injected = true;
  auto& f = r.fault_stats;
  f.packets_lost = j.at("packets_lost");
  f.rc_retransmissions = j.at("rc_retransmissions");
  f.rc_timeouts = j.at("rc_timeouts");
  f.rnr_naks = j.at("rnr_naks");
  f.tcp_retransmissions = j.at("tcp_retransmissions");
  f.qps_failed = j.at("qps_failed");
  f.retry_seconds = j.at("retry_seconds");
  f.first_error = j.value("first_error", "");
  f.events = j.at("events").get<std::vector<std::string>>();
  if (j.contains("failure")) {
    const json& x = j.at("failure");
    sim::TrainingFailure t;
    t.step = x.at("step");
    t.at = x.at("at");
    t.stalled = x.at("stalled");
    t.slow = x.value("slow", false);
    t.task = x.at("task");
    if (x.at("op_kind") != "") t.op_kind = op_kind_from(x.at("op_kind"));
    t.op = x.at("op");
    t.transfer = x.at("transfer");
    t.error = x.at("error");
    t.original = x.at("original");
    t.unfinished = x.at("unfinished").get<std::vector<std::string>>();
    r.failure = t;
  }
}

json result_json(const sim::TrainingResult& r, bool with_events)
{
  json j = {{"transport", r.transport},
            {"gpus", r.gpus},
            {"batch", r.batch},
            {"step_seconds", r.step_seconds},
            {"step_time", r.step_time},
            {"images_per_second", r.images_per_second},
            {"breakdown", breakdown_json(r.breakdown)},
            {"remote_transfers_per_step", r.remote_transfers_per_step},
            {"remote_bytes_per_step", r.remote_bytes_per_step},
            {"ps_bytes", r.ps_bytes},
            {"wall_seconds", r.wall_seconds},
            {"simgrid_activities", r.simgrid_activities},
            {"short_comms", r.short_comms},
            {"simgrid_rounds", r.simgrid_rounds},
            {"timers_run_ahead", r.timers_run_ahead},
            {"incast_bursts_charged", r.incast_bursts_charged},
            {"broadcast_seconds", r.broadcast_seconds},
            {"negotiation_rounds", r.negotiation_rounds},
            {"collectives_run", r.collectives_run}};
  json pl = json::array();
  for (const auto& p : r.placement)
    pl.push_back({{"task", p.task}, {"process", p.process}, {"host", p.host}, {"gpus", p.gpus}});
  j["placement"] = pl;
  json cpu = json::array();
  for (const auto& c : r.cpu_use)
    cpu.push_back({{"task", c.process},
                   {"host", c.host},
                   {"rpc_threads", c.rpc_threads},
                   {"rpc_cpu_seconds", c.rpc_cpu_seconds},
                   {"rpc_waited_seconds", c.rpc_waited_seconds},
                   {"rpc_messages", c.rpc_messages},
                   {"work_cpu_seconds", c.work_cpu_seconds},
                   {"busy_pollers", c.busy_pollers}});
  j["cpu_use"] = cpu;
  if (r.faults_injected) j["faults"] = faults_json(r);
  if (r.analytical_shared_link_sizes > 0) j["analytical_shared_link_sizes"] = r.analytical_shared_link_sizes;
  if (r.analytical_bounded_sizes > 0) j["analytical_bounded_sizes"] = r.analytical_bounded_sizes;
  if (r.analytical_folded_sizes > 0) j["analytical_folded_sizes"] = r.analytical_folded_sizes;
  if (r.simulated_ranks > 0)
    j["symmetric_ranks"] = {{"simulated_ranks", r.simulated_ranks}, {"hosts", r.symmetric_hosts}};
  if (r.incast_port_buffer_max > 0 || !r.incast_buffer_switch.empty())
    j["incast_port_buffer"] = {
        {"min", r.incast_port_buffer_min},
        {"max", r.incast_port_buffer_max},
        {"switch", r.incast_buffer_switch.empty() ? json(nullptr) : json(r.incast_buffer_switch)}};
  if (with_events) {
    json ev = json::array();
    for (const auto& e : r.events)
      ev.push_back({e.name, training::to_string(e.kind), e.device, e.start, e.end, e.bytes});
    j["events"] = ev;
    j["records"] = json::parse(r.records.to_json());
    json cs = json::array();
    for (const auto& c : r.comms)
      cs.push_back({c.start, c.end, c.bytes, c.links});
    j["comms"] = cs;
    json ct = json::array();
    for (const auto& t : r.cpu_tracks)
      ct.push_back({{"task", t.process}, {"pool", t.pool}, {"threads", t.threads}, {"busy", t.busy}});
    j["cpu_tracks"] = ct;
  }
  return j;
}

sim::TrainingResult result_from(const json& j)
{
  sim::TrainingResult r;
  r.transport = j.at("transport");
  r.gpus = j.at("gpus");
  r.batch = j.at("batch");
  r.step_seconds = j.at("step_seconds").get<std::vector<double>>();
  r.step_time = j.at("step_time");
  r.images_per_second = j.at("images_per_second");
  r.breakdown = breakdown_from(j.at("breakdown"));
  r.remote_transfers_per_step = j.at("remote_transfers_per_step");
  r.remote_bytes_per_step = j.at("remote_bytes_per_step");
  r.ps_bytes = j.at("ps_bytes").get<std::vector<uint64_t>>();
  r.wall_seconds = j.at("wall_seconds");
  r.simgrid_activities = j.at("simgrid_activities");
  r.short_comms = j.value("short_comms", uint64_t(0));
  r.simgrid_rounds = j.value("simgrid_rounds", uint64_t(0));
  r.timers_run_ahead = j.value("timers_run_ahead", uint64_t(0));
  r.incast_bursts_charged = j.value("incast_bursts_charged", uint64_t(0));
  r.broadcast_seconds = j.at("broadcast_seconds");
  r.negotiation_rounds = j.at("negotiation_rounds");
  r.collectives_run = j.at("collectives_run");
  for (const auto& p : j.at("placement"))
    r.placement.push_back({p.at("task"), p.at("process"), p.at("host"), p.at("gpus").get<std::vector<int>>()});
  for (const auto& c : j.at("cpu_use"))
    r.cpu_use.push_back({c.at("task"), c.at("host"), c.at("rpc_threads"), c.at("rpc_cpu_seconds"),
                         c.at("rpc_waited_seconds"), c.at("rpc_messages"), c.at("work_cpu_seconds"),
                         c.value("busy_pollers", 0)});
  if (j.contains("faults")) faults_from(j.at("faults"), r);
  r.analytical_shared_link_sizes = j.value("analytical_shared_link_sizes", uint64_t(0));
  r.analytical_bounded_sizes = j.value("analytical_bounded_sizes", uint64_t(0));
  r.analytical_folded_sizes = j.value("analytical_folded_sizes", uint64_t(0));
  if (j.contains("symmetric_ranks")) {
    r.simulated_ranks = j.at("symmetric_ranks").at("simulated_ranks");
    r.symmetric_hosts = j.at("symmetric_ranks").at("hosts");
  }
  if (j.contains("incast_port_buffer")) {
    const auto& b = j.at("incast_port_buffer");
    r.incast_port_buffer_min = b.at("min");
    r.incast_port_buffer_max = b.at("max");
    if (!b.at("switch").is_null()) r.incast_buffer_switch = b.at("switch");
  }
  if (j.contains("events")) {
    for (const auto& e : j.at("events"))
      r.events.push_back({e[0], op_kind_from(e[1]), e[2], e[3], e[4], e[5]});
    for (const auto& x : j.at("records")) {
      transports::TransferRecord t;
      t.transport = x.at("transport");
      auto side = transports::parse_side(x.at("side").get<std::string>());
      if (!side.ok()) throw std::runtime_error(side.error().message());
      t.side = side.value();
      t.step = x.at("step");
      t.key = x.at("key");
      t.local_task = x.at("local_task");
      t.peer_task = x.at("peer_task");
      t.bytes = x.at("bytes");
      t.src_location = x.at("src_location");
      t.dst_location = x.at("dst_location");
      t.ok = x.at("ok");
      t.error = x.at("error");
      t.t_start = x.at("t_start");
      t.t_end = x.at("t_end");
      for (size_t p = 0; p < size_t(transports::Phase::COUNT); ++p)
        t.seconds[p] = x.at("seconds").at(transports::to_string(transports::Phase(p)));
      t.copies = x.at("copies");
      t.registrations = x.at("registrations");
      r.records.add(t);
    }
    if (j.contains("comms"))
      for (const auto& c : j.at("comms"))
        r.comms.push_back({c[0], c[1], c[2], c[3].get<std::vector<std::string>>()});
    if (j.contains("cpu_tracks"))
      for (const auto& t : j.at("cpu_tracks"))
        r.cpu_tracks.push_back(
            {t.at("task"), t.at("pool"), t.at("threads"), t.at("busy").get<std::vector<std::pair<double, int>>>()});
  }
  return r;
}

/// Run one job in a child process; the result comes back as JSON.
Result<sim::TrainingResult> isolated(const models::ClusterProfile& cl, const training::TrainingModel& m,
                                     const sim::TrainingJob& job, const ProgressListener& progress = {})
{
  auto child = run_isolated(
      [&]() -> Result<std::string> {
        auto r = sim::run_training_job(cl, m, job);
        if (!r.ok()) return r.error();
        return result_json(r.value(), job.collect_events).dump();
      },
      0, progress);
  if (!child.ok()) return child.error();
  try {
    return result_from(json::parse(child.value()));
  } catch (const std::exception& e) {
    return Error::msg(std::string("malformed training result from the child process: ") + e.what());
  }
}

/// The cluster of --hw for the spec (enough hosts when it names a single host profile), with the spec's TCP and NIC
/// profiles in place of the hosts' own when given.
Result<models::ClusterProfile> training_cluster(const models::Catalog& cat, const TrainingSpec& spec)
{
  // Hosts needed when --hw is a single host profile.
  auto kind = cat.kind_of(spec.hw);
  if (!kind.ok()) return kind.error();
  if (*kind == "nic")
    return Error::at(spec.hw, "hw", "a host or cluster profile (training needs GPUs)", "a NIC profile");
  int min_hosts = 2;
  if (*kind == "host") {
    auto h = cat.host(spec.hw);
    if (!h.ok()) return h.error();
    const int g = std::max<int>(1, int(h->gpus.size()));
    if (spec.mode == training::SyncMode::PARAMETER_SERVER && spec.workers > 0)
      min_hosts = spec.ps_own_hosts ? spec.workers + std::max(spec.ps_tasks, 0)
                                    : std::max(spec.workers, spec.ps_tasks > 0 ? spec.ps_tasks : 0);
    if (spec.mode == training::SyncMode::ALLREDUCE && spec.workers > 0) min_hosts = (spec.workers + g - 1) / g;
  }
  auto cluster = cluster_for(cat, spec.hw, std::max(min_hosts, 1), spec.switch_name);
  if (!cluster.ok()) return cluster.error();
  if (!spec.fabric.empty()) {
    auto tcp = cat.tcp(spec.fabric);
    if (!tcp.ok()) return tcp.error();
    for (auto& g : cluster->groups)
      g.host.tcp = tcp.value();
  }
  if (!spec.nic.empty()) {
    auto nic = cat.nic(spec.nic);
    if (!nic.ok()) return nic.error();
    for (auto& g : cluster->groups)
      for (auto& n : g.host.nics)
        n.nic = nic.value();
  }
  return cluster;
}

/// The model the spec trains (a real model's variables with the compute given, a synthetic one, or a workload of the
/// library for `rep.gpu`), and the report's provenance, compute seconds and model bytes.
Result<training::TrainingModel> training_model(const TrainingSpec& spec, TrainingReport& rep)
{
  training::TrainingModel model;
  if (spec.model == "synthetic" && !spec.synthetic_variables_of.empty()) {
    // A real model's variable list with the compute given: each layer's share of compute_ms follows its forward
    // FLOPs (evenly where the model has none tracked).
    auto a = models::language_model(spec.synthetic_variables_of);
    if (!a.ok()) return a.error();
    if (spec.synthetic_compute_ms < 0)
      return Error::at("", "compute_ms", "a time >= 0", std::to_string(spec.synthetic_compute_ms));
    model.name = a->name;
    model.batch = spec.batch;
    const double flops = a->forward_flops();
    for (const auto& l : a->layers) {
      training::ModelLayer ml;
      ml.name = l.name;
      const double share = flops > 0 ? l.forward_flops / flops : 1.0 / double(a->layers.size());
      ml.forward_seconds = spec.synthetic_compute_ms * 1e-3 / 3 * share;
      ml.backward_seconds = 2 * ml.forward_seconds;
      for (const auto& v : l.variables)
        ml.variables.push_back({l.name + "/" + v.name, v.bytes(), v.trainable});
      model.layers.push_back(ml);
    }
    rep.provenance =
        fmt::format("synthetic: the variables of {} ({}: {} parameters in {} tensors), {:.1f} ms of "
                    "compute per step as given, split over its layers by forward FLOPs",
                    a->name, a->description, a->parameters(), a->variable_count(), spec.synthetic_compute_ms);
    rep.compute_seconds = model.compute_seconds();
    rep.model_bytes = model.bytes();
  } else if (spec.model == "synthetic") {
    if (spec.synthetic_parameters <= 0 || spec.synthetic_layers <= 0 || spec.synthetic_compute_ms < 0)
      return Error::at("", "model", "synthetic with parameters > 0, layers > 0 and compute_ms >= 0",
                       std::to_string(spec.synthetic_parameters) + " parameters, " +
                           std::to_string(spec.synthetic_layers) + " layers");
    model.name = "synthetic";
    model.batch = spec.batch;
    const int64_t per = spec.synthetic_parameters / spec.synthetic_layers;
    for (int l = 0; l < spec.synthetic_layers; ++l) {
      training::ModelLayer ml;
      ml.name = "layer" + std::to_string(l);
      ml.forward_seconds = spec.synthetic_compute_ms * 1e-3 / 3 / spec.synthetic_layers;
      ml.backward_seconds = 2 * ml.forward_seconds;
      const int64_t n = l + 1 == spec.synthetic_layers ? spec.synthetic_parameters - per * l : per;
      ml.variables.push_back({ml.name + "/w", uint64_t(n) * 4, true});
      model.layers.push_back(ml);
    }
    rep.provenance = fmt::format("synthetic: {} parameters in {} layers, {:.1f} ms of compute per step as given",
                                 spec.synthetic_parameters, spec.synthetic_layers, spec.synthetic_compute_ms);
    rep.compute_seconds = model.compute_seconds();
    rep.model_bytes = model.bytes();
  } else {
    models::WorkloadLibrary lib;
    auto wl = lib.make(spec.model, rep.gpu, spec.batch, spec.precision);
    if (!wl.ok()) return wl.error();
    rep.provenance = wl->provenance;
    rep.compute_seconds = wl->compute_seconds();
    rep.model_bytes = wl->parameter_bytes();
    model = models::to_training_model(wl.value());
  }
  return model;
}

/// The training job of the spec, without a transport: its options and its layout (parameter-server or allreduce) on
/// `hosts` hosts like `host0`.
Result<sim::TrainingJob> training_job(const TrainingSpec& spec, const models::HostProfile& host0, int hosts)
{
  sim::TrainingJob job;
  job.strategy = spec.strategy;
  job.options = spec.transport_options;
  auto threads = models::tf_rpc_threading(spec.tf_version);
  if (!threads.ok()) return threads.error();
  job.rpc_threads = threads.value();
  job.steps = spec.steps;
  job.warmup = 1;
  auto& L = job.layout;
  if (spec.mode == training::SyncMode::PARAMETER_SERVER) {
    L.mode = sim::TrainingLayout::Mode::PARAMETER_SERVER;
    L.workers = spec.workers > 0 ? spec.workers : hosts;
    L.gpus_per_worker = spec.gpus_per_worker > 0 ? spec.gpus_per_worker : int(host0.gpus.size());
    L.ps_tasks = spec.ps_tasks >= 0 ? spec.ps_tasks : L.workers;
    if (spec.fetch != "per_tower" && spec.fetch != "per_worker")
      return Error::at("", "fetch", "per_tower or per_worker", "\"" + spec.fetch + "\"");
    L.fetch_per_worker = spec.fetch == "per_worker";
    if (spec.ps_own_hosts) {
      if (L.workers + L.ps_tasks > hosts)
        return Error::at("", "ps_own_hosts",
                         std::to_string(L.workers + L.ps_tasks) + " hosts (workers, then the PS tasks)",
                         std::to_string(hosts));
      for (int w = 0; w < L.workers; ++w)
        L.worker_hosts.push_back(w);
      for (int s = 0; s < L.ps_tasks; ++s)
        L.ps_hosts.push_back(L.workers + s);
    }
  } else {
    L.mode = sim::TrainingLayout::Mode::ALLREDUCE;
    const int rph = spec.ranks_per_host > 0 ? spec.ranks_per_host : int(host0.gpus.size());
    L.workers = spec.workers > 0 ? spec.workers : hosts * rph;
    L.ranks_per_host = rph;
    L.gpus_per_worker = 1;
    L.ps_tasks = 0;
    job.collectives = spec.collectives;
    job.initial_broadcast = spec.initial_broadcast;
    L.allreduce_on_host = spec.allreduce_on_host;
    if (spec.collective_mode == sim::FabricMode::FLOW)
      return Error::at("", "collective_mode", "protocol or analytical", "\"flow\"");
    job.collective_mode = spec.collective_mode;
    job.symmetric_ranks = spec.symmetric_ranks;
    job.roce_fabric = spec.roce_fabric; // in the estimate too (the roce model's runs)
  }
  return job;
}

/// One transport's run of `job`: what the spec adds to it there (faults, stall timeout, the network models).
sim::TrainingJob transport_run(const TrainingSpec& spec, const sim::TrainingJob& job, const std::string& transport,
                               bool collect_events)
{
  sim::TrainingJob j = job;
  j.transport = transport;
  j.collect_events = collect_events;
  j.faults = spec.faults;
  j.stall_timeout = spec.stall_timeout;
  j.tcp_incast = spec.tcp_incast;
  j.tcp_port_buffer = spec.tcp_port_buffer;
  j.roce_fabric = spec.roce_fabric;
  return j;
}

/// The 1-GPU reference run: its one-host cluster and its job.
struct OneGpuReference {
  models::ClusterProfile cluster;
  sim::TrainingJob job;
};

/// The 1-GPU reference: one GPU of the first host, its variables on its CPU. Without a reference in the spec: an empty
/// cluster and `job` as it is.
Result<OneGpuReference> one_gpu_reference(const models::Catalog& cat, const TrainingSpec& spec,
                                          const models::HostProfile& host0, const sim::TrainingJob& job)
{
  OneGpuReference out{models::ClusterProfile{}, job};
  models::ClusterProfile& one = out.cluster;
  sim::TrainingJob& ref = out.job;
  if (spec.one_gpu_reference) {
    auto sw = cat.network_switch("back-to-back");
    if (!sw.ok()) return sw.error();
    one = models::make_cluster(host0, 1, sw.value(), "node");
    ref.transport = "grpc";
    ref.collect_events = false;
    ref.symmetric_ranks = false;
    ref.layout = sim::TrainingLayout{};
    ref.layout.workers = 1;
    ref.layout.gpus_per_worker = 1;
    ref.layout.ps_tasks = 0;
    if (spec.mode == training::SyncMode::ALLREDUCE) {
      // One rank: the variables stay on its GPU and the ring has nothing to do.
      ref.layout.mode = sim::TrainingLayout::Mode::ALLREDUCE;
      ref.layout.ranks_per_host = 1;
    }
  }
  return out;
}

/// The estimate of all the runs together and of each run (the transports', then the reference's).
struct TrainingEstimate {
  JobEstimate need;
  std::vector<double> run_seconds;
};

/// Estimate every run of the spec: each transport's on `cluster`, then the 1-GPU reference's.
TrainingEstimate estimate_training_runs(const TrainingSpec& spec, const models::ClusterProfile& cluster,
                                        const training::TrainingModel& model, const sim::TrainingJob& job,
                                        const OneGpuReference& reference)
{
  TrainingEstimate out;
  JobEstimate& need = out.need;
  need.job = "training (" + std::to_string(spec.transports.size()) + " transport(s)" +
             (spec.one_gpu_reference ? " and the 1-GPU reference)" : ")");
  std::vector<double>& run_seconds = out.run_seconds;
  for (const auto& t : spec.transports) {
    sim::TrainingJob j = job;
    j.transport = t;
    auto e = sim::estimate_training(cluster, model, j);
    run_seconds.push_back(e.seconds);
    need.then(e);
  }
  if (spec.one_gpu_reference) {
    auto e = sim::estimate_training(reference.cluster, model, reference.job);
    run_seconds.push_back(e.seconds);
    need.then(e);
  }
  return out;
}

} // namespace

Result<TrainingReport> run_training(const TrainingSpec& spec, const TrainingProgress& progress)
{
  transports::register_builtin_transports();
  models::Catalog cat;
  TrainingReport rep;
  rep.spec = spec;
  for (const auto& t : spec.transports)
    if (!transports::find_transport(t))
      return Error::at("", "transport", one_of_names(t, transports::transport_names()),
                       unknown_name(t, transports::transport_names()));
  auto cluster = training_cluster(cat, spec);
  if (!cluster.ok()) return cluster.error();
  const auto& host0 = cluster->host(0);
  if (host0.gpus.empty()) return Error::at(host0.file, "gpus", "a host with GPUs for training", "none");
  rep.gpu = host0.gpus[0].gpu.name;
  const int hosts = int(cluster->host_count());
  rep.cluster = fmt::format("{} hosts of {} ({} x {}, {} NIC)", hosts, host0.name, host0.gpus.size(), rep.gpu,
                            host0.nics.empty() ? "no" : host0.nics[0].nic.name);

  auto built_model = training_model(spec, rep);
  if (!built_model.ok()) return built_model.error();
  const training::TrainingModel& model = built_model.value();
  auto built_job = training_job(spec, host0, hosts);
  if (!built_job.ok()) return built_job.error();
  const sim::TrainingJob& job = built_job.value();
  // What breaks the symmetry is refused before any run (each transport's job is alike in what it checks).
  if (job.symmetric_ranks)
    if (auto c = sim::symmetric_ranks_job(cluster.value(), transport_run(spec, job, job.transport, false)); !c.ok())
      return c.error();
  auto reference = one_gpu_reference(cat, spec, host0, job);
  if (!reference.ok()) return reference.error();
  const models::ClusterProfile& one = reference->cluster;
  const sim::TrainingJob& ref = reference->job;
  // Every run is a process of its own, one after the other: refuse the whole before the first starts.
  const TrainingEstimate estimate = estimate_training_runs(spec, cluster.value(), model, job, reference.value());
  const JobEstimate& need = estimate.need;
  const std::vector<double>& run_seconds = estimate.run_seconds;
  if (auto st = check_budget(need, "run fewer workers, steps or transports"); !st.ok()) return st.error();
  const size_t runs = run_seconds.size();
  double done_seconds = 0;
  auto run_progress = [&](size_t k, const std::string& name) -> ProgressListener {
    if (!progress) return {};
    const std::string what = name + (runs > 1 ? " (" + std::to_string(k + 1) + "/" + std::to_string(runs) + ")" : "");
    // An estimate of 0 s (nothing to run) must not make the fractions NaN.
    const double whole = need.seconds > 0 ? need.seconds : 1;
    progress(done_seconds / whole, what, need.seconds);
    return [&, k, what, whole](double done, double total) {
      const double f = total > 0 ? done / total : 0;
      progress((done_seconds + f * run_seconds[k]) / whole,
               what + ": step " + std::to_string(int(done)) + "/" + std::to_string(int(total)), need.seconds);
    };
  };

  bool events_taken = false;
  for (size_t k = 0; k < spec.transports.size(); ++k) {
    const auto& t = spec.transports[k];
    const sim::TrainingJob j = transport_run(spec, job, t, spec.collect_events && !events_taken);
    auto r = isolated(cluster.value(), model, j, run_progress(k, t));
    done_seconds += run_seconds[k];
    TrainingRun run;
    run.transport = t;
    if (r.ok()) {
      run.result = r.value();
      events_taken |= j.collect_events;
    } else
      run.error = r.error().message();
    rep.runs.push_back(std::move(run));
  }
  if (spec.one_gpu_reference) {
    auto r = isolated(one, model, ref, run_progress(runs - 1, "1-GPU reference"));
    if (!r.ok()) return Error::msg("1-GPU reference run: " + r.error().message());
    rep.reference = r.value();
  }
  return rep;
}

std::map<std::string, double> training_metrics(const TrainingReport& r)
{
  std::map<std::string, double> m;
  std::vector<const TrainingRun*> ok;
  for (const auto& run : r.runs)
    if (run.error.empty()) ok.push_back(&run);
  for (const auto* run : ok) {
    const auto& x = run->result;
    if (x.faults_injected) {
      const auto& f = x.fault_stats;
      std::map<std::string, double> one = {
          {"failed", x.failure ? 1.0 : 0.0},        {"completed_steps", double(x.step_seconds.size())},
          {"packets_lost", double(f.packets_lost)}, {"rc_retransmissions", double(f.rc_retransmissions)},
          {"rnr_naks", double(f.rnr_naks)},         {"tcp_retransmissions", double(f.tcp_retransmissions)},
          {"retry_ms", f.retry_seconds * 1e3}};
      if (x.failure) one["failed_step"] = x.failure->step;
      for (const auto& [k, v] : one) {
        m[k + "." + run->transport] = v;
        if (r.runs.size() == 1) m[k] = v;
      }
      if (x.failure && x.step_time <= 0) continue; // no measured step: no step metrics
    }
    std::map<std::string, double> one = {{"step_ms", x.step_time * 1e3},
                                         {"images_per_second", x.images_per_second},
                                         {"scaling_efficiency", r.scaling_efficiency(x)},
                                         {"speedup_over_one_gpu", r.speedup_over_one_gpu(x)},
                                         {"network_ms", x.breakdown.network * 1e3},
                                         {"gpu_busy_fraction", x.breakdown.gpu_busy / x.step_time},
                                         // the step's critical path, part by part (they add up to step_ms)
                                         {"path_compute_ms", x.breakdown.compute * 1e3},
                                         {"path_copy_ms", x.breakdown.copy * 1e3},
                                         {"path_registration_ms", x.breakdown.registration * 1e3},
                                         {"path_pcie_ms", x.breakdown.pcie * 1e3},
                                         {"path_network_ms", x.breakdown.network * 1e3},
                                         {"path_aggregate_apply_ms", x.breakdown.aggregate_apply * 1e3},
                                         {"path_cpu_ms", x.breakdown.cpu * 1e3},
                                         {"path_waiting_ms", x.breakdown.waiting * 1e3},
                                         {"path_retry_ms", x.breakdown.retry * 1e3},
                                         {"incast_bursts_charged", double(x.incast_bursts_charged)},
                                         {"gpus", double(x.gpus)}};
    if (r.spec.tcp_incast) { // the port buffers the charged bursts' model runs had
      one["incast_port_buffer_min"] = double(x.incast_port_buffer_min);
      one["incast_port_buffer_max"] = double(x.incast_port_buffer_max);
    }
    for (const auto& [k, v] : one) {
      m[k + "." + run->transport] = v;
      if (r.runs.size() == 1) m[k] = v;
    }
  }
  for (const auto* a : ok)
    for (const auto* b : ok)
      if (a != b && a->result.step_time > 0 && b->result.step_time > 0)
        m["speedup." + a->transport + "_over_" + b->transport] = b->result.step_time / a->result.step_time;
  if (r.reference) m["one_gpu_step_ms"] = r.reference->step_time * 1e3;
  m["compute_ms"] = r.compute_seconds * 1e3;
  return m;
}

namespace {

/// "/job:ps/replica:0/task:3" -> "ps3".
std::string short_task(const std::string& task)
{
  const auto j = task.find("/job:");
  if (j == std::string::npos) return task;
  return task.substr(j + 5, task.find('/', j + 5) - j - 5) + task.substr(task.rfind(':') + 1);
}

/// Per run, the tasks whose CPU ran most per measured step: their gRPC threads (CPU, cores busy on average, time
/// their messages waited for a thread) and their other CPU work. Empty when no run used any.
std::string cpu_use_table(const TrainingReport& r)
{
  constexpr size_t SHOWN = 4;
  std::string o;
  bool polled = false;
  for (const auto& run : r.runs) {
    const auto& x = run.result;
    if (!run.error.empty() || x.step_time <= 0) continue;
    std::vector<jobs::ProcessCpuUse> cpu = x.cpu_use;
    // A busy poller runs the whole step.
    auto total = [&](const jobs::ProcessCpuUse& c) {
      return c.rpc_cpu_seconds + c.work_cpu_seconds + c.busy_pollers * x.step_time;
    };
    std::stable_sort(cpu.begin(), cpu.end(), [&](const auto& a, const auto& b) { return total(a) > total(b); });
    if (cpu.empty() || total(cpu[0]) <= 0) continue;
    // The polling column only where a task of the run busy-polls.
    const bool polling = std::any_of(cpu.begin(), cpu.end(), [](const auto& c) { return c.busy_pollers > 0; });
    polled = polled || polling;
    o += fmt::format(
        "\n{}: CPU per task and step (the busiest first)\n{:<14} {:>7} {:>9} {:>12} {:>10} {:>14} {:>13}{}\n",
        run.transport, "task", "threads", "messages", "gRPC CPU ms", "cores busy", "mean wait ms", "other CPU ms",
        polling ? fmt::format(" {:>8}", "polling") : "");
    for (size_t k = 0; k < cpu.size() && k < SHOWN; ++k) {
      const auto& c = cpu[k];
      o += fmt::format("{:<14} {:>7} {:>9.0f} {:>12.1f} {:>10.2f} {:>14.3f} {:>13.1f}{}\n", short_task(c.process),
                       c.rpc_threads, c.rpc_messages, c.rpc_cpu_seconds * 1e3, c.rpc_cpu_seconds / x.step_time,
                       c.rpc_messages > 0 ? c.rpc_waited_seconds / c.rpc_messages * 1e3 : 0.0, c.work_cpu_seconds * 1e3,
                       polling ? fmt::format(" {:>8}", c.busy_pollers) : "");
    }
    if (cpu.size() > SHOWN) o += fmt::format("... and {} more tasks (--json lists every one)\n", cpu.size() - SHOWN);
  }
  if (!o.empty())
    o += "gRPC CPU: what its gRPC threads ran for its messages (per byte and per message); cores busy: that CPU over "
         "the step; mean wait: how long a message queued for a thread; other CPU: copies, (de)serialization, sums and "
         "updates\n";
  if (polled)
    o += "polling: threads that busy-poll, each running on a core of its socket all the step (a fair share of them "
         "where they are short; TF contrib MPI's MPI thread, GDR's server loop, AR-gRPC's poller)\n";
  return o;
}

} // namespace

std::string training_table(const TrainingReport& r)
{
  std::string o;
  const auto& s = r.spec;
  o += fmt::format("Training {} (batch {} per GPU, {:.1f} MB of variables) on {}, {}\n", s.model, s.batch,
                   r.model_bytes * 1e-6, r.cluster,
                   s.mode == training::SyncMode::PARAMETER_SERVER ? "parameter servers, variables fetched " + s.fetch
                                                                  : std::string("ring allreduce"));
  o += fmt::format("compute per GPU per step: {:.1f} ms ({})\n", r.compute_seconds * 1e3, r.provenance);
  const bool uses_grpc = s.mode == training::SyncMode::PARAMETER_SERVER ||
                         std::find(s.transports.begin(), s.transports.end(), "grpc") != s.transports.end();
  if (auto t = models::tf_rpc_threading(s.tf_version); t.ok() && uses_grpc)
    o += fmt::format("gRPC threads per process: {} server, {} client (TensorFlow {}{})\n", t->server_threads,
                     t->client_threads, t->version, s.tf_version.empty() ? ", the default" : "");
  if (s.mode == training::SyncMode::ALLREDUCE) {
    const bool library_defaults =
        s.collectives.coordinator == collectives::library_defaults(s.library).coordinator &&
        s.collectives.tick_seconds == collectives::library_defaults(s.library).tick_seconds &&
        s.collectives.fusion_threshold == collectives::library_defaults(s.library).fusion_threshold &&
        s.collectives.response_cache == collectives::library_defaults(s.library).response_cache &&
        s.collectives.batched_copies == collectives::library_defaults(s.library).batched_copies;
    o += fmt::format("allreduce library {} ({})\n", collectives::describe(s.library, s.collectives),
                     library_defaults ? "its defaults" : "changed from its defaults by the job");
  }
  if (s.roce_fabric)
    o += fmt::format("RoCE fabric (network model roce): {} leaves, uplinks {:.4g}:1, {}, PFC {}, ECN {}, DCQCN {}\n",
                     s.roce_fabric->leaves, s.roce_fabric->oversubscription,
                     s.roce_fabric->shared_pool > 0 ? models::roce_buffer_text(*s.roce_fabric)
                     : s.roce_fabric->buffer == models::roce_hpcc_defaults(s.roce_fabric->rate).buffer
                         ? std::string("buffer HPCC's 16 MB per 50 Gb/s of the ranks' NIC")
                         : "buffer " + std::to_string(s.roce_fabric->buffer) + " bytes",
                     s.roce_fabric->pfc.enabled ? "on" : "off", s.roce_fabric->ecn.enabled ? "on" : "off",
                     s.roce_fabric->dcqcn.enabled ? "on" : "off");
  if (r.reference)
    o += fmt::format("1-GPU reference ({}): step {:.1f} ms, {:.1f} images/s\n",
                     s.mode == training::SyncMode::PARAMETER_SERVER ? "variables on the host CPU"
                                                                    : "variables on the GPU",
                     r.reference->step_time * 1e3, r.reference->images_per_second);
  o += "\n";
  // An extra critical-path column: waiting for resends (faults, incast losses) or on congestion (roce).
  bool faults = s.tcp_incast || s.roce_fabric.has_value();
  for (const auto& run : r.runs)
    faults |= run.error.empty() && run.result.faults_injected;
  o += fmt::format("{:<10} {:>5} {:>9} {:>9} {:>7} {:>7} {:>6} | critical path, ms: {:>8} {:>6} {:>6} {:>6} {:>8} "
                   "{:>7} {:>7} {:>7}{}\n",
                   "transport", "GPUs", "step[ms]", "images/s", "vs 1GPU", "scaling", "GPU%", "compute", "copy", "reg",
                   "pcie", "network", "cpu", "ps/agg", "waiting", faults ? fmt::format(" {:>7}", "retry") : "");
  for (const auto& run : r.runs) {
    if (!run.error.empty()) {
      o += fmt::format("{:<10} ERROR {}\n", run.transport, run.error);
      continue;
    }
    const auto& x = run.result;
    const auto& b = x.breakdown;
    if (x.failure && x.step_time <= 0) {
      o += fmt::format("{:<10} {:>5} FAILED in step {} (no measured step completed)\n", run.transport, x.gpus,
                       x.failure->step);
      continue;
    }
    o += fmt::format(
        "{:<10} {:>5} {:>9.1f} {:>9.1f} {:>7.2f} {:>6.1f}% {:>5.0f}% | {:>27.1f} {:>6.1f} {:>6.1f} {:>6.1f} "
        "{:>8.1f} {:>7.1f} {:>7.1f} {:>7.1f}{}\n",
        run.transport, x.gpus, x.step_time * 1e3, x.images_per_second, r.speedup_over_one_gpu(x),
        r.scaling_efficiency(x) * 100, 100 * b.gpu_busy / x.step_time, b.compute * 1e3, b.copy * 1e3,
        b.registration * 1e3, b.pcie * 1e3, b.network * 1e3, b.cpu * 1e3, b.aggregate_apply * 1e3, b.waiting * 1e3,
        faults ? fmt::format(" {:>7.1f}", b.retry * 1e3) : "");
    if (x.collectives_run > 0 || x.broadcast_seconds > 0)
      o += fmt::format("{:<10} rank 0: {} ring allreduces in {} coordinator rounds over {} steps; initial broadcast "
                       "{:.1f} ms\n",
                       "", x.collectives_run, x.negotiation_rounds, x.step_seconds.size(), x.broadcast_seconds * 1e3);
  }
  for (const auto& run : r.runs)
    if (run.error.empty() && run.result.simulated_ranks > 0)
      o +=
          fmt::format("\n{}: symmetric ranks: {} of the {} ranks simulated ({} of {} identical hosts; every other host "
                      "taken to run as they do, each ring timed as the {} ranks', rank 0's coordinator working on "
                      "every rank's requests); within about 1 % of every rank simulated where measured, more where "
                      "Horovod's cycles fuse differently (docs/model.md, \"Symmetric ranks\")\n",
                      run.transport, run.result.simulated_ranks, run.result.gpus, sim::SYMMETRIC_SIMULATED_HOSTS,
                      run.result.symmetric_hosts, run.result.gpus);
  for (const auto& run : r.runs) {
    if (!run.error.empty()) continue;
    if (run.result.analytical_shared_link_sizes > 0)
      o += fmt::format(
          "\n{}: the analytical rings of {} tensor size(s) ran on routes that share links, one message "
          "after the other: a bandwidth-bound ring can take up to 1.8x the flow model's time (docs/model.md, "
          "\"Fabric modes\"; --collective-mode protocol moves them through the transport){}\n",
          run.transport, run.result.analytical_shared_link_sizes,
          run.result.analytical_folded_sizes > 0
              ? fmt::format("; {} of them timed on the first two hosts' ranks, which every host's routes repeat "
                            "(docs/model.md, \"Folded rings\")",
                            run.result.analytical_folded_sizes)
              : std::string());
    if (run.result.analytical_bounded_sizes > 0)
      o += fmt::format("\n{}: the analytical rings of {} tensor size(s) share links but are latency-bound: each was "
                       "timed by its recurrence with every link free, which sharing can lengthen by at most 1e-3 of "
                       "it (docs/model.md, \"Steady steps counted\")\n",
                       run.transport, run.result.analytical_bounded_sizes);
  }
  o += cpu_use_table(r);
  // tcp-incast: the port buffers the charged bursts met (fixed, or the switch's dynamic-threshold share).
  for (const auto& run : r.runs) {
    const auto& x = run.result;
    if (!run.error.empty() || !s.tcp_incast) continue;
    const std::string from = x.incast_buffer_switch.empty()
                                 ? std::string("port_buffer")
                                 : "the dynamic-threshold share of switch " + x.incast_buffer_switch + "'s buffer";
    if (x.incast_port_buffer_max == 0)
      o += fmt::format("\n{}: tcp-incast charged no burst (no receiver met two senders at once)\n", run.transport);
    else if (x.incast_port_buffer_min == x.incast_port_buffer_max)
      o += fmt::format("\n{}: tcp-incast ports of {} bytes ({}); {} bursts charged\n", run.transport,
                       x.incast_port_buffer_max, from, x.incast_bursts_charged);
    else
      o +=
          fmt::format("\n{}: tcp-incast ports of {} to {} bytes ({}, as fewer or more ports fill at once); {} "
                      "bursts charged\n",
                      run.transport, x.incast_port_buffer_min, x.incast_port_buffer_max, from, x.incast_bursts_charged);
  }
  // Faults: what they cost and, for a run that failed, where and how.
  for (const auto& run : r.runs) {
    if (!run.error.empty() || !run.result.faults_injected) continue;
    const auto& x = run.result;
    const auto& f = x.fault_stats;
    o += fmt::format("\n{} with faults: {} packets lost, {} RC retransmissions ({} after a time-out), {} RNR NAKs, {} "
                     "TCP retransmissions, {} QPs failed; {:.3f} ms waiting for resends in all, {:.3f} ms of it on "
                     "the critical path per measured step\n",
                     run.transport, f.packets_lost, f.rc_retransmissions, f.rc_timeouts, f.rnr_naks,
                     f.tcp_retransmissions, f.qps_failed, f.retry_seconds * 1e3, x.breakdown.retry * 1e3);
    for (const auto& e : f.events)
      o += "  " + e + "\n";
    if (x.failure) {
      const auto& y = *x.failure;
      if (y.stalled) {
        o +=
            fmt::format("  {} in step {} after {:.3f} s: {}\n", y.slow ? "TOO SLOW" : "STALLED", y.step, y.at, y.error);
        for (const auto& t : y.unfinished)
          o += "    never finished: " + t + "\n";
      } else {
        o += fmt::format("  FAILED in step {} at {:.6f} s into the step: task {}{}\n", y.step, y.at, y.task,
                         !y.op_kind ? "" : ", " + std::string(training::to_string(*y.op_kind)) + " " + y.op);
        if (!y.transfer.empty()) o += "    transfer: " + y.transfer + "\n";
        o += "    tensorpath reports: " + y.error + "\n";
      }
      o += "    the original " + run.transport + " code: " + y.original + "\n";
      o += fmt::format("    steps completed before: {}\n", x.step_seconds.size());
    }
  }
  // Ratios between transports (step-time speed-ups), first transport as the baseline.
  if (r.runs.size() > 1 && r.runs[0].error.empty() && r.runs[0].result.step_time > 0) {
    o += "\nspeed-up over " + r.runs[0].transport + ":";
    for (size_t i = 1; i < r.runs.size(); ++i)
      if (r.runs[i].error.empty() && r.runs[i].result.step_time > 0)
        o += fmt::format(" {} {:.2f}x", r.runs[i].transport, r.runs[0].result.step_time / r.runs[i].result.step_time);
    o += "\n";
  }
  if (const auto failed = failed_runs(r); !failed.empty()) {
    o += fmt::format("\n{} of {} transport run(s) FAILED:\n", failed.size(), r.runs.size());
    for (const auto& f : failed)
      o += "  " + f + "\n";
  }
  o += "\ncritical path: the chain of ops that set the step time, split by what ran on it (it adds up to the step;\n"
       "cpu: transfers waiting for the gRPC threads of either end);\n"
       "GPU%: mean GPU kernel time over the step time; scaling: images/s over GPUs x the 1-GPU images/s.\n";
  return o;
}

std::string training_json(const TrainingReport& r)
{
  json j;
  j["model"] = r.spec.model;
  j["batch"] = r.spec.batch;
  j["mode"] = training::to_string(r.spec.mode);
  if (r.spec.mode == training::SyncMode::ALLREDUCE)
    j["allreduce"] = {
        {"library", collectives::to_string(r.spec.library)},   {"coordinator", r.spec.collectives.coordinator},
        {"tick_ms", r.spec.collectives.tick_seconds * 1e3},    {"fusion_bytes", r.spec.collectives.fusion_threshold},
        {"response_cache", r.spec.collectives.response_cache}, {"batched_copies", r.spec.collectives.batched_copies}};
  j["cluster"] = r.cluster;
  j["gpu"] = r.gpu;
  j["compute_seconds"] = r.compute_seconds;
  j["provenance"] = r.provenance;
  j["model_bytes"] = r.model_bytes;
  if (r.reference) j["reference"] = result_json(*r.reference, false);
  j["runs"] = json::array();
  for (const auto& run : r.runs) {
    if (!run.error.empty()) {
      j["runs"].push_back({{"transport", run.transport}, {"error", run.error}});
      continue;
    }
    json x = result_json(run.result, false);
    x["scaling_efficiency"] = r.scaling_efficiency(run.result);
    x["speedup_over_one_gpu"] = r.speedup_over_one_gpu(run.result);
    j["runs"].push_back(x);
  }
  return j.dump(2);
}

std::string chrome_trace(const sim::TrainingResult& r)
{
  // Processes = hosts; threads = one track per device of a task ("worker0 GPU:1", "ps0 CPU:0") and one per
  // task for its incoming transfers (async spans, they overlap).
  traces::ChromeTraceWriter out;
  std::map<std::string, std::string> host_of_task;
  for (const auto& [task, host] : r.task_hosts)
    host_of_task[task] = host;
  for (const auto& p : r.placement)
    host_of_task[p.task] = p.host;
  for (const auto& e : r.events) {
    const auto d = e.device.find("/device:");
    const std::string task = e.device.substr(0, d);
    const int p = out.process(host_of_task.count(task) ? host_of_task[task] : task);
    if (e.kind == training::OpKind::RECV || e.kind == training::OpKind::ALLREDUCE)
      continue; // shown from the transfer records / collective spans below
    const int t = out.track(p, short_task(task) + " " + e.device.substr(d + 8));
    json args = {{"kind", training::to_string(e.kind)}};
    if (e.bytes) args["bytes"] = e.bytes;
    out.span(p, t, e.name, training::to_string(e.kind), e.start, e.end - e.start, std::move(args));
  }
  for (const auto& rec : r.records.records()) {
    if (rec.side != transports::Side::CONSUMER) continue;
    const int p = out.process(host_of_task.count(rec.local_task) ? host_of_task[rec.local_task] : rec.local_task);
    const int t = out.track(p, short_task(rec.local_task) + " transfers in");
    json args = {{"bytes", rec.bytes}, {"from", rec.peer_task}, {"key", rec.key}, {"wait", rec.wait()}};
    for (size_t ph = 0; ph < size_t(transports::Phase::COUNT); ++ph)
      args[transports::to_string(transports::Phase(ph))] = rec.seconds[ph];
    const std::string name = rec.key.substr(0, rec.key.rfind(';'));
    out.async_span(p, t, name.substr(name.rfind(';') + 1), "transfer", rec.t_start, rec.t_end, std::move(args));
  }
  // Each task's busy gRPC threads over the step: one counter per task, a series per pool.
  for (const auto& c : r.cpu_tracks) {
    const int p = out.process(host_of_task.count(c.process) ? host_of_task[c.process] : c.process);
    for (const auto& [when, busy] : c.busy)
      out.counter(p, short_task(c.process) + " " + c.pool + " threads busy", "threads", when, busy);
  }
  // Data movements: one track per link ("link nic0.port.tx", "link gpu1.pcie.up", "link qpi.0to1") under its
  // machine, and one per NIC with every movement that went through it.
  for (const auto& c : r.comms) {
    std::vector<std::string> nics;
    const std::string bytes = fmt::format("{:.0f} B", c.bytes);
    for (const auto& l : c.links) {
      const auto dot = l.find('.');
      if (dot == std::string::npos) continue;
      const std::string host = l.substr(0, dot), rest = l.substr(dot + 1);
      const int p = out.process(host);
      // Async spans: flows overlap on a link (they share it).
      out.async_span(p, out.track(p, "link " + rest), bytes, "link", c.start, c.end,
                     {{"bytes", c.bytes}, {"route", c.links}});
      if (rest.rfind("nic", 0) == 0) {
        const std::string nic = host + "." + rest.substr(0, rest.find('.'));
        if (std::find(nics.begin(), nics.end(), nic) == nics.end()) nics.push_back(nic);
      }
    }
    for (const auto& nic : nics) {
      const int p = out.process(nic.substr(0, nic.find('.')));
      out.async_span(p, out.track(p, "NIC " + nic.substr(nic.find('.') + 1)), bytes, "nic", c.start, c.end,
                     {{"bytes", c.bytes}});
    }
  }
  return out.text({{"transport", r.transport}, {"step_seconds", r.step_time}});
}

Status write_trace(const TrainingReport& r, const std::string& path)
{
  for (const auto& run : r.runs)
    if (run.error.empty() && !run.result.events.empty()) {
      return io::write_file_atomically(path, chrome_trace(run.result));
    }
  return Error::at(path, "trace", "a run that kept its events", "none (every run failed)");
}

} // namespace tp::frontend
