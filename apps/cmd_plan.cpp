// `tensorpath plan`: answer a capacity question from sweep rows (or by running the sweep): which options reach a
// target, cheapest first, with each one's bottleneck.
#include "apps/commands.hpp"
#include "apps/lib/plan.hpp"
#include "apps/lib/sweep.hpp"
#include "models/catalog.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

namespace tp::cli {

namespace {

int run_plan(const frontend::ParsedArgs& a)
{
  if (a.positional().size() != 1)
    return report_error(Error::at("", "tensorpath plan", "one rows file (.jsonl) or sweep file",
                                  std::to_string(a.positional().size())));
  const std::string input = a.positional()[0];
  std::string rows_path = input;
  if (input.size() < 6 || input.substr(input.size() - 6) != ".jsonl") {
    // A sweep file: run it (or the part not yet in --out) first.
    auto spec = frontend::load_sweep(input);
    if (!spec.ok()) return report_error(spec.error());
    frontend::SweepOptions o;
    o.out = a.get("out", (std::filesystem::temp_directory_path() / (spec->name + ".rows.jsonl")).string());
    o.resume = true;
    auto jobs = a.get_int("jobs", 1, 1, 1024);
    if (!jobs.ok()) return report_error(jobs.error());
    o.jobs = int(jobs.value());
    o.progress = ::isatty(2);
    auto sum = frontend::run_sweep(spec.value(), o);
    if (!sum.ok()) return report_error(sum.error());
    if (!sum->lost.empty()) return report_io_error(Error::msg(sum->lost));
    std::printf("sweep %s: %zu point(s) (%zu run now) in %s\n\n", spec->name.c_str(), sum->total, sum->ran,
                o.out.c_str());
    rows_path = o.out;
  }
  auto rows = frontend::read_plan_rows(rows_path);
  if (!rows.ok()) return report_error(rows.error());
  frontend::PlanQuery q;
  if (a.has("target"))
    if (auto st = frontend::parse_target(a.get("target"), q); !st.ok()) return report_error(st.error());
  for (const auto& w : a.get_all("where")) {
    const auto eq = w.find('=');
    if (eq == std::string::npos || eq == 0)
      return report_error(Error::at("", "--where", "FIELD=VALUE (e.g. model=resnet50)", "\"" + w + "\""));
    q.where.emplace_back(w.substr(0, eq), w.substr(eq + 1));
  }
  q.cost = a.get("cost", "nic_line_rate");
  if (auto st = frontend::check_query(rows.value(), q, rows_path); !st.ok()) return report_error(st.error());
  models::Catalog cat;
  std::map<std::string, double> line_rates;
  std::string cost_error;
  auto cost_of = [&](const frontend::PlanRow& r) -> double {
    if (q.cost == "nic_line_rate") {
      const std::string nic = r.param("nic");
      if (nic.empty()) {
        cost_error = "the rows have no \"nic\" param: choose --cost (a param or a metric)";
        return NAN;
      }
      if (!line_rates.count(nic)) {
        auto n = cat.nic(nic);
        line_rates[nic] = n.ok() ? n->line_rate * 8e-9 : NAN; // Gb/s
      }
      return line_rates[nic];
    }
    if (auto it = r.metrics.find(q.cost); it != r.metrics.end()) return it->second;
    const std::string v = r.param(q.cost);
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end) cost_error = "--cost " + q.cost + ": not a numeric param or metric of the rows";
    return x;
  };
  auto options = frontend::rank_options(rows.value(), q, cost_of);
  if (!cost_error.empty()) return report_error(Error::at(rows_path, "--cost", "a numeric cost", cost_error));
  auto top = a.get_int("top", 10, 1, 100000);
  if (!top.ok()) return report_error(top.error());
  std::fputs(frontend::plan_table(options, q, size_t(top.value())).c_str(), stdout);
  return 0;
}

} // namespace

Command plan_command()
{
  frontend::CommandSpec s;
  s.max_positionals = 1;
  s.name = "plan";
  s.summary = "answer a capacity question from sweep rows: which options reach a target, cheapest first";
  s.usage = "ROWS.jsonl|SWEEP.json [--target METRIC>=VALUE] [--where FIELD=VALUE ...] [--cost C] [--top N]";
  s.options = {
      {"target", 't', true, "EXPR", "the goal, e.g. scaling_efficiency>=0.9 (default) or step_ms<=500"},
      {"where", 'w', true, "F=V", "only rows whose param F is V (repeatable), e.g. --where model=resnet50"},
      {"cost", 'c', true, "C",
       "what 'cheapest' means: nic_line_rate (default: the NIC profile's rate, Gb/s), or a param or metric"},
      {"top", 'n', true, "N", "options shown (default 10)"},
      {"out", 'o', true, "FILE", "with a sweep file: its rows file (default: a temporary one; resumed if it exists)"},
      {"jobs", 'j', true, "N", "with a sweep file: worker processes"},
  };
  s.details = "Example: which NIC and transport give ResNet-50 on 16 GPUs 90 % scaling at the lowest line rate?\n"
              "  tensorpath plan scenarios/sweeps/capacity-vgg16-resnet50.json -j 2 --where model=resnet50 \\\n"
              "    --where workers=4 --where gpus_per_worker=4 --target scaling_efficiency>=0.9\n"
              "The bottleneck is the largest part of the step's critical path (training and data_parallel rows),\n"
              "and for data_parallel rows whose communication shows, what bounds it (NICs, NVLink, a fabric link).\n"
              "Today's clusters: tensorpath plan scenarios/sweeps/plan-resnet50-h100.json -j 2 --where nodes=32 \\\n"
              "    --where batch=32 --target scaling_efficiency>=0.9";
  return {s, &run_plan};
}

} // namespace tp::cli
