// One copy of rank 0's ops for every allreduce rank (StepGraph::rank_template) against every rank's ops in the graph:
// the same job must give the same steps, breakdown, CPU use, op events (each rank's own names and devices) and
// transfer records, to the bit, with GPU reductions and MaTEx's host reductions (a rank's local SEND/RECV pairs),
// ranks on different GPUs of 8-GPU hosts, Horovod's fusion, protocol and analytical rings.
#include "core/common/isolated_run.hpp"
#include "core/transports/mpi/mpi.hpp"
#include "core/transports/transport.hpp"
#include "sim/training_job.hpp"
#include "small_models.hpp"
#include "test_cluster.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>

using namespace tp;

namespace {

std::string g17(double x)
{
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", x);
  return b;
}

/// Everything a job reports, printed exactly; events and records sorted so that only their content counts.
std::string everything(const sim::TrainingResult& r)
{
  std::string out = "steps";
  for (double s : r.step_seconds)
    out += " " + g17(s);
  const auto& b = r.breakdown;
  out += "\nbreakdown";
  for (double v :
       {b.compute, b.copy, b.registration, b.pcie, b.network, b.aggregate_apply, b.waiting, b.cpu, b.retry, b.gpu_busy})
    out += " " + g17(v);
  out += "\nrounds " + std::to_string(r.negotiation_rounds) + " collectives " + std::to_string(r.collectives_run);
  std::vector<std::string> lines;
  for (const auto& c : r.cpu_use)
    lines.push_back("cpu " + c.process + " " + g17(c.rpc_cpu_seconds) + " " + g17(c.rpc_messages) + " " +
                    g17(c.work_cpu_seconds));
  for (const auto& e : r.events)
    lines.push_back("event " + e.name + " " + e.device + " " + std::to_string(int(e.kind)) + " " + g17(e.start) + " " +
                    g17(e.end) + " " + std::to_string(e.bytes));
  for (const auto& x : r.records.records())
    lines.push_back("record " + x.key + " " + x.local_task + " " + x.peer_task + " " + std::to_string(x.bytes) + " " +
                    g17(x.t_start) + " " + g17(x.t_end));
  std::sort(lines.begin(), lines.end());
  for (const auto& l : lines)
    out += "\n" + l;
  return out;
}

std::string run_in_child(const models::ClusterProfile& cl, sim::TrainingJob j, bool share)
{
  j.share_rank_ops = share;
  auto r = run_isolated([&]() -> Result<std::string> {
    transports::register_builtin_transports();
    auto res = sim::run_training_job(cl, test::conv_fc_model(64 << 10, false), j);
    if (!res.ok()) return res.error();
    if (res->rank_template != share) return Error::at("", "rank_template", share ? "true" : "false", "the other");
    return everything(res.value());
  });
  REQUIRE(r.ok());
  return r.value();
}

sim::TrainingJob job(const std::string& transport, int ranks, int per_host)
{
  sim::TrainingJob j;
  j.transport = transport;
  j.layout.mode = sim::TrainingLayout::Mode::ALLREDUCE;
  j.layout.workers = ranks;
  j.layout.ps_tasks = 0;
  j.layout.ranks_per_host = per_host;
  j.steps = 3;
  j.collect_events = true;
  return j;
}

void check_same(const models::ClusterProfile& cl, const sim::TrainingJob& j)
{
  const std::string shared = run_in_child(cl, j, true);
  const std::string full = run_in_child(cl, j, false);
  CHECK(shared == full);
  // The events name every rank's own ops: rank 5's kernels, on its own GPU.
  CHECK(shared.find("event rank5/") != std::string::npos);
}

models::ClusterProfile eight_gpu_hosts(int hosts)
{
  models::HostProfile h = test::test_host_8_gpus_two_sockets();
  h.sockets[0].cpu.cores = h.sockets[1].cpu.cores = 8;
  return test::test_cluster(hosts, h);
}

} // namespace

TEST_CASE("rank template: Baidu's coordinator, protocol rings, four ranks on each of two 8-GPU hosts", "[training]")
{
  sim::TrainingJob j = job("verbs_v2", 8, 4);
  j.collectives.tick_seconds = 5e-3;
  check_same(eight_gpu_hosts(2), j);
}

TEST_CASE("rank template: analytical rings on the mpi transport, Horovod's fusion", "[training]")
{
  sim::TrainingJob j = job("mpi", 16, 8);
  j.options.own<transports::MpiOptions>().optimal_path = true;
  j.options.own<transports::MpiOptions>().nonblocking_recv = true;
  j.collective_mode = sim::FabricMode::ANALYTICAL;
  j.collectives.fusion_threshold = 64 << 20;
  check_same(eight_gpu_hosts(2), j);
}

TEST_CASE("rank template: MaTEx, host reductions and the initial broadcast", "[training]")
{
  sim::TrainingJob j = job("mpi", 6, 3);
  j.collectives.coordinator = false;
  j.initial_broadcast = true;
  j.layout.allreduce_on_host = true;
  const std::string shared = run_in_child(eight_gpu_hosts(2), j, true);
  CHECK(shared == run_in_child(eight_gpu_hosts(2), j, false));
  // Each rank's local SEND/RECV pairs (GPU -> host -> GPU) are its own.
  CHECK(shared.find("event recv/grad/conv/b/rank4@/job:worker/replica:0/task:4/device:CPU:0 ") != std::string::npos);
}
