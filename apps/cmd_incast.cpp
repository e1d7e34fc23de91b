// `tensorpath incast`: N senders push S bytes each to one receiver through one switch port (TCP incast), on the
// network models that can run it (models/network_models.hpp), side by side; or, with --reference, the tcp-incast
// model against the packet-level ns-3 rows of validation/ns3/incast_reference (docs/network-models.md).
#include "apps/commands.hpp"
#include "apps/lib/json_rows.hpp"
#include "core/common/median.hpp"
#include "core/common/suggest.hpp"
#include "models/catalog.hpp"
#include "models/congestion/tcp_incast.hpp"
#include "models/json_reader.hpp"
#include "models/network_models.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tp::cli {

namespace {

using nlohmann::json;

struct Row {
  std::string model;
  models::IncastConfig config;
  models::IncastResult result;
  double cpu_s = 0;
  int seeds = 1; ///< runs the row is the median of
};

/// A run that the model refused after its configuration was checked, or whose result cannot be right (above the
/// port's payload rate): the model failed, not the input (exit 1).
int model_failed(const Error& e)
{
  std::fprintf(stderr, "tensorpath: %s\n", e.message().c_str());
  return exit_code::FAILED;
}

/// `name` on `c` over `seeds` seeds (c.seed onwards) as one row: each figure's median, the CPU time of all runs.
Result<Row> run_model(const std::string& name, const models::IncastConfig& c, int seeds = 1)
{
  Row r;
  r.model = name;
  r.config = c;
  r.seeds = seeds;
  const auto t0 = std::clock();
  if (seeds == 1) { // one run: its own figures, goodput over time included
    auto one = models::run_incast_model(name, c);
    r.cpu_s = double(std::clock() - t0) / CLOCKS_PER_SEC;
    if (!one.ok()) return one.error();
    r.result = std::move(one.value());
    return r;
  }
  auto m = models::run_incast_model_median(name, c, seeds);
  r.cpu_s = double(std::clock() - t0) / CLOCKS_PER_SEC;
  if (!m.ok()) return m.error();
  r.result.completion = m->completion;
  r.result.first = m->first;
  r.result.goodput = m->goodput;
  r.result.drops = uint64_t(m->drops);
  r.result.timeouts = uint64_t(m->timeouts);
  r.result.fast_retransmits = uint64_t(m->fast_retransmits);
  r.result.peak_queue_bytes = uint64_t(m->peak_queue_bytes);
  return r;
}

json row_json(const Row& r)
{
  const auto& c = r.config;
  const auto& v = r.result;
  json o = {{"model", r.model},
            {"senders", c.senders},
            {"size", c.bytes_per_sender},
            {"buffer", c.buffer_bytes},
            {"rate_gbps", c.link_rate * 8e-9},
            {"delay_us", c.link_delay * 1e6},
            {"min_rto_ms", c.min_rto * 1e3},
            {"init_cwnd", c.initial_window},
            {"mss", c.mss},
            {"completion_s", v.completion},
            {"first_s", v.first},
            {"goodput_gbps", v.goodput * 8e-9},
            {"drops", v.drops},
            {"timeouts", v.timeouts},
            {"fast_retransmits", v.fast_retransmits},
            {"peak_queue_bytes", v.peak_queue_bytes},
            {"jitter_ns", c.start_jitter * 1e9},
            {"seeds", r.seeds},
            {"cpu_s", r.cpu_s}};
  if (!v.goodput_series.empty()) {
    std::vector<double> gbps;
    for (const double b : v.goodput_series)
      gbps.push_back(b * 8e-9);
    o["goodput_bin_us"] = c.goodput_bin * 1e6;
    o["goodput_series_gbps"] = gbps;
    o["goodput_series_truncated"] = v.goodput_series_truncated;
  }
  return o;
}

/// Goodput over time under the row (--goodput-bin): at most 200 bins in text, all of them with --json.
void print_series(const Row& r)
{
  const auto& v = r.result;
  if (v.goodput_series.empty()) return;
  std::printf("   goodput over time, Gb/s per %g us from the start:", r.config.goodput_bin * 1e6);
  const size_t shown = std::min<size_t>(v.goodput_series.size(), 200);
  for (size_t k = 0; k < shown; ++k)
    std::printf(" %.3g", v.goodput_series[k] * 8e-9);
  if (shown < v.goodput_series.size())
    std::printf(" ... (%zu bins in all: --json lists them)", v.goodput_series.size());
  std::printf("\n");
}

void print_head(const models::IncastConfig& c, long seeds)
{
  if (seeds > 1 || c.start_jitter > 0)
    std::printf("Each row: the median of %ld run(s), senders starting at offsets drawn from [0, %g) ns\n", seeds,
                c.start_jitter * 1e9);
  std::printf("TCP incast: senders -> one switch port of %llu bytes (drop-tail) -> receiver; every link %.4g Gb/s, "
              "%.4g us; TCP NewReno + SACK, MSS %d, initial window %d, minimum RTO %.4g ms\n",
              (unsigned long long)c.buffer_bytes, c.link_rate * 8e-9, c.link_delay * 1e6, c.mss, c.initial_window,
              c.min_rto * 1e3);
  std::printf(" %-11s %8s %12s %14s %12s %8s %9s %9s %12s %10s\n", "model", "senders", "bytes each", "completion[ms]",
              "goodput[Gb/s]", "drops", "timeouts", "fast rtx", "peak queue", "cpu[ms]");
}

void print_row(const Row& r)
{
  const auto& v = r.result;
  std::printf(" %-11s %8d %12llu %14.4f %12.4f %8llu %9llu %9llu %12llu %10.3f\n", r.model.c_str(), r.config.senders,
              (unsigned long long)r.config.bytes_per_sender, v.completion * 1e3, v.goodput * 8e-9,
              (unsigned long long)v.drops, (unsigned long long)v.timeouts, (unsigned long long)v.fast_retransmits,
              (unsigned long long)v.peak_queue_bytes, r.cpu_s * 1e3);
}

/// One configuration of the reference file: ns-3's runs of it (one per seed), and the model's on the same seeds.
struct ReferencePoint {
  models::IncastConfig config;
  std::vector<uint64_t> seeds;
  std::vector<std::vector<double>> offsets; ///< per seed: the starts ns-3 drew (empty: the model draws its own)
  std::vector<double> ns3_completion, ns3_wall, ns3_timeouts;
  std::string where; ///< file:line of its first row
};

/// One row of incast_reference's output, read strictly (json_input::Object: integers as integers in range, no
/// conversion): its configuration (seed and jitter included) and ns-3's figures; a LoadError names the field.
struct ReferenceRow {
  models::IncastConfig config;
  double completion = 0, wall = 0, timeouts = 0;
};

ReferenceRow reference_row(const json& j, const std::string& where)
{
  json_input::Object o(j, where, "");
  ReferenceRow row;
  auto& c = row.config;
  c.senders = int(o.integer("senders", 1, 65536));
  c.bytes_per_sender = uint64_t(o.integer("size", 1, long(1) << 50));
  c.buffer_bytes = uint64_t(o.integer("buffer", 1, long(1) << 50));
  c.initial_window = int(o.integer("init_cwnd", 1, 1000000));
  c.mss = int(o.integer("mss", 64, 65000));
  c.seed = uint64_t(o.integer("seed", 0, long(1) << 40, 1));
  c.link_delay = o.number("delay_us", 0, 1e7) * 1e-6;
  c.min_rto = o.number("min_rto_ms", 0, 1e9) * 1e-3;
  c.start_jitter = o.number("jitter_ns", 0, 1e12, 0) * 1e-9;
  c.start_stagger = o.number("stagger_ns", 0, 1e6, 0) * 1e-9;
  // The reference's SYN (it prints its size; ns-3 3.37 sends no MSS option: 56 bytes) and its departures from RFC
  // 6937 and Linux (IncastConfig::ns3_quirks): the model runs as the reference does.
  c.syn_bytes = int(o.integer("syn_bytes", 40, 1000, 56));
  c.ns3_quirks = true;
  if (o.has("start_offsets_ns")) { // the starts the reference drew: the model runs the same ones
    const auto& list = o.get("start_offsets_ns");
    if (!list.is_array() || list.size() != size_t(c.senders))
      json_input::fail(where, "start_offsets_ns", "one offset in ns per sender (" + std::to_string(c.senders) + ")",
                       list.dump());
    for (const auto& v : list) {
      if (!v.is_number_integer() || v.get<long long>() < 0)
        json_input::fail(where, "start_offsets_ns", "offsets in whole ns, >= 0", v.dump());
      c.start_offsets.push_back(double(v.get<long long>()) * 1e-9);
    }
  }
  const std::string rate = o.str("rate");
  char* end = nullptr;
  const double gbps = rate.size() > 4 ? std::strtod(rate.c_str(), &end) : 0;
  if (rate.size() < 5 || rate.substr(rate.size() - 4) != "Gbps" || end != rate.c_str() + rate.size() - 4 || !(gbps > 0))
    json_input::fail(where, "rate", "a rate in ns-3's \"<N>Gbps\" form", "\"" + rate + "\"");
  c.link_rate = gbps * 1e9 / 8;
  if (auto st = models::check_incast(c); !st.ok())
    json_input::fail(where, st.error().field, st.error().expected, st.error().got);
  row.completion = o.number("completion_s", 0, 1e12);
  if (!(row.completion > 0)) json_input::fail(where, "completion_s", "a positive time", std::to_string(row.completion));
  row.wall = o.number("wall_s", 0, 1e12, 0);
  row.timeouts = o.number("timeouts", 0, 1e18, 0);
  return row;
}

/// --reference FILE: the rows of the ns-3 program grouped by configuration (their seeds: runs with start jitter),
/// against the tcp-incast model run on as many seeds of its own. Medians are compared: one run of an incast is
/// chaotic at the nanosecond (whether a retransmission finds the port's last slot), the median of several is not.
int run_reference(const std::string& path, bool as_json, double tolerance)
{
  std::vector<ReferencePoint> points;
  const Status read = for_each_json_row(
      path, "--reference", "incast_reference's output", [&](const json& j, const std::string& where) -> Status {
        ReferenceRow row;
        try {
          row = reference_row(j, where);
        } catch (const json_input::LoadError& e) {
          return e.error;
        }
        const auto& c = row.config;
        const double ref = row.completion;
        auto same = [&](const ReferencePoint& p) {
          const auto &a = p.config, &b = c;
          return a.senders == b.senders && a.bytes_per_sender == b.bytes_per_sender &&
                 a.buffer_bytes == b.buffer_bytes && a.link_rate == b.link_rate && a.link_delay == b.link_delay &&
                 a.min_rto == b.min_rto && a.initial_window == b.initial_window && a.mss == b.mss &&
                 a.start_jitter == b.start_jitter && a.start_stagger == b.start_stagger && a.syn_bytes == b.syn_bytes;
        };
        auto it = std::find_if(points.begin(), points.end(), same);
        if (it == points.end()) {
          points.push_back({c, {}, {}, {}, {}, {}, where});
          it = points.end() - 1;
        }
        if (c.start_offsets.empty() != it->config.start_offsets.empty())
          return Error::at(where, "start_offsets_ns", "in every row of a configuration or in none",
                           c.start_offsets.empty() ? "missing here" : "here but not at " + it->where);
        it->offsets.push_back(c.start_offsets);
        if (std::find(it->seeds.begin(), it->seeds.end(), c.seed) != it->seeds.end())
          return Error::at(where, "seed", "one row per seed of a configuration",
                           std::to_string(c.seed) + " again (first at " + it->where + ")");
        it->seeds.push_back(c.seed);
        it->ns3_completion.push_back(ref);
        it->ns3_wall.push_back(row.wall);
        it->ns3_timeouts.push_back(row.timeouts);
        return {};
      });
  if (!read.ok()) return report_error(read.error());

  if (!as_json)
    std::printf(" %8s %8s %10s %6s | %12s %12s %8s | %23s | %8s %8s | %9s %9s\n", "senders", "buffer", "bytes", "seeds",
                "ns-3[ms]", "model[ms]", "error", "ns-3 range[ms]", "ns-3 TO", "model TO", "ns-3 wall", "model cpu");
  int within = 0, inside_range = 0;
  double ref_wall = 0, model_cpu = 0;
  for (const auto& p : points) {
    std::vector<double> model_completion, model_timeouts;
    double cpu = 0;
    for (size_t k = 0; k < p.seeds.size(); ++k) {
      auto c = p.config;
      c.seed = p.seeds[k];
      c.start_offsets = p.offsets[k];
      auto r = run_model("tcp-incast", c);
      if (!r.ok()) {
        Error e = r.error();
        e.file = p.where;
        return model_failed(e);
      }
      model_completion.push_back(r->result.completion);
      model_timeouts.push_back(double(r->result.timeouts));
      cpu += r->cpu_s;
    }
    const double ns3 = tp::median(p.ns3_completion), model = tp::median(model_completion);
    const double lo = *std::min_element(p.ns3_completion.begin(), p.ns3_completion.end());
    const double hi = *std::max_element(p.ns3_completion.begin(), p.ns3_completion.end());
    const double err = model / ns3 - 1;
    const bool ok = std::abs(err) <= tolerance;
    const bool in_range = model >= lo * (1 - tolerance) && model <= hi * (1 + tolerance);
    within += ok;
    inside_range += !ok && in_range;
    double wall = 0;
    for (const double w : p.ns3_wall)
      wall += w;
    ref_wall += wall;
    model_cpu += cpu;
    if (as_json) {
      json o = {{"senders", p.config.senders},
                {"size", p.config.bytes_per_sender},
                {"buffer", p.config.buffer_bytes},
                {"jitter_ns", p.config.start_jitter * 1e9},
                {"seeds", p.seeds},
                {"ns3_completion_s", p.ns3_completion},
                {"model_completion_s", model_completion},
                {"ns3_median_s", ns3},
                {"model_median_s", model},
                {"error", err},
                {"within_tolerance", ok},
                {"inside_ns3_range", in_range},
                {"ns3_timeouts_median", tp::median(p.ns3_timeouts)},
                {"model_timeouts_median", tp::median(model_timeouts)},
                {"ns3_wall_s", wall},
                {"model_cpu_s", cpu}};
      std::printf("%s\n", o.dump().c_str());
    } else {
      char range[64];
      std::snprintf(range, sizeof range, "%.4g .. %.4g", lo * 1e3, hi * 1e3);
      std::printf(" %8d %8llu %10llu %6zu | %12.4f %12.4f %+7.1f%% | %23s | %8.1f %8.1f | %8.3fs %8.4fs%s\n",
                  p.config.senders, (unsigned long long)p.config.buffer_bytes,
                  (unsigned long long)p.config.bytes_per_sender, p.seeds.size(), ns3 * 1e3, model * 1e3, err * 100,
                  range, tp::median(p.ns3_timeouts), tp::median(model_timeouts), wall, cpu,
                  ok         ? ""
                  : in_range ? "  miss (inside ns-3's own range)"
                             : "  MISS");
    }
  }
  if (!as_json)
    std::printf("%d of %zu medians within %.0f %% of ns-3's (%d more inside ns-3's seed-to-seed range); ns-3 %.2f s "
                "of wall time, the model %.4f s of CPU (%.0fx)\n",
                within, points.size(), tolerance * 100, inside_range, ref_wall, model_cpu,
                model_cpu > 0 ? ref_wall / model_cpu : 0.0);
  return within == int(points.size()) ? exit_code::OK : exit_code::FAILED;
}

/// --trace FILE: one run of the tcp-incast model with every event written to FILE in the lines of
/// validation/ns3/incast_reference --trace (docs/network-models.md), and its row on standard output.
int run_traced(models::IncastConfig c, const std::string& path, bool as_json)
{
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return report_io_error(Error::at(path, "--trace", "a file it can write", std::strerror(errno)));
  bool write_failed = false;
  c.trace = [&](const models::IncastTraceEvent& e) {
    static constexpr const char* KINDS[] = {"tx", "drop", "ack", "state"};
    const long long ns = std::llround(e.time * 1e9);
    const int n = e.kind == models::IncastTraceEvent::Kind::STATE
                      ? std::fprintf(f, "state %lld %d %s\n", ns, e.sender, e.state)
                      : std::fprintf(f, "%s %lld %d %lld\n", KINDS[int(e.kind)], ns, e.sender, (long long)e.segment);
    write_failed |= n < 0;
  };
  c.senders = std::max(c.senders, 1);
  auto r = run_model("tcp-incast", c);
  write_failed |= std::fclose(f) != 0;
  if (!r.ok()) return model_failed(r.error());
  if (write_failed) return report_io_error(Error::at(path, "--trace", "every trace line written", "a write failed"));
  if (as_json) {
    std::printf("%s\n", row_json(r.value()).dump().c_str());
  } else {
    print_head(c, 1);
    print_row(r.value());
    print_series(r.value());
  }
  if (std::fflush(stdout) != 0) return report_io_error(Error::msg("standard output: write failed"));
  return exit_code::OK;
}

int run_incast(const frontend::ParsedArgs& a)
{
  auto tolerance = a.get_number("tolerance", 0.10, 0, 10);
  if (!tolerance.ok()) return report_error(tolerance.error());
  if (a.has("tolerance") && !a.has("reference"))
    return report_error(
        Error::at("", "--tolerance", "--reference FILE with it (it bounds the comparison)", "no --reference"));
  for (const char* own : {"trace", "goodput-bin"}) // they would write or print nothing beside --reference
    if (a.has("reference") && a.has(own))
      return report_error(Error::at("", std::string("--") + own,
                                    "no --reference beside it (it runs the reference's rows)", "--reference too"));
  if (a.has("reference")) return run_reference(a.get("reference", ""), a.has("json"), tolerance.value());

  models::IncastConfig c;
  auto senders = frontend::parse_integer_list(a.get("senders", "8"), "--senders", 1, 65536, "sender counts");
  auto size = a.get_size("size", 1000000);
  auto buffer = a.get_size("buffer", 131072);
  auto rate = a.get_number("rate", 10, 1e-6, 1e6);
  auto delay = a.get_number("delay", 1, 0, 1e7);
  auto min_rto = a.get_number("min-rto", 200, 1e-3, 60000); // at most the 60 s maximum RTO
  auto init = a.get_int("init-cwnd", 10, 1, 1000000);
  auto mss = a.get_int("mss", 1448, 64, 65000);
  auto jitter = a.get_number("jitter", 0, 0, 1e9);
  auto stagger = a.get_number("stagger", 0, 0, 1e6);
  auto syn = a.get_int("syn-bytes", 60, 40, 1000);
  auto seeds = a.get_int("seeds", 1, 1, 1000);
  auto bin = a.get_number("goodput-bin", 0, 1e-3, 1e9);
  if (!senders.ok()) return report_error(senders.error());
  for (auto* r : {&jitter, &stagger})
    if (!r->ok()) return report_error(r->error());
  if (!syn.ok()) return report_error(syn.error());
  if (!bin.ok()) return report_error(bin.error());
  if (!seeds.ok()) return report_error(seeds.error());
  if (a.has("goodput-bin") && seeds.value() > 1)
    return report_error(
        Error::at("", "--goodput-bin", "one seed (a series is one run's)", std::to_string(seeds.value()) + " seeds"));
  if (seeds.value() > 1 && jitter.value() == 0)
    return report_error(Error::at("", "--seeds", "1 without --jitter (every seed would run the same incast)",
                                  std::to_string(seeds.value())));
  for (auto* r : {&size, &buffer})
    if (!r->ok()) return report_error(r->error());
  for (auto* r : {&rate, &delay, &min_rto})
    if (!r->ok()) return report_error(r->error());
  for (auto* r : {&init, &mss})
    if (!r->ok()) return report_error(r->error());
  c.bytes_per_sender = size.value();
  c.buffer_bytes = buffer.value();
  if (a.has("switch")) { // the one hot port's dynamic-threshold share of the switch profile's lossy pool
    if (a.has("buffer"))
      return report_error(
          Error::at("", "--buffer", "--buffer or --switch, not both (the switch gives the port's share)", "both"));
    auto sw = models::Catalog().network_switch(a.get("switch"));
    if (!sw.ok()) return report_error(sw.error());
    auto share = models::lossy_port_buffer(sw.value(), 1);
    if (!share.ok()) return report_error(share.error());
    c.buffer_bytes = share.value();
  }
  c.link_rate = rate.value() * 1e9 / 8;
  c.link_delay = delay.value() * 1e-6;
  c.min_rto = min_rto.value() * 1e-3;
  c.initial_window = int(init.value());
  c.mss = int(mss.value());
  c.start_jitter = jitter.value() * 1e-9;
  c.start_stagger = stagger.value() * 1e-9;
  c.syn_bytes = int(syn.value());
  c.ns3_quirks = a.has("ns3-quirks");
  c.goodput_bin = bin.value() * 1e-6;
  if (a.has("start-offsets")) {
    auto offsets = frontend::parse_integer_list(a.get("start-offsets", ""), "--start-offsets", 0, 1000000,
                                                "start offsets in ns, one per sender");
    if (!offsets.ok()) return report_error(offsets.error());
    for (const long o : offsets.value())
      c.start_offsets.push_back(double(o) * 1e-9);
    if (a.has("jitter") || a.has("stagger"))
      return report_error(Error::at("", "--start-offsets", "no --jitter or --stagger beside it (they are the starts)",
                                    a.has("jitter") ? "--jitter too" : "--stagger too"));
  }

  auto names = models::network_model_list(a.get("network-model", "flow,tcp-incast"), "incast", "--network-model");
  if (!names.ok()) return report_error(names.error());
  const auto& list = names.value();
  if (a.has("goodput-bin") && std::find(list.begin(), list.end(), "tcp-incast") == list.end())
    return report_error(Error::at("", "--goodput-bin",
                                  "tcp-incast among --network-model (flow's goodput is constant: its table row)",
                                  a.get("network-model", "")));

  for (const long n : senders.value()) { // refuse before printing anything
    c.senders = int(n);
    if (auto st = models::check_incast(c); !st.ok()) {
      Error e = st.error();
      std::replace(e.field.begin(), e.field.end(), '_', '-');
      e.field = e.field == "buffer" && a.has("switch") ? "--switch (its share of the lossy pool)" : "--" + e.field;
      return report_error(e);
    }
  }
  if (a.has("trace")) {
    if (senders.value().size() != 1 || names.value() != std::vector<std::string>{"tcp-incast"} || seeds.value() != 1)
      return report_error(Error::at("", "--trace", "one run: one --senders value, --network-model tcp-incast, one seed",
                                    std::to_string(senders.value().size()) + " sender count(s), models " +
                                        a.get("network-model", "flow,tcp-incast") + ", " +
                                        std::to_string(seeds.value()) + " seed(s)"));
    return run_traced(c, a.get("trace", ""), a.has("json"));
  }
  const bool as_json = a.has("json");
  if (!as_json) print_head(c, seeds.value());
  for (const long n : senders.value()) {
    c.senders = int(n);
    for (const auto& name : names.value()) {
      auto r = run_model(name, c, int(seeds.value()));
      if (!r.ok()) return model_failed(r.error());
      const Row& row = r.value();
      if (row.result.goodput_series_truncated)
        std::fprintf(stderr, "tensorpath: warning: the run outlasted %zu bins of goodput: the series stops at %g s\n",
                     models::MAX_GOODPUT_BINS, double(models::MAX_GOODPUT_BINS) * c.goodput_bin);
      if (as_json) {
        std::printf("%s\n", row_json(row).dump().c_str());
      } else {
        print_row(row);
        print_series(row);
      }
    }
  }
  if (std::fflush(stdout) != 0) return report_io_error(Error::msg("standard output: write failed"));
  return exit_code::OK;
}

} // namespace

Command incast_command()
{
  frontend::CommandSpec s;
  s.name = "incast";
  s.summary = "TCP incast: N senders to one receiver through one switch port, per network model side by side";
  s.usage =
      "[--senders N,N,...] [--size BYTES] [--buffer BYTES | --switch NAME] [--rate GBPS] [--delay US] [--min-rto MS] "
      "[--init-cwnd SEGMENTS] [--mss BYTES] [--jitter NS --seeds N] [--stagger NS | --start-offsets NS,...] "
      "[--syn-bytes BYTES] [--ns3-quirks] [--network-model flow,tcp-incast] [--goodput-bin US] [--trace FILE] "
      "[--json] | --reference FILE";
  s.options = {
      {"senders", 'n', true, "N,...", "senders (default 8); a list runs each"},
      {"size", 's', true, "BYTES", "bytes each sender sends (default 1000000)"},
      {"buffer", 'b', true, "BYTES", "bytes the switch's port toward the receiver holds, drop-tail (default 128K)"},
      {"switch", 0, true, "NAME",
       "a switch profile: the port holds its share of the switch's lossy pool, the only hot port under the "
       "dynamic threshold (alpha B / (1 + alpha)); in place of --buffer"},
      {"rate", 0, true, "GBPS", "every link's rate in Gb/s (default 10)"},
      {"delay", 0, true, "US", "every link's propagation delay in microseconds (default 1)"},
      {"min-rto", 0, true, "MS", "TCP's minimum retransmission time-out in ms (default 200, Linux's TCP_RTO_MIN)"},
      {"init-cwnd", 0, true, "SEGMENTS", "TCP's initial window (default 10, RFC 6928 / Linux)"},
      {"mss", 0, true, "BYTES", "TCP payload per segment (default 1448: a 1500-byte MTU with timestamps)"},
      {"network-model", 'm', true, "NAME,...",
       "network models, side by side (default flow,tcp-incast; known: " + models::network_model_names() + ")"},
      {"reference", 0, true, "FILE",
       "compare the tcp-incast model with the ns-3 rows in FILE (validation/ns3/incast_reference's output): rows "
       "grouped by configuration, the model run on the same seeds, medians compared, with ns-3's range and the "
       "speed ratio; exits 1 when a median is off by more than --tolerance (the other options do not apply)"},
      {"tolerance", 0, true, "FRACTION", "with --reference: the relative error a row may have (default 0.10)"},
      {"jitter", 0, true, "NS",
       "each sender starts at an offset drawn from [0, NS) nanoseconds (default 0: all at once)"},
      {"seeds", 0, true, "N", "run N seeds of the jitter (1..N) and print the median of each figure (default 1)"},
      {"start-offsets", 0, true, "NS,...",
       "each sender's start in ns, one per sender (a reference row's start_offsets_ns), instead of jitter"},
      {"stagger", 0, true, "NS",
       "sender i (from 0) starts i x NS nanoseconds after the first, before any jitter (default 0)"},
      {"syn-bytes", 0, true, "BYTES",
       "a SYN's IP packet (default 60: Linux's, with the MSS, SACK, window-scale and timestamp options; ns-3 3.37 "
       "sends 56)"},
      {"ns3-quirks", 0, false, "",
       "run TCP as the ns-3 reference does where it departs from RFC 6937 and Linux (docs/network-models.md); "
       "--reference sets it"},
      {"goodput-bin", 0, true, "US",
       "also print goodput over time: the payload the receiver got in order per bin of US microseconds (one seed; "
       "--json lists every bin)"},
      {"trace", 0, true, "FILE",
       "one tcp-incast run with every segment sent, ACK received, drop at the port and congestion state change "
       "written to FILE, in the lines of validation/ns3/incast_reference --trace"},
      {"json", 0, false, "", "one JSON object per row"},
  };
  s.details = "The flow model shares the port max-min: no drops, every sender done at N x S / rate. The tcp-incast\n"
              "model follows every segment through the port's buffer with TCP NewReno + SACK and the retransmission\n"
              "time-out at each sender (docs/network-models.md). A result above the port's payload rate, or not a\n"
              "positive time, is an error.";
  return {s, &run_incast};
}

} // namespace tp::cli
