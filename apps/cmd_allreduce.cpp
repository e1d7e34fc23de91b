// `tensorpath allreduce`: one ring allreduce across N ranks of a simulated cluster, in the protocol, flow or
// analytical fabric mode (sim/fabric_modes.hpp), against the alpha-beta ring formula.
#include "apps/commands.hpp"
#include "apps/lib/hw_resolve.hpp"
#include "apps/lib/progress_line.hpp"
#include "core/common/isolated_run.hpp"
#include "core/transports/mpi/mpi.hpp"
#include "models/catalog.hpp"
#include "sim/fabric_modes.hpp"
#include "sim/job_estimate.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <cstdio>
#include <vector>

namespace tp::cli {

namespace {

int run_allreduce_cmd(const frontend::ParsedArgs& a)
{
  models::Catalog cat;
  sim::AllreduceJob job;
  auto ranks = a.get_int("ranks", 8, 1, 1 << 20);
  auto rph = a.get_int("ranks-per-host", 1, 1, 64);
  auto size = a.get_size("size", 1ull << 30);
  for (auto* r : {&ranks, &rph})
    if (!r->ok()) return report_error(r->error());
  if (!size.ok()) return report_error(size.error());
  job.ranks = int(ranks.value());
  job.ranks_per_host = int(rph.value());
  job.bytes = double(size.value());
  job.gpu = a.has("gpu");
  job.fold_alike_hosts = job.fold_rings = !a.has("every-host");
  job.transport = a.get("transport", "mpi");
  job.options.own<transports::MpiOptions>().optimal_path = true;
  job.options.own<transports::MpiOptions>().nonblocking_recv = true;
  job.options.own<transports::MpiOptions>().typed_counts = true; // Baidu's ring: MPI_FLOAT counts
  std::vector<sim::FabricMode> modes;
  const std::string m = a.get("mode", "analytical");
  if (m == "all")
    modes = {sim::FabricMode::ANALYTICAL, sim::FabricMode::FLOW, sim::FabricMode::PROTOCOL};
  else {
    auto fm = sim::parse_fabric_mode(m);
    if (!fm.ok()) return report_error(fm.error());
    modes = {fm.value()};
  }
  if (a.has("every-host") && std::find(modes.begin(), modes.end(), sim::FabricMode::ANALYTICAL) == modes.end())
    return report_error(
        Error::at("", "--every-host", "--mode analytical or all (only the analytical ring is folded)", "--mode " + m));
  const int hosts = (job.ranks + job.ranks_per_host - 1) / job.ranks_per_host;
  auto cluster = frontend::cluster_for(cat, a.get("hw", "connectx4-edr-ib"), hosts, a.get("switch"));
  if (!cluster.ok()) return report_error(cluster.error());
  // Every mode is a process of its own, one after the other: refuse the whole before the first starts.
  JobEstimate need;
  need.job = "tensorpath allreduce";
  std::vector<double> mode_seconds, ring_seconds; // each mode's estimate, and of it the ring's messages
  for (auto mode : modes) {
    sim::AllreduceJob j = job;
    j.mode = mode;
    auto e = sim::estimate_allreduce(cluster.value(), j);
    e.rename_parameter("ranks =", "--ranks");
    e.rename_parameter("hosts in the cluster", "--hw: hosts in the cluster");
    mode_seconds.push_back(e.seconds);
    ring_seconds.push_back(e.terms.back().seconds);
    need.then(e);
  }
  if (auto st = check_budget(need, "use fewer --ranks" + std::string(m == "analytical" ? "" : " or --mode analytical"));
      !st.ok())
    return report_error(st.error());
  // A large allreduce (a second or more) shows its progress: modes done and the ring's messages.
  frontend::ProgressLine line("allreduce", frontend::ProgressLine::stderr_is_terminal() && need.seconds >= 1);
  line.set_estimate(need.seconds);
  std::printf("Ring allreduce of %.0f bytes over %d ranks (%d per host, %s memory) on %s\n\n", job.bytes, job.ranks,
              job.ranks_per_host, job.gpu ? "GPU" : "host", cluster->host(0).name.c_str());
  std::printf("%-11s %12s %12s %12s %10s %11s %14s\n", "mode", "time[ms]", "busbw[GB/s]", "a-b[ms]", "vs a-b",
              "wall[s]", "messages/s");
  int status = 0;
  double done_seconds = 0;
  std::string how; // how the analytical ring was timed
  for (size_t k = 0; k < modes.size(); ++k) {
    const auto mode = modes[k];
    sim::AllreduceJob j = job;
    j.mode = mode;
    const models::ClusterProfile cl = cluster.value();
    const std::string what =
        std::string(sim::to_string(mode)) + " mode" +
        (modes.size() > 1 ? " (" + std::to_string(k + 1) + "/" + std::to_string(modes.size()) + ")" : std::string());
    auto progress = [&](double done, double total) {
      const double f = total > 0 ? done / total : 0;
      line.update((done_seconds + mode_seconds[k] - ring_seconds[k] + f * ring_seconds[k]) / need.seconds,
                  what + ": " + human_count(done) + "/" + human_count(total) + " messages");
    };
    line.update(done_seconds / need.seconds, what);
    auto child = run_isolated(
        [&]() -> Result<std::string> {
          auto r = sim::run_allreduce(cl, j);
          if (!r.ok()) return r.error();
          return sim::to_text(r.value());
        },
        0, line.enabled() ? ProgressListener(progress) : ProgressListener());
    done_seconds += mode_seconds[k];
    line.finish();
    if (!child.ok()) {
      std::printf("%-11s ERROR %s\n", sim::to_string(mode), child.error().message().c_str());
      status = 1;
      continue;
    }
    auto result = sim::allreduce_result_from_text(child.value());
    if (!result.ok()) {
      std::printf("%-11s ERROR %s\n", sim::to_string(mode), result.error().message().c_str());
      status = 1;
      continue;
    }
    const double secs = result->seconds, wall = result->wall_seconds, alpha = result->alpha, beta = result->beta;
    const bool closed_form = result->closed_form;
    const int machines = result->platform_machines;
    if (closed_form)
      how = fmt::format("analytical: no two ranks' routes share a link, so the ring was timed by its recurrence "
                        "(the same result as message by message){}.\n",
                        machines < int(cl.host_count()) && machines > 0
                            ? fmt::format(", on routes read from {} of the {} identical hosts", machines,
                                          (job.ranks + job.ranks_per_host - 1) / job.ranks_per_host)
                            : std::string());
    else if (mode == sim::FabricMode::ANALYTICAL && result->contention_bound > 0)
      how = fmt::format("analytical: ranks' routes share links, but the ring is latency-bound: it was timed by its "
                        "recurrence with every link free, which sharing can lengthen by at most {:.3f} us ({:.1e} of "
                        "it; docs/model.md, \"Steady steps counted\").\n",
                        result->contention_bound * 1e6, result->contention_bound / secs);
    else if (mode == sim::FabricMode::ANALYTICAL)
      how = fmt::format(
          "analytical: ranks' routes share links, so the ring was timed message by message {}, one message after the "
          "other on a shared link: a bandwidth-bound ring can take up to 1.8x the flow model's time (docs/model.md, "
          "\"Fabric modes\"; --mode flow shares them).\n",
          result->folded_ranks > 0
              ? fmt::format("on the first {} ranks (two hosts), whose routes every host's repeat (docs/model.md, "
                            "\"Folded rings\")",
                            result->folded_ranks)
              : std::string("on every host"));
    const double ab = collectives::ring_allreduce_alpha_beta(job.ranks, job.bytes, alpha, beta);
    const double busbw = secs > 0 ? 2.0 * (job.ranks - 1) / job.ranks * job.bytes / secs : 0;
    // Messages timed one by one per wall second (the steady-state tries and folds, not the steps they count); the
    // recurrence times none.
    const uint64_t timed = result->simulated_messages;
    const std::string rate = closed_form || result->contention_bound > 0 || wall <= 0 || timed == 0
                                 ? "-"
                                 : fmt::format("{:.0f}", double(timed) / wall);
    std::printf("%-11s %12.3f %12.3f %12.3f %10.4f %11.3f %14s\n", sim::to_string(mode), secs * 1e3, busbw * 1e-9,
                ab * 1e3, ab > 0 ? secs / ab : 0.0, wall, rate.c_str());
  }
  std::printf(
      "\nbusbw = 2 (N-1)/N x bytes / time; a-b = 2 (N-1) (alpha + bytes/N / beta) with rank 0 -> 1's path:\n"
      "its fixed costs and slowest stage. flow, analytical: the mpi transport's data path, plus the ring's adds.\n"
      "protocol: the ring through the transport (--transport, default mpi), after one warm-up allreduce.\n%s",
      how.c_str());
  return status;
}

} // namespace

Command allreduce_command()
{
  frontend::CommandSpec s;
  s.name = "allreduce";
  s.summary = "one ring allreduce across N simulated ranks, in the protocol, flow or analytical fabric mode";
  s.usage = "[--ranks N] [--size BYTES] [--mode analytical|flow|protocol|all] [--hw PROFILE] [options]";
  s.options = {
      {"ranks", 'n', true, "N", "ranks (default 8)"},
      {"ranks-per-host", 0, true, "K", "ranks per host (default 1)"},
      {"size", 's', true, "BYTES", "tensor size, K/M/G suffixes (default 1G)"},
      {"mode", 0, true, "M",
       "analytical (own event calendar, default), flow (one SimGrid comm per message), protocol (through the "
       "transport), or all"},
      {"hw", 0, true, "PROFILE", "NIC, host or cluster profile (default connectx4-edr-ib)"},
      {"switch", 0, true, "NAME", "switch profile (default back-to-back)"},
      {"gpu", 0, false, "", "tensors in GPU memory (rank k of a host on GPU k)"},
      {"transport", 0, true, "NAME", "protocol mode: the transport (default mpi, optimal path)"},
      {"every-host", 0, false, "",
       "analytical mode: build every host's platform even where the routes could be read from three identical "
       "hosts, and time a ring on shared links on every rank even where it could be folded onto two hosts' (the "
       "same result, slower: a check of the folding)"},
  };
  s.details = "Example: tensorpath allreduce --ranks 256 --size 1G --mode all\n"
              "A run beyond the budget (memory, TENSORPATH_TIME_LIMIT) is refused with its estimate (docs/cli.md).";
  return {s, &run_allreduce_cmd};
}

} // namespace tp::cli
