// `tensorpath incast`: N senders push S bytes each to one receiver through one switch port (TCP incast), on the
// network models that can run it (models/network_models.hpp), side by side; or, with --reference, the tcp-incast
// model against the packet-level ns-3 rows of validation/ns3/incast_reference (docs/network-models.md).
#include "apps/commands.hpp"
#include "core/common/suggest.hpp"
#include "models/congestion/tcp_incast.hpp"
#include "models/network_models.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace tp::cli {

namespace {

using nlohmann::json;

struct Row {
  std::string model;
  models::IncastConfig config;
  models::IncastResult result;
  double cpu_s = 0;
};

Result<std::vector<int>> parse_senders(const std::string& text)
{
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto n = frontend::parse_integer(item, "--senders", 1, 65536);
    if (!n.ok()) return n.error();
    out.push_back(int(n.value()));
  }
  if (out.empty()) return Error::at("", "--senders", "a comma-separated list of sender counts (1 to 65536)", "\"\"");
  return out;
}

/// The payload rate no incast can beat: the port's rate times the share of payload in each packet on the wire.
double payload_line_rate(const models::IncastConfig& c)
{
  return c.link_rate * double(c.mss) / double(c.mss + c.header_bytes + c.framing_bytes);
}

/// A result that cannot be right (goodput above the port's payload rate, a NaN, nothing delivered) is an error.
Status check_result(const Row& r)
{
  const auto& v = r.result;
  if (!std::isfinite(v.completion) || !(v.completion > 0) || !std::isfinite(v.goodput))
    return Error::msg("incast, model " + r.model + ": completion " + std::to_string(v.completion) +
                      " s: not a positive, finite time (a model error; please report it)");
  if (v.goodput > payload_line_rate(r.config) * (1 + 1e-9))
    return Error::msg("incast, model " + r.model + ": goodput " + std::to_string(v.goodput * 8e-9) +
                      " Gb/s above the port's payload rate " + std::to_string(payload_line_rate(r.config) * 8e-9) +
                      " Gb/s (a model error; please report it)");
  return ok_status();
}

Result<Row> run_model(const std::string& name, const models::IncastConfig& c)
{
  Row r;
  r.model = name;
  r.config = c;
  const auto t0 = std::clock();
  if (name == "flow") {
    r.result = models::max_min_incast(c);
  } else {
    auto v = models::simulate_tcp_incast(c);
    if (!v.ok()) return v.error();
    r.result = std::move(v.value());
  }
  r.cpu_s = double(std::clock() - t0) / CLOCKS_PER_SEC;
  if (auto st = check_result(r); !st.ok()) return st.error();
  return r;
}

json row_json(const Row& r)
{
  const auto& c = r.config;
  const auto& v = r.result;
  return {{"model", r.model},
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
          {"cpu_s", r.cpu_s}};
}

void print_head(const models::IncastConfig& c)
{
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

/// --reference FILE: every row of the ns-3 program, against the tcp-incast model on the same configuration.
int run_reference(const std::string& path, bool as_json, double tolerance)
{
  std::ifstream in(path);
  if (!in)
    return report_error(
        Error::at(path, "--reference", "a readable file of JSON rows (incast_reference's output)", "cannot open it"));
  std::string line;
  int line_no = 0, within = 0, rows = 0;
  double ref_wall = 0, model_cpu = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j = json::parse(line, nullptr, false);
    const std::string where = path + ":" + std::to_string(line_no);
    if (j.is_discarded() || !j.is_object())
      return report_error(Error::at(where, "", "one JSON object per line (incast_reference's output)",
                                    "\"" + line.substr(0, 60) + "\""));
    models::IncastConfig c;
    try {
      c.senders = j.at("senders").get<int>();
      c.bytes_per_sender = j.at("size").get<uint64_t>();
      c.buffer_bytes = j.at("buffer").get<uint64_t>();
      const std::string rate = j.at("rate").get<std::string>();
      if (rate.size() < 5 || rate.substr(rate.size() - 4) != "Gbps")
        return report_error(Error::at(where, "rate", "a rate in ns-3's \"<N>Gbps\" form", "\"" + rate + "\""));
      c.link_rate = std::stod(rate.substr(0, rate.size() - 4)) * 1e9 / 8;
      c.link_delay = j.at("delay_us").get<double>() * 1e-6;
      c.min_rto = j.at("min_rto_ms").get<double>() * 1e-3;
      c.initial_window = j.at("init_cwnd").get<int>();
      c.mss = j.at("mss").get<int>();
    } catch (const std::exception& e) {
      return report_error(Error::at(where, "",
                                    "the fields senders, size, buffer, rate, delay_us, min_rto_ms, "
                                    "init_cwnd, mss, completion_s, timeouts, wall_s",
                                    e.what()));
    }
    const double ref = j.value("completion_s", -1.0);
    const double ref_w = j.value("wall_s", 0.0);
    if (!(ref > 0)) return report_error(Error::at(where, "completion_s", "a positive time", std::to_string(ref)));
    auto r = run_model("tcp-incast", c);
    if (!r.ok()) {
      Error e = r.error();
      e.file = where;
      return report_error(e);
    }
    const double err = r->result.completion / ref - 1;
    if (rows == 0 && !as_json)
      std::printf(" %8s %8s %10s | %14s %14s %8s | %8s %8s | %9s %9s\n", "senders", "buffer", "bytes", "ns-3[ms]",
                  "model[ms]", "error", "ns-3 TO", "model TO", "ns-3 wall", "model cpu");
    ++rows;
    within += std::abs(err) <= tolerance;
    ref_wall += ref_w;
    model_cpu += r->cpu_s;
    if (as_json) {
      json o = row_json(r.value());
      o["ns3_completion_s"] = ref;
      o["ns3_timeouts"] = j.value("timeouts", 0);
      o["ns3_wall_s"] = ref_w;
      o["error"] = err;
      std::printf("%s\n", o.dump().c_str());
    } else {
      std::printf(" %8d %8llu %10llu | %14.4f %14.4f %+7.1f%% | %8llu %8llu | %8.3fs %8.4fs\n", c.senders,
                  (unsigned long long)c.buffer_bytes, (unsigned long long)c.bytes_per_sender, ref * 1e3,
                  r->result.completion * 1e3, err * 100, (unsigned long long)j.value("timeouts", 0ull),
                  (unsigned long long)r->result.timeouts, ref_w, r->cpu_s);
    }
  }
  if (rows == 0) return report_error(Error::at(path, "", "at least one row", "none"));
  if (!as_json)
    std::printf("%d of %d within %.0f %% of ns-3; ns-3 %.2f s of wall time, the model %.4f s of CPU (%.0fx)\n", within,
                rows, tolerance * 100, ref_wall, model_cpu, model_cpu > 0 ? ref_wall / model_cpu : 0.0);
  return within == rows ? exit_code::OK : exit_code::FAILED;
}

int run_incast(const frontend::ParsedArgs& a)
{
  auto tolerance = a.get_number("tolerance", 0.10, 0, 10);
  if (!tolerance.ok()) return report_error(tolerance.error());
  if (a.has("reference")) return run_reference(a.get("reference", ""), a.has("json"), tolerance.value());

  models::IncastConfig c;
  auto senders = parse_senders(a.get("senders", "8"));
  auto size = a.get_size("size", 1000000);
  auto buffer = a.get_size("buffer", 131072);
  auto rate = a.get_number("rate", 10, 1e-6, 1e6);
  auto delay = a.get_number("delay", 1, 0, 1e7);
  auto min_rto = a.get_number("min-rto", 200, 1e-3, 1e6);
  auto init = a.get_int("init-cwnd", 10, 1, 1000000);
  auto mss = a.get_int("mss", 1448, 64, 65000);
  if (!senders.ok()) return report_error(senders.error());
  for (auto* r : {&size, &buffer})
    if (!r->ok()) return report_error(r->error());
  for (auto* r : {&rate, &delay, &min_rto})
    if (!r->ok()) return report_error(r->error());
  for (auto* r : {&init, &mss})
    if (!r->ok()) return report_error(r->error());
  c.bytes_per_sender = size.value();
  c.buffer_bytes = buffer.value();
  c.link_rate = rate.value() * 1e9 / 8;
  c.link_delay = delay.value() * 1e-6;
  c.min_rto = min_rto.value() * 1e-3;
  c.initial_window = int(init.value());
  c.mss = int(mss.value());

  std::vector<std::string> names;
  {
    std::stringstream ss(a.get("network-model", "flow,tcp-incast"));
    std::string item;
    while (std::getline(ss, item, ',')) {
      auto m = models::network_model_for(item, "incast", "--network-model");
      if (!m.ok()) return report_error(m.error());
      names.push_back(item);
    }
    if (names.empty())
      return report_error(Error::at("", "--network-model", "one or more of " + models::network_model_names(), "\"\""));
  }

  for (const int n : senders.value()) { // refuse before printing anything
    c.senders = n;
    if (auto st = models::check_incast(c); !st.ok()) {
      Error e = st.error();
      std::replace(e.field.begin(), e.field.end(), '_', '-');
      e.field = "--" + e.field;
      return report_error(e);
    }
  }
  const bool as_json = a.has("json");
  if (!as_json) print_head(c);
  for (const int n : senders.value()) {
    c.senders = n;
    for (const auto& name : names) {
      auto r = run_model(name, c);
      if (!r.ok()) return report_error(r.error());
      if (as_json) {
        std::printf("%s\n", row_json(r.value()).dump().c_str());
      } else {
        print_row(r.value());
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
  s.usage = "[--senders N,N,...] [--size BYTES] [--buffer BYTES] [--rate GBPS] [--delay US] [--min-rto MS] "
            "[--init-cwnd SEGMENTS] [--mss BYTES] [--network-model flow,tcp-incast] [--json] | --reference FILE";
  s.options = {
      {"senders", 'n', true, "N,...", "senders (default 8); a list runs each"},
      {"size", 's', true, "BYTES", "bytes each sender sends (default 1000000)"},
      {"buffer", 'b', true, "BYTES", "bytes the switch's port toward the receiver holds, drop-tail (default 128K)"},
      {"rate", 0, true, "GBPS", "every link's rate in Gb/s (default 10)"},
      {"delay", 0, true, "US", "every link's propagation delay in microseconds (default 1)"},
      {"min-rto", 0, true, "MS", "TCP's minimum retransmission time-out in ms (default 200, Linux's TCP_RTO_MIN)"},
      {"init-cwnd", 0, true, "SEGMENTS", "TCP's initial window (default 10, RFC 6928 / Linux)"},
      {"mss", 0, true, "BYTES", "TCP payload per segment (default 1448: a 1500-byte MTU with timestamps)"},
      {"network-model", 'm', true, "NAME,...",
       "network models, side by side (default flow,tcp-incast; known: " + models::network_model_names() + ")"},
      {"reference", 0, true, "FILE",
       "compare the tcp-incast model with the ns-3 rows in FILE (validation/ns3/incast_reference's output), row by "
       "row, with the speed ratio; exits 1 when a row is off by more than --tolerance"},
      {"tolerance", 0, true, "FRACTION", "with --reference: the relative error a row may have (default 0.10)"},
      {"json", 0, false, "", "one JSON object per row"},
  };
  s.details = "The flow model shares the port max-min: no drops, every sender done at N x S / rate. The tcp-incast\n"
              "model follows every segment through the port's buffer with TCP NewReno + SACK and the retransmission\n"
              "time-out at each sender (docs/network-models.md). A result above the port's payload rate, or not a\n"
              "positive time, is an error.";
  return {s, &run_incast};
}

} // namespace tp::cli
