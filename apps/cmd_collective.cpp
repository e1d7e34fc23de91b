// `tensorpath collective`: an nccl-tests look-alike (all_reduce_perf, all_gather_perf, ...) on a simulated cluster
// of identical nodes: per size, the time of one collective as NCCL runs it (models/nccl/collective_model: ring or
// double binary tree, LL / LL128 / Simple, channels over the rails) and its algbw and busbw as nccl-tests defines
// them, in nccl-tests' table, so that a user can lay it beside their own output; with a multi-tier topology, the
// busiest fabric links and their utilisation. Docs: docs/cli.md, docs/model.md.
#include "apps/commands.hpp"
#include "apps/lib/hw_resolve.hpp"
#include "core/common/file_io.hpp"
#include "core/common/resource_estimate.hpp"
#include "models/catalog.hpp"
#include "models/nccl/collective_model.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace tp::cli {

namespace {

using models::nccl::CollectivePrediction;
using models::nccl::CollectiveSetup;
using models::nccl::Op;

/// nccl-tests' time column: fewer decimals as the time grows.
std::string time_column(double us)
{
  if (us >= 10000.0) return fmt::format("{:7.0f}", us);
  if (us >= 100.0) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.2f}", us);
}

struct Row {
  uint64_t bytes = 0;
  CollectivePrediction p;
};

/// The sizes nccl-tests runs for -b, -e and -f (a factor above 1: geometric) or -i (else: linear steps of that many
/// bytes), each after effective_bytes (a size that rounds to 0 is left out, one that repeats is run once).
std::vector<uint64_t> sizes_of(uint64_t lo, uint64_t hi, double factor, uint64_t step, Op op, int ranks)
{
  std::vector<uint64_t> out;
  auto add = [&](double s) {
    const uint64_t b = models::nccl::effective_bytes(op, uint64_t(s), ranks);
    if (b > 0 && (out.empty() || b != out.back())) out.push_back(b);
  };
  if (factor > 1)
    for (double s = double(lo); s <= double(hi) * (1 + 1e-12); s *= factor)
      add(s);
  else
    for (uint64_t s = lo; s <= hi; s += step) {
      add(double(s));
      if (hi - s < step) break; // no overflow past the largest size
    }
  return out;
}

/// A size as nccl-tests users read them: in the largest binary unit it reaches (8 B, 64 KiB, 1.5 GiB).
std::string binary_size(uint64_t b)
{
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = double(b);
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:g} {}", std::round(v * 100) / 100, units[u]);
}

/// "8 B-64 KiB ring/LL; 128 KiB-8 GiB ring/Simple": the algorithm and protocol the model picked, by size range.
std::string choices(const std::vector<Row>& rows)
{
  std::string out;
  size_t start = 0;
  auto name = [](const CollectivePrediction& p) {
    return std::string(models::nccl::to_string(p.algo)) + "/" + models::nccl::to_string(p.proto);
  };
  for (size_t i = 1; i <= rows.size(); ++i) {
    if (i < rows.size() && name(rows[i].p) == name(rows[start].p)) continue;
    if (!out.empty()) out += "; ";
    out += binary_size(rows[start].bytes);
    if (i - 1 > start) out += "-" + binary_size(rows[i - 1].bytes);
    out += " " + name(rows[start].p);
    start = i;
  }
  return out;
}

nlohmann::json link_rows(const CollectivePrediction& p)
{
  auto out = nlohmann::json::array();
  for (const auto& l : p.links)
    out.push_back({{"link", l.link.name},
                   {"tier", l.link.tier},
                   {"rate_GBps", l.link.rate * 1e-9},
                   {"utilisation", l.utilisation}});
  return out;
}

nlohmann::json tier_rows(const CollectivePrediction& p)
{
  auto out = nlohmann::json::object();
  for (const auto& [tier, u] : p.tier_utilisation)
    out[tier] = u;
  return out;
}

Status write_json(const std::string& file, const CollectiveSetup& s, const std::string& hw,
                  const std::vector<Row>& rows, double avg_busbw)
{
  nlohmann::json j;
  j["op"] = models::nccl::to_string(s.op);
  j["hw"] = hw;
  j["nodes"] = s.nodes;
  j["gpus_per_node"] = s.gpus_per_node;
  j["ranks"] = s.nodes * s.gpus_per_node;
  j["channels"] = s.channels;
  if (s.topology && s.topology->tiers > 1) j["topology"] = s.topology->name;
  j["avg_busbw_GBps"] = avg_busbw * 1e-9;
  j["rows"] = nlohmann::json::array();
  for (const auto& r : rows)
    j["rows"].push_back({{"bytes", r.bytes},
                         {"count", r.bytes / 4},
                         {"time_us", r.p.seconds * 1e6},
                         {"algbw_GBps", r.p.algbw * 1e-9},
                         {"busbw_GBps", r.p.busbw * 1e-9},
                         {"algo", models::nccl::to_string(r.p.algo)},
                         {"proto", models::nccl::to_string(r.p.proto)},
                         {"latency_us", r.p.latency * 1e6},
                         {"bottleneck", r.p.bottleneck},
                         {"fabric_links", link_rows(r.p)},
                         {"tier_utilisation", tier_rows(r.p)}});
  return io::write_file_atomically(file, j.dump(1) + "\n");
}

/// The setup the options describe on `host`; a field the model refuses is named as its option (--gpus-per-node).
/// --oversubscription: ratios separated by commas ("2", "1,2"), each from 1 to 1024 (their count is checked against
/// the topology's tiers by collective_setup_for).
Result<std::vector<double>> ratios(const std::string& text)
{
  std::vector<double> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string one = text.substr(start, comma - start);
    char* end = nullptr;
    const double v = std::strtod(one.c_str(), &end);
    if (one.empty() || end != one.c_str() + one.size() || !(v >= 1) || !(v <= 1024))
      return Error::at("", "--oversubscription", "ratios from 1 (non-blocking) to 1024, separated by commas",
                       "\"" + text + "\"");
    out.push_back(v);
    start = comma + 1;
  }
  return out;
}

/// The setup the options describe on the --hw profile (a cluster's topology included); a field the model or the
/// network refuses is named as its option (--gpus-per-node, --topology, --nic, ...).
Result<CollectiveSetup> setup_from(const frontend::ParsedArgs& a, const models::Catalog& cat, const std::string& hw)
{
  CollectiveSetup s;
  auto op = models::nccl::parse_op(a.get("op", "all_reduce"));
  if (!op.ok()) return Error::at("", "--op", op.error().expected, op.error().got);
  s.op = op.value();
  auto nodes = a.get_int("nodes", 1, 1, 1 << 20);
  if (!nodes.ok()) return nodes.error();
  s.nodes = int(nodes.value());
  auto g = a.get_int("gpus-per-node", 0, 1, 1024); // 0 (not given): every GPU of the host
  if (!g.ok()) return g.error();
  s.gpus_per_node = int(g.value());
  auto algo = models::nccl::parse_algo(a.get("algo", "auto"));
  if (!algo.ok()) return Error::at("", "--algo", algo.error().expected, algo.error().got);
  s.algo = algo.value();
  auto proto = models::nccl::parse_proto(a.get("proto", "auto"));
  if (!proto.ok()) return Error::at("", "--proto", proto.error().expected, proto.error().got);
  s.proto = proto.value();
  auto ch = a.get_int("channels", 0, 1, 64); // 0 (not given): the model's default
  if (!ch.ok()) return ch.error();
  s.channels = int(ch.value());
  frontend::CollectiveNetwork net;
  net.topology = a.get("topology", "");
  net.nic = a.get("nic", "");
  net.pcie = a.get("pcie", "");
  if (a.has("ecmp")) {
    auto e = models::parse_ecmp(a.get("ecmp"));
    if (!e.ok()) return Error::at("", "--ecmp", e.error().expected, e.error().got);
    net.ecmp = e.value();
  }
  if (a.has("oversubscription")) {
    auto r = ratios(a.get("oversubscription"));
    if (!r.ok()) return r.error();
    net.oversubscription = r.value();
  }
  auto done = frontend::collective_setup_for(cat, hw, "", s, net);
  if (!done.ok() && done.error().file.empty() && !done.error().field.empty()) {
    std::string option = "--" + done.error().field;
    std::replace(option.begin(), option.end(), '_', '-');
    return Error::at("", option, done.error().expected, done.error().got);
  }
  return done;
}

void print_header(const CollectiveSetup& s, const frontend::ParsedArgs& a, const std::string& hw)
{
  const auto links = models::nccl::collective_links(s);
  std::printf("# tensorpath collective: %s_perf look-alike, simulated (NCCL's algorithms and tuning model on the "
              "hardware profiles; models/nccl)\n",
              models::nccl::to_string(s.op));
  std::printf("# hw %s: %d node%s x %d GPU%s = %d ranks, %d channels%s, algo %s, proto %s\n", hw.c_str(), s.nodes,
              s.nodes == 1 ? "" : "s", s.gpus_per_node, s.gpus_per_node == 1 ? "" : "s", s.nodes * s.gpus_per_node,
              s.channels, a.has("channels") ? "" : " (assumed: --channels)", a.get("algo", "auto").c_str(),
              a.get("proto", "auto").c_str());
  if (s.gpus_per_node > 1) std::printf("# intra-node: %s\n", links.intra_what.c_str());
  if (s.nodes > 1) {
    auto topo = models::nccl::collective_topology(s);
    const std::string fabric = topo.ok() && topo.value()
                                   ? "fabric " + s.topology->name + ": " + topo.value()->describe()
                                   : "one non-blocking switch";
    std::printf("# network: %s\n# %s\n", links.net_what.c_str(), fabric.c_str());
  }
  std::printf("#\n");
  std::printf("#                                                              out-of-place                       "
              "in-place          \n");
  std::printf("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw "
              "  busbw #wrong\n");
  std::printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s) "
              " (GB/s)       \n");
}

int run_collective_cmd(const frontend::ParsedArgs& a)
{
  models::Catalog cat;
  const std::string hw = a.get("hw", "hgx-h100-8gpu");
  auto setup = setup_from(a, cat, hw);
  if (!setup.ok()) return report_error(setup.error());
  const CollectiveSetup& s = setup.value();
  auto lo = a.get_size("minbytes", 32ull << 20);
  auto hi = a.get_size("maxbytes", 32ull << 20);
  if (!lo.ok()) return report_error(lo.error());
  if (!hi.ok()) return report_error(hi.error());
  // nccl-tests' defaults: no factor (-f 1), linear steps of 1 MiB (-i); -f above 1 multiplies instead
  auto factor = a.get_number("stepfactor", 1, 1, 1024);
  if (!factor.ok()) return report_error(factor.error());
  auto step = a.get_size("stepbytes", 1ull << 20);
  if (!step.ok()) return report_error(step.error());
  if (step.value() == 0) return report_error(Error::at("", "-i/--stepbytes", "at least 1 byte", "0"));
  if (a.has("stepfactor") && a.has("stepbytes"))
    return report_error(
        Error::at("", "-i/--stepbytes", "-f or -i, not both (nccl-tests uses -f when it is above 1)", "both"));
  if (hi.value() < lo.value())
    return report_error(Error::at("", "-e/--maxbytes", "at least -b/--minbytes (" + std::to_string(lo.value()) + ")",
                                  std::to_string(hi.value())));
  if (factor.value() > 1 && lo.value() == 0) // 0 times any factor stays 0: the sizes would never grow
    return report_error(Error::at("", "-b/--minbytes", "at least 1 byte with -f (sizes grow by multiplying)", "0"));
  if (factor.value() > 1 && std::log(double(hi.value()) / double(lo.value())) / std::log(factor.value()) >= 100000)
    return report_error(Error::at(
        "", "-f/--stepfactor", "at most 100000 sizes (a larger factor)",
        fmt::format("{:.3g} sizes", std::log(double(hi.value()) / double(lo.value())) / std::log(factor.value()))));
  if (factor.value() <= 1 && (hi.value() - lo.value()) / step.value() >= 100000) // counted before any is made
    return report_error(Error::at("", "-i/--stepbytes", "at most 100000 sizes (a larger -i, or -f 2 for powers of two)",
                                  std::to_string((hi.value() - lo.value()) / step.value() + 1) + " sizes"));
  const int ranks = s.nodes * s.gpus_per_node;
  const auto sizes = sizes_of(lo.value(), hi.value(), factor.value(), step.value(), s.op, ranks);
  if (sizes.empty()) { // even -e rounds to nothing
    const Error e = models::nccl::collective_bytes(s.op, hi.value(), ranks).error();
    return report_error(Error::at("", "-b/-e", e.expected, e.got));
  }
  print_header(s, a, hw);
  const char* redop = (s.op == Op::ALL_REDUCE || s.op == Op::REDUCE_SCATTER) ? "sum" : "none";
  const int root = s.op == Op::BROADCAST ? 0 : -1;
  std::vector<Row> rows;
  double sum_busbw = 0;
  const auto links = models::nccl::collective_links(s);
  for (uint64_t b : sizes) {
    Row r{b, models::nccl::predict(s, links, double(b))};
    if (!(r.p.seconds > 0) || !std::isfinite(r.p.seconds))
      return report_error(
          Error::msg(fmt::format("the model gave no time for {} bytes ({}): a bug, please report it", b, r.p.seconds)));
    const std::string cols = fmt::format("  {}  {:6.2f}  {:6.2f}  {:>5}", time_column(r.p.seconds * 1e6),
                                         r.p.algbw * 1e-9, r.p.busbw * 1e-9, "N/A");
    std::printf("%12llu  %12llu  %8s  %6s  %6d%s%s\n", static_cast<unsigned long long>(b),
                static_cast<unsigned long long>(b / 4), "float", redop, root, cols.c_str(), cols.c_str());
    sum_busbw += r.p.busbw;
    rows.push_back(r);
  }
  const double avg = sum_busbw / double(rows.size());
  std::printf("# Out of bounds values : N/A (simulated: no data is moved or checked)\n");
  std::printf("# Avg bus bandwidth    : %g \n", std::round(avg * 1e-9 * 1e3) / 1e3);
  std::printf("#\n# algorithm/protocol by size: %s\n", choices(rows).c_str());
  std::printf("# bandwidth at %s bounded by: %s\n", binary_size(rows.back().bytes).c_str(),
              rows.back().p.bottleneck.c_str());
  if (!rows.back().p.links.empty()) {
    std::printf("# busiest fabric links at %s (busy time / collective time):", binary_size(rows.back().bytes).c_str());
    for (size_t i = 0; i < rows.back().p.links.size() && i < 5; ++i)
      std::printf("%s %s %.0f %%", i ? "," : "", rows.back().p.links[i].link.name.c_str(),
                  100 * rows.back().p.links[i].utilisation);
    std::printf("\n# busiest link per tier:");
    for (size_t i = 0; i < rows.back().p.tier_utilisation.size(); ++i)
      std::printf("%s %s %.0f %%", i ? "," : "", rows.back().p.tier_utilisation[i].first.c_str(),
                  100 * rows.back().p.tier_utilisation[i].second);
    std::printf("\n");
  }
  std::printf("# in-place and out-of-place are the same prediction (the model has no copy between buffers)\n");
  if (a.has("json"))
    if (auto st = write_json(a.get("json"), s, hw, rows, avg); !st.ok()) return report_io_error(st.error());
  return 0;
}

} // namespace

Command collective_command()
{
  frontend::CommandSpec s;
  s.name = "collective";
  s.summary = "nccl-tests look-alike: NCCL-style collectives (ring/tree, LL/LL128/Simple) on simulated nodes";
  s.usage = "[--op OP] [-b MIN] [-e MAX] [-f FACTOR | -i STEP] [--hw HOST] [--nodes N] [--gpus-per-node G] [options]";
  s.options = {
      {"op", 0, true, "OP", "all_reduce (default), all_gather, reduce_scatter, broadcast or alltoall"},
      {"minbytes", 'b', true, "SIZE", "smallest size, K/M/G suffixes (default 32M, as nccl-tests)"},
      {"maxbytes", 'e', true, "SIZE", "largest size (default 32M)"},
      {"stepfactor", 'f', true, "F",
       "multiply the size by F from one line to the next (default 1: off, as nccl-tests)"},
      {"stepbytes", 'i', true, "SIZE", "without -f: add SIZE from one line to the next (default 1M, as nccl-tests)"},
      {"hw", 0, true, "HOST", "host profile of every node (default hgx-h100-8gpu)"},
      {"nodes", 'N', true, "N", "nodes (default 1)"},
      {"gpus-per-node", 'g', true, "G", "GPUs used per node (default: all of the host's)"},
      {"algo", 0, true, "A", "ring, tree (all_reduce only) or auto (default: the faster the model predicts)"},
      {"proto", 0, true, "P", "LL, LL128, Simple or auto (default: the fastest of those NCCL enables)"},
      {"channels", 0, true, "C", "NCCL channels (default 16 with NVLink, else 2 per NIC: an assumption)"},
      {"topology", 0, true, "T",
       "the network between the nodes: a topology profile (default: the --hw cluster's, "
       "else one non-blocking switch); see tensorpath profiles topology"},
      {"oversubscription", 0, true, "R[,R2]", "override the topology's down:up ratio per tier below the top"},
      {"ecmp", 0, true, "E", "override the topology's uplink placement: hash, dmodk or spread"},
      {"nic", 0, true, "NIC", "a NIC profile for every NIC of the host (e.g. connectx6-200g-hdr against the default)"},
      {"pcie", 0, true, "PCIE", "a PCIe profile for every GPU and NIC link and PCIe switch uplink (e.g. gen4-x16)"},
      {"json", 0, true, "FILE", "also write the rows (time, algbw, busbw, algorithm, protocol, bottleneck) as JSON"},
  };
  s.details =
      "busbw as nccl-tests defines it: algbw x 2(n-1)/n for all_reduce, x (n-1)/n for all_gather, reduce_scatter\n"
      "and alltoall, x 1 for broadcast; sizes as nccl-tests rounds them (whole floats, per rank for gathers).\n"
      "With a multi-tier --topology the flows are placed on its links and the busiest bounds the bandwidth; the\n"
      "busiest links and their utilisation follow the table. Not modelled: NVLink SHARP (NVLS), CollNet/SHARP,\n"
      "congestion control (see docs/model.md).\n"
      "Example: tensorpath collective --op all_reduce -b 8 -e 8G -f 2 --hw hgx-h100-8gpu --nodes 16\n"
      "         tensorpath collective --nodes 64 --topology superpod-ndr-2tier --oversubscription 2 --ecmp hash";
  return {s, &run_collective_cmd};
}

} // namespace tp::cli
