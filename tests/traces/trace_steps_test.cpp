// Steps and ranks from the trace (issue 18, deliverable 2): iterations from Kineto's ProfilerStep# spans (on the real
// PyTorch trace), Horovod's CYCLE_START cycles and TF step ids; partial steps named and left out of the summary; the
// rank count inferred; the files of several ranks of one job merged, and refused when they disagree.
#include "traces/replay.hpp"
#include "traces/trace.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

using namespace tp;

namespace {

traces::Trace parse(const std::string& text, const std::string& file = "t.json")
{
  auto t = traces::parse_trace(text, file);
  INFO(text);
  if (!t.ok()) FAIL(t.error().message());
  return t.value();
}

size_t events_in(const traces::Trace& t, int step)
{
  size_t n = 0;
  for (const auto& o : t.ops)
    n += o.step == step;
  for (const auto& x : t.transfers)
    n += x.step == step;
  for (const auto& c : t.collectives)
    n += c.step == step;
  return n;
}

/// A Kineto trace of rank `rank` of `world` ranks: ProfilerStep#5 and #6 (CPU spans 1000-2000 and 2000-3000 us),
/// each launching a compute kernel and an allreduce whose kernel starts after the span's end (the GPU runs behind);
/// `early` adds a kernel launched before the first step (the profiler started mid-iteration).
std::string kineto(int rank, int world, bool early = false)
{
  std::string ev;
  auto step = [&](int n, int ts) {
    const std::string c1 = std::to_string(n * 10 + 1), c2 = std::to_string(n * 10 + 2), t = std::to_string(ts);
    ev += R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)" + std::to_string(n) +
          R"(", "pid": 1, "tid": 1, "ts": )" + t + R"(, "dur": 1000},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": )" +
          std::to_string(ts + 10) + R"(, "dur": 5, "args": {"correlation": )" + c1 + R"(}},
    {"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 1, "tid": 1, "ts": )" +
          std::to_string(ts + 500) + R"(, "dur": 40, "args": {"In msg nelems": 1024, "dtype": "Float"}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": )" +
          std::to_string(ts + 510) + R"(, "dur": 5, "args": {"correlation": )" + c2 + R"(}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": )" +
          std::to_string(ts + 600) + R"(, "dur": 300, "args": {"device": 0, "correlation": )" + c1 + R"(}},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 8, "ts": )" +
          std::to_string(ts + 1050) + R"(, "dur": 200, "args": {"device": 0, "correlation": )" + c2 + "}},\n";
  };
  if (early)
    ev += R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 900, "dur": 5,
               "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "tail_of_step_4", "pid": 0, "tid": 7, "ts": 950, "dur": 40,
     "args": {"device": 0, "correlation": 1}},
)";
  step(5, 1000);
  step(6, 2000);
  ev += R"({"ph": "i", "cat": "cpu_instant_event", "name": "end", "pid": 1, "tid": 1, "ts": 3000, "s": "t"})";
  return R"({"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": )" + std::to_string(rank) +
         R"(, "world_size": )" + std::to_string(world) + R"(}, "traceEvents": [)" + ev + "]}";
}

} // namespace

TEST_CASE("ProfilerStep# spans of the real PyTorch trace are its steps and each kernel goes to the step that launched "
          "it",
          "[traces]")
{
  // HolisticTraceAnalysis sampled_rank-0.json.gz holds two ProfilerStep spans (#551: ts 1682725898079292, 607312 us;
  // #552: ts 1682725898686653, 622928 us, both user_annotation). Counted by hand (Python, over the file): of its
  // 1154 kernels, 577 have their cudaLaunchKernel (by correlation id) inside each span, 5 NCCL kernels in each; the
  // kernels launched in #551 run from the first one's start to the last one's end in 600.030 ms, those of #552 in
  // 615.572 ms. None is launched outside the two spans.
  auto t =
      traces::read_trace(std::string(TENSORPATH_SOURCE_DIR) + "/tests/traces/fixtures/real/hta_sampled_rank-0.json.gz");
  REQUIRE(t.ok());
  REQUIRE(t->steps.size() == 2);
  CHECK(t->steps[0].name == "ProfilerStep#551");
  CHECK(t->steps[1].name == "ProfilerStep#552");
  CHECK_FALSE(t->steps[0].partial);
  CHECK(t->steps[0].end - t->steps[0].start == Approx(0.607312));
  CHECK(t->steps_from.find("ProfilerStep#") != std::string::npos);
  CHECK(events_in(*t, 0) == 577);
  CHECK(events_in(*t, 1) == 577);
  CHECK(std::count_if(t->collectives.begin(), t->collectives.end(), [](auto& c) { return c.step == 0; }) == 5);
  const auto steps = traces::step_reports(*t, traces::ReplayResult{});
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].recorded.time == Approx(0.600030).epsilon(1e-6));
  CHECK(steps[1].recorded.time == Approx(0.615572).epsilon(1e-6));
  const auto m = traces::summarize_steps(steps);
  CHECK(m.steps == 2);
  CHECK(m.recorded_median == Approx((0.600030 + 0.615572) / 2).epsilon(1e-6));
  // The slice of the other real trace kept no ProfilerStep span: one step, the whole trace.
  auto s =
      traces::read_trace(std::string(TENSORPATH_SOURCE_DIR) + "/tests/traces/fixtures/real/hta_nccl_data_slice.json");
  REQUIRE(s.ok());
  REQUIRE(s->steps.size() == 1);
  CHECK(s->steps[0].name == "whole trace");
  CHECK(events_in(*s, 0) == s->ops.size() + s->collectives.size());
}

TEST_CASE("a kernel launched before the first ProfilerStep is a partial first step, named and left out of the "
          "summary",
          "[traces]")
{
  auto t = parse(kineto(0, 2, true));
  REQUIRE(t.steps.size() == 3);
  CHECK(t.steps[0].name == "before ProfilerStep#5");
  CHECK(t.steps[0].partial);
  CHECK(t.steps[0].why.find("trace's start") != std::string::npos);
  CHECK(events_in(t, 0) == 1);
  CHECK(events_in(t, 1) == 2); // the gemm and the allreduce launched in #5, though the allreduce's kernel starts
  CHECK(events_in(t, 2) == 2); // after #5's end (at 2050 us)
  const auto steps = traces::step_reports(t, traces::ReplayResult{});
  REQUIRE(steps.size() == 3);
  CHECK(steps[0].partial);
  // ProfilerStep#5: gemm 1600-1900, allreduce 2050-2250: 650 us, compute 300, communication 200, no overlap.
  CHECK(steps[1].recorded.time == Approx(650e-6));
  CHECK(steps[1].recorded.compute == Approx(300e-6));
  CHECK(steps[1].recorded.communication == Approx(200e-6));
  CHECK(steps[1].recorded.exposed() == Approx(200e-6));
  const auto m = traces::summarize_steps(steps);
  CHECK(m.steps == 2); // the partial one (40 us) is not in the median
  CHECK(m.recorded_median == Approx(650e-6));
}

TEST_CASE("replayed steps: a slower allreduce lengthens its step by the difference, the other step keeps its time",
          "[traces]")
{
  auto t = parse(kineto(0, 2));
  REQUIRE(t.collectives.size() == 2);
  // The first allreduce takes 500 us instead of 200: step #5 ends 300 us later (the closed form of the lane model:
  // nothing follows it in the step); step #6's events move by 300 us together, its span unchanged.
  const auto r = traces::replay_step(t, {}, {500e-6, -1});
  const auto steps = traces::step_reports(t, r);
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].recorded.time == Approx(650e-6));
  CHECK(steps[0].replayed.time == Approx(950e-6));
  CHECK(steps[0].replayed.communication == Approx(500e-6));
  CHECK(steps[1].replayed.time == Approx(steps[1].recorded.time));
}

TEST_CASE("Horovod CYCLE_START marks divide the timeline into cycles and the ready ranks give the world size",
          "[traces]")
{
  // As Horovod's timeline.cc writes it with HOROVOD_TIMELINE_MARK_CYCLES=1: global instant marks without pid, and in
  // each NEGOTIATE phase one "X" event per rank named by the rank. The first allreduce starts before the first mark
  // (the timeline began mid-cycle).
  auto t = parse(R"([
{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "grad_a"}},
{"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "grad_b"}},
{"name": "ALLREDUCE", "ph": "B", "ts": 500, "pid": 1},
{"ph": "E", "ts": 700, "pid": 1, "args": {"dtype": "float32", "shape": "[256]"}},
{"name": "CYCLE_START", "ph": "i", "ts": 1000, "s": "g"},
{"name": "NEGOTIATE_ALLREDUCE", "ph": "B", "ts": 1100, "pid": 2},
{"name": "0", "ph": "X", "ts": 1110, "pid": 2, "dur": 0},
{"name": "2", "ph": "X", "ts": 1120, "pid": 2, "dur": 0},
{"name": "1", "ph": "X", "ts": 1130, "pid": 2, "dur": 0},
{"ph": "E", "ts": 1200, "pid": 2},
{"name": "ALLREDUCE", "ph": "B", "ts": 1200, "pid": 2},
{"ph": "E", "ts": 1900, "pid": 2, "args": {"dtype": "float32", "shape": "[1024]"}},
{"name": "CYCLE_START", "ph": "i", "ts": 2000, "s": "g"},
{"name": "CYCLE_START", "ph": "i", "ts": 3000, "s": "g"},
{"name": "ALLREDUCE", "ph": "B", "ts": 3100, "pid": 1},
{"ph": "E", "ts": 3400, "pid": 1, "args": {"dtype": "float32", "shape": "[256]"}},
)");
  CHECK(t.world_size == 3);
  CHECK(t.world_size_from.find("NEGOTIATE") != std::string::npos);
  REQUIRE(t.steps.size() == 4);
  CHECK(t.steps[0].name == "before cycle 1");
  CHECK(t.steps[0].partial);
  CHECK(t.steps[1].name == "cycle 1");
  CHECK_FALSE(t.steps[1].partial);
  CHECK(t.steps[1].end - t.steps[1].start == Approx(1000e-6));
  CHECK(t.steps[3].name == "cycle 3");
  CHECK(t.steps[3].partial); // no CYCLE_START after it: the trace may have cut it
  REQUIRE(t.collectives.size() == 3);
  CHECK(t.collectives[0].step == 0);
  CHECK(t.collectives[1].step == 1);
  CHECK(t.collectives[2].step == 3);
  const auto steps = traces::step_reports(t, traces::ReplayResult{});
  REQUIRE(steps.size() == 3); // cycle 2 holds no event
  const auto m = traces::summarize_steps(steps);
  CHECK(m.steps == 1);
  CHECK(m.recorded_median == Approx(700e-6));
  CHECK(traces::infer_job(t).ranks == 3);
}

TEST_CASE("TF step ids in the events' args are steps and without them the whole timeline is one step", "[traces]")
{
  auto t = parse(R"({"traceEvents": [
{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/job:worker/replica:0/task:0/device:GPU:0 Compute"}},
{"ph": "X", "name": "MatMul", "pid": 1, "ts": 100, "dur": 50, "args": {"name": "a", "op": "MatMul", "step_id": 7}},
{"ph": "X", "name": "MatMul", "pid": 1, "ts": 200, "dur": 50, "args": {"name": "b", "op": "MatMul", "step_id": 7}},
{"ph": "X", "name": "MatMul", "pid": 1, "ts": 400, "dur": 80, "args": {"name": "a", "op": "MatMul", "step_id": 8}}
]})");
  REQUIRE(t.steps.size() == 2);
  CHECK(t.steps[0].name == "step 7");
  CHECK(t.steps[1].name == "step 8");
  CHECK(t.steps_from.find("step_id") != std::string::npos);
  CHECK(events_in(t, 0) == 2);
  CHECK(events_in(t, 1) == 1);
  auto one = traces::read_trace(std::string(TENSORPATH_SOURCE_DIR) + "/tests/traces/fixtures/tf_timeline.json");
  REQUIRE(one.ok());
  REQUIRE(one->steps.size() == 1);
  CHECK(events_in(*one, 0) == one->ops.size() + one->transfers.size());
}

TEST_CASE("the rank count comes from the trace: distributedInfo, the largest group, the ranks or tasks it names",
          "[traces]")
{
  auto k = parse(kineto(1, 8));
  auto j = traces::infer_job(k);
  CHECK(j.ranks == 8);
  CHECK(j.ranks_from == "distributedInfo.world_size");
  CHECK(j.ranks_per_node == 0); // Kineto names no hosts
  auto g = parse(R"({"schemaVersion": 1, "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "nccl:all_reduce", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
     "args": {"In msg nelems": 4, "dtype": "Float", "Process Group Ranks": "[0, 1, 2, 5]"}}]})");
  j = traces::infer_job(g);
  CHECK(j.ranks == 6); // ranks 0..5: rank 5 is in the group
  CHECK(j.ranks_from.find("process group") != std::string::npos);
  auto tf = traces::read_trace(std::string(TENSORPATH_SOURCE_DIR) + "/tests/traces/fixtures/tf_timeline.json");
  REQUIRE(tf.ok());
  j = traces::infer_job(*tf);
  CHECK(j.ranks == 2); // /job:ps/replica:0/task:0 and /job:worker/replica:0/task:0
  auto none = parse(R"([{"name": "ALLREDUCE", "ph": "B", "ts": 1, "pid": 1}, {"ph": "E", "ts": 2, "pid": 1}])");
  CHECK(traces::infer_job(none).ranks == 0);
}

TEST_CASE("two rank files of one job replay together: ranks from their metadata, steps of one name are one step",
          "[traces]")
{
  std::vector<traces::Trace> ts{parse(kineto(1, 2), "rank1.json"), parse(kineto(0, 2), "rank0.json")};
  auto m = traces::merge_rank_traces(ts);
  REQUIRE(m.ok());
  CHECK(m->world_size == 2);
  CHECK(m->ops.size() == 4);
  CHECK(m->collectives.size() == 4);
  REQUIRE(m->steps.size() == 2);
  CHECK(events_in(*m, 0) == 4);
  const auto devs = m->devices();
  CHECK(devs == std::vector<std::string>{"rank 0: cuda:0", "rank 1: cuda:0"});
  // A collective delays only its own rank's devices: a slower allreduce on rank 1 (listed first) lengthens rank 1's
  // step #5, and the step (its longest rank) with it; rank 0's events keep their times.
  std::vector<double> slow(m->collectives.size(), -1);
  for (size_t i = 0; i < m->collectives.size(); ++i)
    if (m->collectives[i].rank == 1 && m->collectives[i].step == 0) slow[i] = 500e-6;
  const auto r = traces::replay_step(*m, {}, slow);
  for (size_t i = 0; i < m->ops.size(); ++i)
    if (m->ops[i].rank == 0) CHECK(r.op_start[i] == Approx(m->ops[i].start));
  const auto steps = traces::step_reports(*m, r);
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].replayed.time == Approx(950e-6));
}

TEST_CASE("rank files that disagree on the world size, repeat a rank or name none are refused, naming the file",
          "[traces]")
{
  auto bad = traces::merge_rank_traces({parse(kineto(0, 2), "rank0.json"), parse(kineto(1, 4), "rank1.json")});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message().find("rank1.json") != std::string::npos);
  CHECK(bad.error().message().find("world size of the job's other files (2, in rank0.json)") != std::string::npos);
  auto twice = traces::merge_rank_traces({parse(kineto(0, 2), "a.json"), parse(kineto(0, 2), "b.json")});
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().message().find("b.json") != std::string::npos);
  CHECK(twice.error().message().find("a.json is rank 0") != std::string::npos);
  auto tf = traces::read_trace(std::string(TENSORPATH_SOURCE_DIR) + "/tests/traces/fixtures/tf_timeline.json");
  REQUIRE(tf.ok());
  auto no_rank = traces::merge_rank_traces({tf.value(), tf.value()});
  REQUIRE_FALSE(no_rank.ok());
  CHECK(no_rank.error().message().find("tf_timeline.json") != std::string::npos);
}

TEST_CASE("without step marks the whole trace runs from the first issue or start to the last end", "[traces]")
{
  // A Horovod allreduce issued at 100 us whose NCCL phase runs 120-170 us, and a second one after it, unmarked.
  auto t = parse(R"([{"ph": "B", "name": "ALLREDUCE", "ts": 100, "pid": 1},
                     {"ph": "B", "name": "NCCL_ALLREDUCE", "ts": 120, "pid": 1},
                     {"ph": "E", "ts": 170, "pid": 1},
                     {"ph": "E", "ts": 180, "pid": 1},
                     {"ph": "B", "name": "ALLREDUCE", "ts": 200, "pid": 2},
                     {"ph": "E", "ts": 260, "pid": 2}])");
  REQUIRE(t.steps.size() == 1);
  CHECK(t.steps[0].name == "whole trace");
  CHECK(t.steps[0].start == Approx(100e-6));
  CHECK(t.steps[0].end == Approx(260e-6)); // not the first issue plus the events' span (100 + 140 us)
}
