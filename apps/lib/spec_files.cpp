// Running scenario and validation jobs on the simulator (their JSON loading is in spec_parse.cpp).
#include "apps/lib/spec_files.hpp"
#include "apps/lib/args.hpp"
#include "apps/lib/hw_resolve.hpp"
#include "apps/lib/perftest_report.hpp"
#include "core/common/isolated_run.hpp"
#include "core/common/median.hpp"
#include "core/transports/transport.hpp"
#include "models/catalog.hpp"

#include "models/json_reader.hpp"
#include "models/workload/workload.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>

#ifndef TENSORPATH_SOURCE_DIR
#define TENSORPATH_SOURCE_DIR "."
#endif

namespace tp::frontend {

std::string default_cases_dir()
{
  return std::string(TENSORPATH_SOURCE_DIR) + "/validation/cases";
}

namespace {

using json_input::json;

/// One transfer run in a child process (one simulation each); returns steady latency, first latency, bandwidth.
Result<std::array<double, 3>> isolated_transfer(const models::ClusterProfile& cluster, const sim::TransferJob& tj)
{
  auto child = run_isolated([&]() -> Result<std::string> {
    auto r = sim::run_transfer_job(cluster, tj);
    if (!r.ok()) return r.error();
    const auto& p = r->points.at(0);
    return fmt::format("{:.12e} {:.12e} {:.12e}", p.steady_latency, p.first_latency, p.bandwidth);
  });
  if (!child.ok()) return child.error();
  std::array<double, 3> v{};
  if (std::sscanf(child.value().c_str(), "%lf %lf %lf", &v[0], &v[1], &v[2]) != 3)
    return Error::msg("malformed transfer result from the child process");
  return v;
}

Result<models::ClusterProfile> transfer_cluster(const models::Catalog& cat, const JobSpec& job,
                                                const std::string& fabric)
{
  auto cluster = cluster_for(cat, job.hw, 2, job.switch_name);
  if (!cluster.ok()) return cluster.error();
  if (!fabric.empty()) {
    auto tcp = cat.tcp(fabric);
    if (!tcp.ok()) return tcp.error();
    for (auto& g : cluster->groups)
      g.host.tcp = tcp.value();
  }
  return cluster;
}

} // namespace

namespace {

/// The fabric metrics of a prediction with a multi-tier topology: the busiest link's utilisation and each tier's
/// (util_leaf_to_spine, ...).
void add_utilisation(const models::nccl::CollectivePrediction& p, std::map<std::string, double>& metrics)
{
  for (const auto& [tier, u] : p.tier_utilisation)
    metrics[utilisation_metric(tier)] = u;
  if (!p.links.empty()) metrics["util_max"] = p.links.front().utilisation;
}

Result<JobOutcome> run_collective_job(const models::Catalog& cat, const JobSpec& job)
{
  auto s = collective_setup_for(cat, job.hw, job.switch_name, job.collective.setup, job.collective.network);
  if (!s.ok()) return s.error();
  auto b = models::nccl::collective_bytes(s->op, job.collective.bytes, s->nodes * s->gpus_per_node);
  if (!b.ok()) return b.error();
  const uint64_t bytes = b.value();
  const auto p = models::nccl::predict(s.value(), double(bytes));
  const auto links = models::nccl::collective_links(s.value());
  JobOutcome out;
  out.metrics["time_us"] = p.seconds * 1e6;
  out.metrics["algbw_GBps"] = p.algbw * 1e-9;
  out.metrics["busbw_GBps"] = p.busbw * 1e-9;
  if (s->nodes > 1) out.metrics["busbw_per_nic_GBps"] = p.busbw * 1e-9 / links.nics_used;
  add_utilisation(p, out.metrics); // with a multi-tier topology
  out.report = fmt::format(" {} of {} bytes over {} node(s) x {} GPU(s), {} channels: {}/{} {:.2f} us, algbw {:.2f} "
                           "GB/s, busbw {:.2f} GB/s (bandwidth bounded by {})\n",
                           models::nccl::to_string(s->op), bytes, s->nodes, s->gpus_per_node, s->channels,
                           models::nccl::to_string(p.algo), models::nccl::to_string(p.proto), p.seconds * 1e6,
                           p.algbw * 1e-9, p.busbw * 1e-9, p.bottleneck);
  return out;
}

Result<JobOutcome> run_data_parallel_job(const models::Catalog& cat, const JobSpec& job)
{
  const auto& d = job.data_parallel;
  auto s = collective_setup_for(cat, job.hw, job.switch_name, d.collective.setup, d.collective.network);
  if (!s.ok()) return s.error();
  const std::string gpu = s->host.gpus[0].gpu.name;
  auto w = models::WorkloadLibrary(models::default_workloads_dir(), cat).make(d.model, gpu, d.batch, d.precision);
  if (!w.ok()) return w.error();
  const auto step = models::nccl::data_parallel_step(s.value(), w.value(), d.options);
  if (!(step.seconds > 0) || !std::isfinite(step.seconds))
    return Error::msg(
        fmt::format("data_parallel: the model gave no step time ({}): a bug, please report it", step.seconds));
  JobOutcome out;
  auto& m = out.metrics;
  m["step_ms"] = step.seconds * 1e3;
  m["images_per_second"] = double(d.batch) * step.ranks / step.seconds;
  m["scaling_efficiency"] = step.scaling_efficiency();
  m["speedup_over_one_gpu"] = step.scaling_efficiency() * step.ranks;
  m["gpus"] = step.ranks;
  m["compute_ms"] = step.compute() * 1e3;
  m["communication_ms"] = step.communication * 1e3;
  m["exposed_ms"] = step.exposed * 1e3;
  m["allreduces"] = double(step.allreduces.size());
  m["path_compute_ms"] = step.compute() * 1e3;
  m["path_network_ms"] = step.exposed * 1e3;
  const models::nccl::BucketAllreduce* largest = nullptr;
  for (const auto& b : step.allreduces)
    if (!largest || b.bytes > largest->bytes) largest = &b;
  if (largest && s->topology && s->topology->tiers > 1 && s->nodes > 1) add_utilisation(largest->prediction, m);
  if (step.exposed > 0.01 * step.seconds && largest)
    out.bottleneck = fmt::format("communication after the backward pass {:.1f} % of the step, bounded by {}",
                                 100 * step.exposed / step.seconds, largest->prediction.bottleneck);
  out.report = fmt::format(
      " {} on {} node(s) x {} GPU(s) ({}, batch {} per GPU, {}): step {:.2f} ms = compute {:.2f} ms + {:.2f} ms of "
      "communication after the backward pass ({} allreduces, {:.2f} ms in all); {:.0f} images/s, scaling efficiency "
      "{:.1f} %; {}\n   compute: {}\n",
      d.model, s->nodes, s->gpus_per_node, gpu, d.batch, models::nccl::to_string(d.options.bucketing),
      step.seconds * 1e3, step.compute() * 1e3, step.exposed * 1e3, step.allreduces.size(), step.communication * 1e3,
      m["images_per_second"], 100 * step.scaling_efficiency(), step.bottleneck, w->provenance);
  return out;
}

} // namespace

/// An incast job on its network model: "flow" (max-min, closed form) or "tcp-incast", on `incast_seeds` seeds of
/// start jitter (seeds seed .. seed + n - 1): the metrics are the medians over them (docs/network-models.md).
Result<JobOutcome> run_incast_job(const JobSpec& job)
{
  const auto& c = job.incast;
  auto r = models::run_incast_model_median(job.network_model, c, job.incast_seeds, job.incast_offsets);
  if (!r.ok()) return r.error();
  JobOutcome out;
  out.metrics["completion_ms"] = r->completion * 1e3;
  out.metrics["first_ms"] = r->first * 1e3;
  out.metrics["goodput_gbps"] = r->goodput * 8e-9;
  out.metrics["drops"] = r->drops;
  out.metrics["timeouts"] = r->timeouts;
  out.metrics["fast_retransmits"] = r->fast_retransmits;
  out.metrics["peak_queue_bytes"] = r->peak_queue_bytes;
  out.report = fmt::format(" incast ({}): {} senders x {} bytes through a {}-byte port at {:.4g} Gb/s{}: {:.3f} ms, "
                           "goodput {:.3f} Gb/s, {} drops, {} time-outs, {} fast retransmits\n",
                           job.network_model, c.senders, c.bytes_per_sender, c.buffer_bytes, c.link_rate * 8e-9,
                           job.incast_seeds > 1 ? fmt::format(" (median of {} seeds)", job.incast_seeds) : "",
                           r->completion * 1e3, r->goodput * 8e-9, r->drops, r->timeouts, r->fast_retransmits);
  return out;
}

/// A roce job on its network model: "flow" (max-min over the same flows) or "roce" (models/congestion/roce_fabric),
/// on `roce_seeds` seeds (seed .. seed + n - 1: ECN's marking draws); each metric is the median over them.
Result<JobOutcome> run_roce_job(const JobSpec& job)
{
  std::map<std::string, std::vector<double>> runs;
  models::RoceResult last;
  for (int s = 0; s < job.roce_seeds; ++s) {
    auto c = job.roce;
    c.seed += uint64_t(s);
    auto res = models::run_roce_model(job.network_model, c);
    if (!res.ok()) return res.error();
    const models::RoceResult& r = res.value();
    runs["completion_ms"].push_back(r.completion * 1e3);
    runs["first_ms"].push_back(r.first * 1e3);
    runs["goodput_gbps"].push_back(r.goodput_bps * 1e-9);
    runs["peak_queue_bytes"].push_back(r.peak_queue);
    runs["mean_queue_bytes"].push_back(r.mean_queue);
    runs["pause_frames"].push_back(r.pause_frames());
    runs["longest_pause_us"].push_back(r.longest_pause() * 1e6);
    runs["cnps"].push_back(r.cnps);
    runs["victim_gbps"].push_back(r.victim_bps * 1e-9);
    runs["victim_completion_ms"].push_back(r.victim_completion * 1e3);
    runs["window_gbps"].push_back(r.window_bps * 1e-9);
    runs["algbw_gbps"].push_back(r.algbw_bps * 1e-9);
    runs["busbw_gbps"].push_back(r.busbw_bps * 1e-9);
    last = r;
  }
  JobOutcome out;
  for (const auto& [name, values] : runs)
    out.metrics[name] = tp::median(values);
  const auto& c = job.roce;
  const auto& m = out.metrics;
  const bool flow = job.network_model == "flow";
  const bool ring = c.scenario == models::RoceScenario::ALLREDUCE;
  out.report =
      fmt::format(" roce {} ({}): {} {} x {} bytes at {:.4g} Gb/s{}{}: {:.3f} ms, {} {:.3f} Gb/s",
                  models::roce_scenario_name(c.scenario), job.network_model, c.senders, ring ? "ranks" : "senders",
                  c.size, c.rate * 1e-9,
                  flow ? " (max-min: no buffer, PFC, ECN or DCQCN)"
                       : fmt::format(", {}, DCQCN {}", models::roce_buffer_text(c), c.dcqcn.enabled ? "on" : "off"),
                  job.roce_seeds > 1 ? fmt::format(" (medians of {} seeds)", job.roce_seeds) : "",
                  m.at("completion_ms"), ring ? "bus bandwidth" : "goodput", m.at("goodput_gbps"));
  if (!flow)
    out.report += fmt::format(", hot port {} peak {:.0f} KB, mean {:.0f} KB, {:.0f} PAUSE frames (longest paused "
                              "{:.1f} us), {:.0f} CNPs",
                              last.hot_port, m.at("peak_queue_bytes") / 1e3, m.at("mean_queue_bytes") / 1e3,
                              m.at("pause_frames"), m.at("longest_pause_us"), m.at("cnps"));
  if (c.scenario == models::RoceScenario::VICTIM)
    out.report += fmt::format(", victim {:.3f} Gb/s", m.at("victim_gbps"));
  out.report += "\n";
  return out;
}

Result<JobOutcome> run_job(const JobSpec& job)
{
  models::Catalog cat;
  JobOutcome out;
  if (job.kind == JobSpec::Kind::TRAINING) {
    TrainingSpec spec = job.training;
    spec.collect_events = !job.trace_file.empty();
    auto rep = run_training(spec);
    if (!rep.ok()) return rep.error();
    if (!job.trace_file.empty())
      if (auto st = write_trace(rep.value(), job.trace_file); !st.ok()) out.output_lost = st.error().message();
    for (const auto& run : rep->runs)
      if (!run.error.empty()) return Error::msg("training with " + run.transport + ": " + run.error);
    out.metrics = training_metrics(rep.value());
    out.report = training_table(rep.value());
    out.failed = failed_runs(rep.value());
    return out;
  }
  if (job.kind == JobSpec::Kind::INCAST) return run_incast_job(job);
  if (job.kind == JobSpec::Kind::ROCE) return run_roce_job(job);
  if (job.kind == JobSpec::Kind::COLLECTIVE) return run_collective_job(cat, job);
  if (job.kind == JobSpec::Kind::DATA_PARALLEL) return run_data_parallel_job(cat, job);
  if (job.kind == JobSpec::Kind::TRANSFER) {
    auto cl = transfer_cluster(cat, job, job.fabric);
    if (!cl.ok()) return cl.error();
    auto v = isolated_transfer(cl.value(), job.transfer);
    if (!v.ok()) return v.error();
    out.metrics["latency_us"] = v.value()[0] * 1e6;
    out.metrics["first_latency_us"] = v.value()[1] * 1e6;
    out.metrics["bandwidth_GBps"] = v.value()[2] * 1e-9;
    out.metrics["bandwidth_MBps"] = v.value()[2] * 1e-6;
    out.report = fmt::format(
        " transfer {} ({}), {} bytes {} -> {}: latency {:.2f} us, bandwidth {:.3f} GB/s\n", job.transfer.transport,
        job.fabric.empty() ? "TCP profile: the host's" : "TCP profile: " + job.fabric, job.transfer.sizes[0],
        job.transfer.src.to_string(), job.transfer.dst.to_string(), v.value()[0] * 1e6, v.value()[2] * 1e-9);
    if (job.has_baseline) {
      auto bc = transfer_cluster(cat, job, job.baseline_fabric);
      if (!bc.ok()) return bc.error();
      auto b = isolated_transfer(bc.value(), job.baseline);
      if (!b.ok()) return b.error();
      out.metrics["baseline_latency_us"] = b.value()[0] * 1e6;
      out.metrics["speedup_vs_baseline"] = b.value()[0] / v.value()[0];
      out.metrics["latency_reduction_vs_baseline"] = 1.0 - v.value()[0] / b.value()[0];
      out.report +=
          fmt::format(" baseline {} ({}): latency {:.2f} us -> speed-up {:.2f}x\n", job.baseline.transport,
                      job.baseline_fabric.empty() ? "TCP profile: the host's" : "TCP profile: " + job.baseline_fabric,
                      b.value()[0] * 1e6, b.value()[0] / v.value()[0]);
    }
    return out;
  }
  if (job.kind == JobSpec::Kind::PERFTEST) {
    auto cluster = cluster_for(cat, job.hw, 2, job.switch_name);
    if (!cluster.ok()) return cluster.error();
    sim::PerftestJob pj = job.perftest;
    const auto& nic =
        cluster->host(0).nics.at(size_t(std::min<int>(pj.nic, int(cluster->host(0).nics.size()) - 1))).nic;
    pj.config.mtu = verbs::Mtu(nic.mtu);
    auto r = sim::run_perftest_job(cluster.value(), pj);
    if (!r.ok()) return r.error();
    const auto& res = r->result;
    if (!res.bw.empty()) {
      out.metrics["bw_average_gbps"] = res.bw.back().bw_average * 8e-9;
      out.metrics["bw_peak_gbps"] = res.bw.back().bw_peak * 8e-9;
      out.metrics["msg_rate_mpps"] = res.bw.back().msg_rate * 1e-6;
      out.metrics["bw_average_GBps"] = res.bw.back().bw_average * 1e-9;
    }
    if (!res.lat.empty()) {
      out.metrics["lat_typical_us"] = res.lat.back().t_typical * 1e6;
      out.metrics["lat_avg_us"] = res.lat.back().t_avg * 1e6;
    }
    out.metrics["wall_seconds"] = r->wall_seconds;
    out.metrics["operations"] = double(res.operations);
    out.report = perftest_banner(res, nic.link_layer == models::LinkLayerKind::INFINIBAND ? "IB" : "Ethernet") +
                 perftest_table(res);
    return out;
  }
  auto cluster = cluster_for(cat, job.hw, 1, job.switch_name);
  if (!cluster.ok()) return cluster.error();
  auto r = sim::run_copy_jobs(cluster.value(), job.copies);
  if (!r.ok()) return r.error();
  for (const auto& c : r.value()) {
    out.metrics["h2d_GBps"] = c.h2d_bandwidth * 1e-9;
    out.metrics["d2h_GBps"] = c.d2h_bandwidth * 1e-9;
    out.metrics["d2d_GBps"] = c.d2d_bandwidth * 1e-9;
    out.report += fmt::format(
        " pcie-copy gpu {} <-> host node {} ({} bytes, {}): H2D {:.2f} GB/s, D2H {:.2f} GB/s, D2D {:.2f} GB/s\n",
        c.config.gpu, c.config.host_node, c.config.bytes, c.config.pinned ? "pinned" : "pageable",
        c.h2d_bandwidth * 1e-9, c.d2h_bandwidth * 1e-9, c.d2d_bandwidth * 1e-9);
    if (c.config.peer_gpu >= 0) {
      out.metrics["p2p_GBps"] = c.p2p_bandwidth * 1e-9;
      out.report += fmt::format(" peer copy gpu {} -> gpu {}: {:.2f} GB/s\n", c.config.gpu, c.config.peer_gpu,
                                c.p2p_bandwidth * 1e-9);
    }
  }
  return out;
}

std::string encode_outcome(const JobOutcome& o)
{
  json j;
  j["metrics"] = o.metrics;
  j["report"] = o.report;
  j["failed"] = o.failed;
  j["output_lost"] = o.output_lost;
  j["bottleneck"] = o.bottleneck;
  return j.dump();
}

Result<JobOutcome> decode_outcome(const std::string& text)
{
  try {
    json j = json::parse(text);
    JobOutcome o;
    o.metrics = j.at("metrics").get<std::map<std::string, double>>();
    o.report = j.at("report").get<std::string>();
    o.failed = j.at("failed").get<std::vector<std::string>>();
    o.output_lost = j.at("output_lost").get<std::string>();
    o.bottleneck = j.value("bottleneck", "");
    return o;
  } catch (const std::exception& e) {
    return Error::msg(std::string("malformed job result from the child process: ") + e.what());
  }
}

const char* embedded_default_scenario()
{
  static const char text[] = {
#include "default_scenario.inc"
      0};
  return text;
}

} // namespace tp::frontend
