// Step graphs: PS placement, partitioning into SEND/RECV pairs, op counts per mode, bad layouts.
#include "core/rendezvous/rendezvous_key.hpp"
#include "core/training/step_graph.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace tp::training;

namespace {

/// Three layers; variables of 400, 40, 40 and 40 bytes (the first layer has two).
TrainingModel toy()
{
  TrainingModel m;
  m.name = "toy";
  m.batch = 8;
  m.layers = {{"l0", 0.001, 0.002, {{"l0/w", 400, true}, {"l0/b", 40, true}}},
              {"l1", 0.001, 0.002, {{"l1/w", 40, true}}},
              {"l2", 0.001, 0.002, {{"l2/w", 40, true}}}};
  return m;
}

size_t count(const StepGraph& sg, OpKind k)
{
  size_t n = 0;
  for (auto [it, end] = boost::vertices(sg.graph); it != end; ++it)
    n += sg.graph[*it].kind == k;
  return n;
}

} // namespace

TEST_CASE("variables go to the least loaded PS in creation order", "[step_graph]")
{
  StepLayout l;
  l.workers = 1;
  l.ps_tasks = 2;
  auto sg = build_step_graph(toy(), l);
  REQUIRE(sg.ok());
  CHECK(sg->variable_ps == std::vector<int>{0, 1, 1, 1});
  CHECK(sg->ps_bytes == std::vector<uint64_t>{400, 120});
}

TEST_CASE("PS mode partition puts a SEND-RECV pair on every cross-device edge", "[step_graph]")
{
  StepLayout l;
  l.workers = 2;
  l.gpus_per_worker = 2;
  l.ps_tasks = 2;
  auto r = build_step_graph(toy(), l);
  REQUIRE(r.ok());
  StepGraph sg = std::move(r.value());
  CHECK(count(sg, OpKind::FORWARD) == 2 * 2 * 3);
  CHECK(count(sg, OpKind::BACKWARD) == 2 * 2 * 3);
  CHECK(count(sg, OpKind::VARIABLE) == 4);
  CHECK(count(sg, OpKind::APPLY) == 4);
  // Worker-side sums of 2 towers, PS-side sums of 2 workers.
  CHECK(count(sg, OpKind::AGGREGATE) == 2 * 4 + 4);
  partition(sg);
  const Graph& g = sg.graph;
  // Pulls: every tower reads every variable (16); pushes: one summed gradient per worker and variable (8);
  // tower gradients to the worker CPU stay in the task (16 local pairs).
  CHECK(sg.remote_sends == 16 + 8);
  CHECK(sg.sends == 16 + 8 + 16);
  CHECK(sg.remote_bytes == 4 * (400 + 40 + 40 + 40) + 2 * (400 + 40 + 40 + 40));
  std::set<std::string> send_keys, recv_keys;
  for (auto [it, end] = boost::edges(g); it != end; ++it) {
    const auto& a = g[boost::source(*it, g)];
    const auto& b = g[boost::target(*it, g)];
    if (!g[*it].tensor.empty()) CHECK(a.device == b.device);
  }
  for (auto [it, end] = boost::vertices(g); it != end; ++it) {
    const Op& op = g[*it];
    if (op.kind == OpKind::SEND) send_keys.insert(op.key);
    if (op.kind == OpKind::RECV) {
      recv_keys.insert(op.key);
      auto k = tp::rendezvous::parse_key(op.key);
      REQUIRE(k.ok());
      CHECK(k->dst.full() == op.device);
      CHECK(op.remote == (task_of_device(k->src.full()) != task_of_device(op.device)));
    }
  }
  CHECK(send_keys == recv_keys);
  CHECK(send_keys.size() == sg.sends);
}

TEST_CASE("partition orders every op topologically", "[step_graph]")
{
  StepLayout l;
  l.workers = 2;
  auto r = build_step_graph(toy(), l);
  REQUIRE(r.ok());
  StepGraph sg = std::move(r.value());
  partition(sg);
  const Graph& g = sg.graph;
  for (auto [it, end] = boost::edges(g); it != end; ++it)
    CHECK(g[boost::source(*it, g)].order < g[boost::target(*it, g)].order);
}

TEST_CASE("single worker without PS keeps variables on its CPU", "[step_graph]")
{
  StepLayout l;
  l.ps_tasks = 0;
  auto r = build_step_graph(toy(), l);
  REQUIRE(r.ok());
  StepGraph sg = std::move(r.value());
  partition(sg);
  CHECK(sg.tasks == std::vector<std::string>{worker_task(0)});
  CHECK(sg.remote_sends == 0);
  CHECK(sg.sends == 4 + 4); // reads CPU -> GPU, gradients GPU -> CPU
}

TEST_CASE("allreduce mode has one ALLREDUCE per rank and variable and no transfers", "[step_graph]")
{
  StepLayout l;
  l.mode = SyncMode::ALLREDUCE;
  l.workers = 3;
  auto r = build_step_graph(toy(), l);
  REQUIRE(r.ok());
  StepGraph sg = std::move(r.value());
  partition(sg);
  CHECK(count(sg, OpKind::ALLREDUCE) == 3 * 4);
  CHECK(count(sg, OpKind::APPLY) == 3 * 4);
  CHECK(sg.sends == 0);
  std::set<std::string> names;
  for (auto [it, end] = boost::vertices(sg.graph); it != end; ++it)
    if (sg.graph[*it].kind == OpKind::ALLREDUCE) names.insert(sg.graph[*it].collective);
  CHECK(names.size() == 4);
}

TEST_CASE("layouts that do not fit are errors naming the field", "[step_graph]")
{
  StepLayout l;
  l.workers = 2;
  l.ps_tasks = 0;
  auto a = build_step_graph(toy(), l);
  REQUIRE_FALSE(a.ok());
  CHECK(a.error().field == "ps_tasks");
  l = StepLayout{};
  l.mode = SyncMode::ALLREDUCE;
  l.gpus_per_worker = 2;
  auto b = build_step_graph(toy(), l);
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().field == "gpus_per_worker");
  auto c = build_step_graph(TrainingModel{}, StepLayout{});
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().field == "model");
}

TEST_CASE("sync modes and op kinds read back from their words, and a wrong word names the field and the choices",
          "[training]")
{
  for (const SyncMode m : {SyncMode::PARAMETER_SERVER, SyncMode::ALLREDUCE}) {
    auto back = parse_sync_mode(to_string(m));
    REQUIRE(back.ok());
    CHECK(back.value() == m);
  }
  CHECK(std::string(to_string(SyncMode::PARAMETER_SERVER)) == "ps");
  auto bad = parse_sync_mode("ring");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().field == "mode");
  CHECK(bad.error().expected == "ps or allreduce");
  CHECK(bad.error().got == "\"ring\"");
  for (int k = 0; k <= int(OpKind::RECV); ++k) {
    auto back = parse_op_kind(to_string(OpKind(k)));
    REQUIRE(back.ok());
    CHECK(back.value() == OpKind(k));
  }
  CHECK(std::string(to_string(OpKind::RECV)) == "recv");
  auto bad_kind = parse_op_kind("Recv");
  REQUIRE_FALSE(bad_kind.ok());
  CHECK(bad_kind.error().field == "op kind");
  CHECK(bad_kind.error().expected.find("forward, backward") != std::string::npos);
  CHECK(bad_kind.error().expected.find(" or recv") != std::string::npos);
}

namespace {

/// Every rank's ops of `full` are rank 0's ops of `tmpl` renamed for that rank, one for one, field by field.
void check_template_renames_to(const StepGraph& tmpl, const StepGraph& full)
{
  REQUIRE(tmpl.rank_template);
  REQUIRE_FALSE(full.rank_template);
  CHECK(tmpl.tasks == full.tasks);
  CHECK(tmpl.sends == full.sends);
  CHECK(tmpl.remote_sends == full.remote_sends);
  CHECK(boost::num_vertices(tmpl.graph) * full.tasks.size() == boost::num_vertices(full.graph));
  for (int r = 0; r < full.layout.workers; ++r) {
    const RankNames names(tmpl.layout, r);
    const auto& mine = tmpl.ops_of(worker_task(r));
    const auto& theirs = full.ops_of(worker_task(r));
    REQUIRE(mine.size() == theirs.size());
    for (size_t k = 0; k < mine.size(); ++k) {
      const Op& a = tmpl.graph[mine[k]];
      const Op& b = full.graph[theirs[k]];
      INFO("rank " << r << ": " << b.name);
      CHECK(a.kind == b.kind);
      CHECK(names(a.name) == b.name);
      CHECK(names(a.device) == b.device);
      CHECK(names(a.key) == b.key);
      CHECK(names(a.tensor) == b.tensor);
      CHECK(a.collective == b.collective);
      REQUIRE(a.outputs.size() == b.outputs.size());
      for (size_t o = 0; o < a.outputs.size(); ++o)
        CHECK(names(a.outputs[o].tensor) == b.outputs[o].tensor);
      if (k > 0) // the order on a device is the same, though the numbers are not
        CHECK((a.order < tmpl.graph[mine[k - 1]].order) == (b.order < full.graph[theirs[k - 1]].order));
    }
  }
}

} // namespace

TEST_CASE("a rank template renamed per rank is every rank's ops, GPUs of a host and host reductions included",
          "[step_graph]")
{
  for (const bool on_host : {false, true}) {
    StepLayout l;
    l.mode = SyncMode::ALLREDUCE;
    l.workers = 12;
    l.allreduce_on_host = on_host;
    for (int r = 0; r < l.workers; ++r)
      l.gpu_of.push_back({r % 8}); // ranks 0-7 on GPUs 0-7 of one host, 8-11 on GPUs 0-3 of the next
    auto full = build_partitioned_step_graph(toy(), l);
    l.one_rank_template = true;
    auto tmpl = build_partitioned_step_graph(toy(), l);
    REQUIRE(full.ok());
    REQUIRE(tmpl.ok());
    INFO("on host " << on_host);
    CHECK(tmpl->sends == (on_host ? 12u * 8 : 0u)); // per rank and variable: GPU -> host, host -> GPU
    check_template_renames_to(tmpl.value(), full.value());
    CHECK(tmpl->ops_of(worker_task(12)).empty());
    CHECK(tmpl->ops_of(ps_task(0)).empty());
  }
}

TEST_CASE("a model whose names rank 0's renaming would change keeps every rank's ops", "[step_graph]")
{
  TrainingModel m = toy();
  m.layers[1].variables[0].name = "rank0"; // rank 1's copy keeps this word; renaming would not
  StepLayout l;
  l.mode = SyncMode::ALLREDUCE;
  l.workers = 3;
  l.one_rank_template = true;
  auto sg = build_partitioned_step_graph(m, l);
  REQUIRE(sg.ok());
  CHECK_FALSE(sg->rank_template);
  CHECK(count(sg.value(), OpKind::ALLREDUCE) == 3 * 4);
  // Parameter-server graphs and one rank never are templates.
  l.workers = 1;
  CHECK_FALSE(build_partitioned_step_graph(toy(), l)->rank_template);
  StepLayout ps;
  ps.workers = 2;
  ps.ps_tasks = 1;
  ps.one_rank_template = true;
  CHECK_FALSE(build_partitioned_step_graph(toy(), ps)->rank_template);
}

TEST_CASE("rank names: the rank of a task, and words that only look like rank 0's stay", "[step_graph]")
{
  CHECK(rank_of_task(worker_task(0)) == 0);
  CHECK(rank_of_task(worker_task(1023)) == 1023);
  CHECK(rank_of_task(ps_task(3)) == -1);
  CHECK(rank_of_task("/job:worker/replica:0/task:") == -1);
  CHECK(rank_of_task("/job:worker/replica:0/task:1x") == -1);
  StepLayout l;
  l.mode = SyncMode::ALLREDUCE;
  l.workers = 12;
  for (int r = 0; r < l.workers; ++r)
    l.gpu_of.push_back({r % 8});
  const RankNames eleven(l, 11);
  CHECK(eleven("rank0/fwd/l0") == "rank11/fwd/l0");
  CHECK(eleven("grad/l0/w/rank0->/job:worker/replica:0/task:0/device:GPU:0") ==
        "grad/l0/w/rank11->/job:worker/replica:0/task:11/device:GPU:3");
  CHECK(eleven("/job:worker/replica:0/task:0/device:CPU:0") == "/job:worker/replica:0/task:11/device:CPU:0");
  CHECK(eleven("/job:worker/replica:0/task:0/device:GPU:01") == "/job:worker/replica:0/task:0/device:GPU:01");
  CHECK(eleven("rank00/x") == "rank00/x");
  CHECK(eleven("prerank0/x") == "prerank0/x");
  CHECK(RankNames(l, 0)("rank0/fwd/l0") == "rank0/fwd/l0");
}
