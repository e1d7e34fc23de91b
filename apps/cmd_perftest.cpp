// `tensorpath perftest`: ib_{write,read,send}_{bw,lat} on the simulated fabric.
#include "apps/commands.hpp"
#include "apps/lib/hw_resolve.hpp"
#include "apps/lib/perftest_report.hpp"
#include "core/common/file_io.hpp"
#include "models/catalog.hpp"
#include "sim/microbench_jobs.hpp"

#include <cstdio>
#include <fstream>

namespace tp::cli {

namespace {

int run_perftest(const frontend::ParsedArgs& a)
{
  models::Catalog cat;
  sim::PerftestJob job;
  auto& c = job.config;
  const std::string op = a.get("op", "write");
  if (!microbench::parse_verb(op, c.verb))
    return report_error(Error::at("", "tensorpath perftest --op", "write, read or send", "\"" + op + "\""));
  if (a.has("bw") && a.has("lat"))
    return report_error(Error::at("", "tensorpath perftest", "one of --bw and --lat", "both"));
  c.metric = a.has("lat") ? microbench::Metric::LAT : microbench::Metric::BW;
  if (a.has("all")) {
    if (a.has("size")) return report_error(Error::at("", "tensorpath perftest", "one of --size and -a", "both"));
    c.sizes = microbench::PerftestConfig::all_sizes();
  } else {
    auto s = a.get_size("size", 65536);
    if (!s.ok()) return report_error(s.error());
    c.sizes = {s.value()};
  }
  auto iters = a.get_int("iters", 0, 1, 100000000);
  auto qps = a.get_int("qps", 1, 1, 1024);
  auto depth = a.get_int("tx-depth", 128, 1, 16384);
  auto inl = a.get_int("inline", -1, -1, 4096);
  auto nic = a.get_int("nic", 0, 0, 64);
  for (auto* r : {&iters, &qps, &depth, &inl, &nic})
    if (!r->ok()) return report_error(r->error());
  c.iterations = uint64_t(iters.value());
  c.qps = int(qps.value());
  c.tx_depth = int(depth.value());
  c.inline_size = int(inl.value());
  job.nic = int(nic.value());
  job.cross_socket = a.has("cross-socket");
  job.gpu = a.has("gpu");
  auto cluster = frontend::cluster_for(cat, a.get("hw", "connectx3-40gbe-roce"), 2, a.get("switch"));
  if (!cluster.ok()) return report_error(cluster.error());
  const auto& nspec =
      cluster->host(0).nics.at(size_t(std::min<long>(nic.value(), long(cluster->host(0).nics.size()) - 1)));
  c.mtu = verbs::Mtu(nspec.nic.mtu);
  auto r = sim::run_perftest_job(cluster.value(), job);
  if (!r.ok()) return report_error(r.error());
  const auto& res = r->result;
  const std::string link = nspec.nic.link_layer == models::LinkLayerKind::INFINIBAND ? "IB" : "Ethernet";
  if (a.has("csv")) {
    const std::string path = a.get("csv");
    if (path == "-") {
      std::fputs(frontend::perftest_csv(res).c_str(), stdout);
      return 0;
    }
    if (auto st = io::write_file_atomically(path, frontend::perftest_csv(res)); !st.ok())
      return report_io_error(st.error());
  }
  std::fputs(frontend::perftest_banner(res, link).c_str(), stdout);
  std::fputs(frontend::perftest_table(res).c_str(), stdout);
  std::printf(" simulated %.6f s in %.3f s wall, %llu operations (%.0f ops per wall-second)\n", r->simulated_seconds,
              r->wall_seconds, static_cast<unsigned long long>(res.operations),
              r->wall_seconds > 0 ? double(res.operations) / r->wall_seconds : 0.0);
  return 0;
}

} // namespace

Command perftest_command()
{
  frontend::CommandSpec s;
  s.name = "perftest";
  s.summary = "perftest look-alike (ib_write_bw, ib_read_lat, ...) on the simulated NIC/PCIe/NUMA fabric";
  s.usage = "[--op write|read|send] [--bw|--lat] [--size N | -a] [--hw PROFILE] [options]";
  s.options = {
      {"op", 0, true, "VERB", "write (default), read or send"},
      {"bw", 0, false, "", "bandwidth test (default)"},
      {"lat", 0, false, "", "latency test"},
      {"size", 's', true, "N", "message size in bytes, K/M suffixes allowed (default 64K)"},
      {"all", 'a', false, "", "all sizes from 2 B to 8 MiB in powers of two"},
      {"iters", 'n', true, "N", "iterations per size (default 5000 for --bw, 1000 for --lat)"},
      {"hw", 0, true, "PROFILE", "NIC, host or cluster profile (name or .json path; default connectx3-40gbe-roce)"},
      {"switch", 0, true, "NAME", "switch profile between the two hosts (default back-to-back)"},
      {"qps", 'q', true, "N", "number of QPs (bandwidth is aggregated over them)"},
      {"tx-depth", 't', true, "N", "outstanding work requests per QP (default 128)"},
      {"inline", 'I', true, "N", "inline size (default: 220 or the device limit for latency tests, 0 for bandwidth)"},
      {"nic", 0, true, "K", "NIC index on the hosts (default 0)"},
      {"cross-socket", 0, false, "", "buffers on the socket that does not hold the NIC (crosses QPI/UPI)"},
      {"gpu", 0, false, "", "buffers in GPU memory (GPUDirect RDMA; with --cross-socket a GPU across the socket link)"},
      {"csv", 0, true, "FILE", "also write the rows as CSV (\"-\": CSV only, on stdout)"},
  };
  s.details = "Profiles: `tensorpath profiles nic` lists NICs. A NIC profile is placed in the reference host\n"
              "(models/hw/host/perftest-reference.json); two identical hosts are simulated.\n"
              "Example: tensorpath perftest -a --hw connectx3-40gbe-roce --op send";
  return {s, &run_perftest};
}

} // namespace tp::cli
