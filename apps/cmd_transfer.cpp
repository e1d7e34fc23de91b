// `tensorpath transfer`: one tensor or a size sweep between two simulated hosts, per transport side by side:
// first-use and steady-state latency, bandwidth, and where the time went (consumer and producer records).
#include "apps/commands.hpp"
#include "apps/lib/cli_common.hpp"
#include "apps/lib/hw_resolve.hpp"
#include "core/common/file_io.hpp"
#include "core/common/isolated_run.hpp"
#include "core/transports/transport.hpp"
#include "models/catalog.hpp"
#include "sim/job_estimate.hpp"
#include "sim/transfer_job.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>

namespace tp::cli {

namespace {

using json = nlohmann::json;

json record_json(const transports::TransferRecord& r)
{
  json j;
  for (size_t p = 0; p < size_t(transports::Phase::COUNT); ++p)
    j[transports::to_string(transports::Phase(p))] = r.seconds[p];
  j["wait"] = r.wait();
  j["total"] = r.total();
  j["copies"] = r.copies;
  j["registrations"] = r.registrations;
  return j;
}

json result_json(const sim::TransferResult& r)
{
  json j;
  j["transport"] = r.transport;
  j["strategy"] = r.strategy;
  j["transfers"] = r.transfers;
  j["wall_seconds"] = r.wall_seconds;
  j["points"] = json::array();
  for (const auto& p : r.points)
    j["points"].push_back({{"bytes", p.bytes},
                           {"first_latency", p.first_latency},
                           {"steady_latency", p.steady_latency},
                           {"bandwidth", p.bandwidth},
                           {"consumer", record_json(p.consumer)},
                           {"producer", record_json(p.producer)}});
  j["registrations"] = r.consumer_memory.registrations + r.producer_memory.registrations;
  j["copies"] = r.consumer_memory.copies + r.producer_memory.copies;
  j["records_json"] = r.records.to_json();
  j["records_csv"] = r.records.to_csv();
  return j;
}

/// The two-host cluster of --hw and --switch, with its hosts' TCP profile replaced by --fabric when given.
Result<models::ClusterProfile> transfer_cluster(const models::Catalog& cat, const frontend::ParsedArgs& a)
{
  auto cluster = frontend::cluster_for(cat, a.get("hw", "connectx3-40gbe-roce"), 2, a.get("switch"));
  if (!cluster.ok()) return cluster.error();
  if (a.has("fabric")) {
    auto tcp = cat.tcp(a.get("fabric"));
    if (!tcp.ok()) return tcp.error();
    for (auto& g : cluster->groups)
      g.host.tcp = tcp.value();
  }
  return cluster;
}

/// The transfer job the options describe (--strategy, --src, --dst, --steps, --tensors, sizes), without a transport.
Result<sim::TransferJob> transfer_job_from(const frontend::ParsedArgs& a)
{
  sim::TransferJob job;
  auto strat = memory::parse_strategy(a.get("strategy", "pool_visitor"));
  if (!strat.ok()) return strat.error();
  job.strategy = strat.value();
  auto src = frontend::parse_placement(a.get("src", "cpu"), "--src");
  auto dst = frontend::parse_placement(a.get("dst", "cpu"), "--dst");
  if (!src.ok()) return src.error();
  if (!dst.ok()) return dst.error();
  job.src = src.value();
  job.dst = dst.value();
  auto steps = a.get_int("steps", 3, 1, 1000);
  auto tensors = a.get_int("tensors", 1, 1, 100000);
  if (!steps.ok()) return steps.error();
  if (!tensors.ok()) return tensors.error();
  job.steps = int(steps.value());
  job.tensors_per_step = int(tensors.value());
  auto sizes = frontend::size_list(a, 1 << 20);
  if (!sizes.ok()) return sizes.error();
  job.sizes = sizes.value();
  return job;
}

/// Append a child's records (its "records_json" list's items and its "records_csv" rows) to the whole run's.
void append_records(json& rj, std::string& records_json, std::string& records_csv)
{
  std::string rjson = rj["records_json"];
  const auto a0 = rjson.find('['), a1 = rjson.rfind(']');
  const std::string inner = a0 != std::string::npos && a1 > a0 ? rjson.substr(a0 + 1, a1 - a0 - 1) : "";
  if (inner.find('{') != std::string::npos) records_json += (records_json.size() > 1 ? "," : "") + inner;
  records_csv += rj["records_csv"].get<std::string>();
}

/// The transfer result a child wrote as JSON (result_json): transport, strategy and each size's point.
sim::TransferResult transfer_result_from_json(json& rj)
{
  sim::TransferResult r;
  r.transport = rj["transport"];
  r.strategy = rj["strategy"];
  for (const auto& p : rj["points"]) {
    sim::TransferPoint pt;
    pt.bytes = p["bytes"];
    pt.first_latency = p["first_latency"];
    pt.steady_latency = p["steady_latency"];
    pt.bandwidth = p["bandwidth"];
    for (auto* side : {&pt.consumer, &pt.producer}) {
      const json& s = p[side == &pt.consumer ? "consumer" : "producer"];
      for (size_t ph = 0; ph < size_t(transports::Phase::COUNT); ++ph)
        side->seconds[ph] = s[transports::to_string(transports::Phase(ph))];
      side->t_end = s["total"];
      side->copies = s["copies"];
      side->registrations = s["registrations"];
    }
    r.points.push_back(pt);
  }
  return r;
}

/// Print the results as one JSON array: each transport's result (without its records), then each failure.
void print_results_json(const std::vector<sim::TransferResult>& results,
                        const std::vector<std::pair<std::string, std::string>>& errors)
{
  json out = json::array();
  for (auto r : results) {
    auto j = result_json(r);
    j.erase("records_json");
    j.erase("records_csv");
    out.push_back(j);
  }
  for (const auto& [n, e] : errors)
    out.push_back({{"transport", n}, {"error", e}});
  std::printf("%s\n", out.dump(2).c_str());
}

/// Print the results as a table: per transport and phase for one size, else latency and bandwidth per size.
void print_results_table(const frontend::ParsedArgs& a, const models::ClusterProfile& cluster,
                         const sim::TransferJob& job, const std::vector<sim::TransferResult>& results)
{
  const auto& host = cluster.host(0);
  std::printf("Transfer %s -> %s between two %s hosts (%s NIC, %s), strategy %s, %d step(s) per size\n\n",
              a.get("src", "cpu").c_str(), a.get("dst", "cpu").c_str(), host.name.c_str(),
              host.nics[0].nic.name.c_str(), host.tcp.name.c_str(), memory::to_string(job.strategy), job.steps);
  if (job.sizes.size() == 1) {
    std::printf("%-10s %11s %12s %12s %9s | consumer us: %6s %6s %6s %6s %8s %6s %8s | copies regs\n", "transport",
                "bytes", "first[us]", "steady[us]", "GB/s", "ser", "copy", "reg", "pcie", "wire", "cpu", "wait");
    for (const auto& r : results)
      for (const auto& p : r.points) {
        const auto& c = p.consumer;
        using transports::Phase;
        auto us = [&c](Phase ph) { return c.seconds[size_t(ph)] * 1e6; };
        std::printf("%-10s %11llu %12.2f %12.2f %9.3f | %19.1f %6.1f %6.1f %6.1f %8.1f %6.1f %8.1f | %3u+%-3u %u+%u\n",
                    r.transport.c_str(), static_cast<unsigned long long>(p.bytes), p.first_latency * 1e6,
                    p.steady_latency * 1e6, p.bandwidth * 1e-9, us(Phase::SERIALIZE), us(Phase::COPY),
                    us(Phase::REGISTRATION), us(Phase::PCIE), us(Phase::WIRE), us(Phase::CPU),
                    std::max(
                        0.0, c.t_end -
                                 [&] {
                                   double s = 0;
                                   for (double x : c.seconds)
                                     s += x;
                                   return s;
                                 }()) *
                        1e6,
                    p.consumer.copies, p.producer.copies, p.consumer.registrations, p.producer.registrations);
      }
    std::printf("\ncopies/regs: consumer+producer for one steady-state transfer. cpu = the call's messages waiting "
                "for the gRPC threads' work (docs/model.md \"The CPU of a process\"); wait = time not in a phase (the "
                "producer's work and waits, control round trips).\n");
  } else {
    std::printf("%11s", "bytes");
    for (const auto& r : results)
      std::printf(" | %-10s %9s %8s", r.transport.c_str(), "lat[us]", "GB/s");
    std::printf("\n");
    for (size_t i = 0; i < job.sizes.size(); ++i) {
      std::printf("%11llu", static_cast<unsigned long long>(job.sizes[i]));
      for (const auto& r : results)
        std::printf(" | %-10s %9.1f %8.3f", "", r.points[i].steady_latency * 1e6, r.points[i].bandwidth * 1e-9);
      std::printf("\n");
    }
  }
}

int run_transfer(const frontend::ParsedArgs& a)
{
  transports::register_builtin_transports();
  models::Catalog cat;
  auto cluster = transfer_cluster(cat, a);
  if (!cluster.ok()) return report_error(cluster.error());
  auto list = frontend::transport_list(a.get("transport", "all"), "tensorpath transfer --transport");
  if (!list.ok()) return report_error(list.error());
  const std::vector<std::string> names = list.value();
  auto parsed = transfer_job_from(a);
  if (!parsed.ok()) return report_error(parsed.error());
  if (auto st = frontend::apply_transport_flags(a, names, parsed.value().options, "tensorpath transfer"); !st.ok())
    return report_error(st.error());
  const sim::TransferJob& job = parsed.value();
  // One process per transport, one after the other: refuse the whole before the first starts.
  JobEstimate need;
  need.job = "tensorpath transfer";
  for (const auto& n : names) {
    sim::TransferJob j = job;
    j.transport = n;
    auto e = sim::estimate_transfer(cluster.value(), j);
    e.rename_parameter("hosts in the cluster", "--hw: hosts in the cluster");
    need.then(e);
  }
  if (auto st = check_budget(need, "use fewer --tensors, --steps or sizes, or fewer transports"); !st.ok())
    return report_error(st.error());
  std::vector<sim::TransferResult> results;
  std::vector<std::pair<std::string, std::string>> errors;
  std::string records_json = "[", records_csv = transports::TransferLog::csv_header();
  for (const auto& n : names) {
    sim::TransferJob j = job;
    j.transport = n;
    const models::ClusterProfile cl = cluster.value();
    auto child = run_isolated([&]() -> Result<std::string> {
      auto r = sim::run_transfer_job(cl, j);
      if (!r.ok()) return r.error();
      return result_json(r.value()).dump();
    });
    if (!child.ok()) {
      errors.emplace_back(n, child.error().message());
      continue;
    }
    // The child's own JSON: a value it could not write as a number (a NaN or an infinity becomes null) is this
    // transport's error, not a crash of the whole command.
    try {
      json rj = json::parse(child.value());
      sim::TransferResult r = transfer_result_from_json(rj);
      append_records(rj, records_json, records_csv);
      results.push_back(std::move(r));
    } catch (const json::exception& e) {
      errors.emplace_back(n, std::string("the simulation's result could not be read back (") + e.what() + ")");
    }
  }
  if (a.has("records")) {
    const std::string path = a.get("records");
    const bool csv = path.size() > 4 && path.substr(path.size() - 4) == ".csv";
    const std::string text = csv ? records_csv : records_json + "\n]\n";
    if (auto st = io::write_file_atomically(path, text); !st.ok()) return report_io_error(st.error());
  }
  if (a.has("json")) {
    print_results_json(results, errors);
    return errors.empty() ? 0 : 1;
  }
  print_results_table(a, cluster.value(), job, results);
  for (const auto& [n, e] : errors)
    std::printf("%s: ERROR %s\n", n.c_str(), e.c_str());
  if (!errors.empty()) std::printf("%zu of %zu transport(s) failed.\n", errors.size(), names.size());
  return errors.empty() ? 0 : 1;
}

} // namespace

Command transfer_command()
{
  frontend::CommandSpec s;
  s.name = "transfer";
  s.summary = "one tensor (or a size sweep) between two simulated hosts, per transport side by side";
  s.usage = "[--transport NAME[,NAME..]|all] [--size N | --sweep] [--hw PROFILE] [--src P] [--dst P] [options]";
  s.options = {
      {"transport", 0, true, "NAMES", "comma-separated transports, or all (default)"},
      {"size", 's', true, "N", "tensor size in bytes, K/M/G suffixes (default 1M)"},
      {"sweep", 0, false, "", "sizes 4 KiB to 256 MiB, x4 steps; prints latency and bandwidth per transport"},
      {"hw", 0, true, "PROFILE", "NIC, host or cluster profile (default connectx3-40gbe-roce)"},
      {"switch", 0, true, "NAME", "switch profile (default back-to-back)"},
      {"fabric", 0, true, "TCP",
       "TCP stack profile for the gRPC paths: tcp-ethernet, tcp-ipoib-datagram, tcp-ipoib-connected"},
      {"src", 0, true, "P", "producer tensor placement: cpu, numaN or gpuN (default cpu)"},
      {"dst", 0, true, "P", "consumer tensor placement (default cpu)"},
      {"strategy", 0, true, "S",
       "memory strategy: on_demand, on_demand_cached, staging_copy, pool_visitor (default), graph_aware"},
      {"steps", 0, true, "K",
       "steps per size; the first is first use, the last is reported as steady state (default 3)"},
      {"tensors", 0, true, "N", "concurrent tensors per step (default 1)"},
      {"json", 0, false, "", "machine-readable output"},
      {"records", 0, true, "FILE", "write every per-transfer record (both sides, all steps): FILE.json or FILE.csv"},
  };
  for (auto& o : frontend::transport_flag_options())
    s.options.push_back(std::move(o));
  s.details = "Each transport runs in its own process. Example: tensorpath transfer --sweep --hw connectx4-edr-ib";
  return {s, &run_transfer};
}

} // namespace tp::cli
