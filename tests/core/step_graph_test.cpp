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
