// Critical path of a step: a hand-timed two-task graph whose path and parts are known.
#include "core/rendezvous/rendezvous_key.hpp"
#include "core/training/critical_path.hpp"
#include "core/training/step_graph.hpp"

#include <catch2/catch.hpp>

using namespace tp;
using namespace tp::training;

namespace {

/// worker0 GPU:0 forward (0-1 s) -> backward (1-3 s) -> gradient -> PS (recv 3-5 s) -> apply (5.5-6 s).
struct Fixture {
  StepGraph sg;
  std::vector<OpTiming> timings;
  std::vector<transports::TransferRecord> records;
  Fixture()
  {
    TrainingModel m;
    m.batch = 1;
    m.layers = {{"l0", 1.0, 2.0, {{"w", 1000, true}}}};
    StepLayout l;
    l.workers = 1;
    l.ps_tasks = 1;
    sg = build_step_graph(m, l).value();
    partition(sg);
    for (auto [it, end] = boost::vertices(sg.graph); it != end; ++it) {
      const Op& op = sg.graph[*it];
      OpTiming t{op.name, 0, 0, 0};
      switch (op.kind) {
      case OpKind::FORWARD:
        t = {op.name, 0.5, 0.5, 1.0}; // its variable arrived at 0.5
        break;
      case OpKind::BACKWARD:
        t = {op.name, 1.0, 1.0, 3.0};
        break;
      case OpKind::SEND:
        t = op.tensor.rfind("grad", 0) == 0 ? OpTiming{op.name, 3.0, 3.0, 3.0} : OpTiming{op.name, 0, 0, 0};
        break;
      case OpKind::RECV:
        t = op.tensor.rfind("grad", 0) == 0 ? OpTiming{op.name, 0, 0, 5.0} : OpTiming{op.name, 0, 0, 0.5};
        if (op.tensor.rfind("grad", 0) == 0) {
          transports::TransferRecord r;
          r.side = transports::Side::CONSUMER;
          r.key = op.key;
          r.t_start = 0;
          r.t_end = 5.0;
          r.add(transports::Phase::WIRE, 2.5);
          r.add(transports::Phase::COPY, 1.0); // 1.5 s wait (the producer had nothing to send until 3 s)
          records.push_back(r);
        }
        break;
      case OpKind::APPLY:
        t = {op.name, 5.0, 5.5, 6.0}; // queued 0.5 s behind nothing on its device: waiting
        break;
      default:
        break;
      }
      timings.push_back(t);
    }
  }
};

} // namespace

TEST_CASE("critical path parts add up to the step and follow the late inputs", "[critical_path]")
{
  Fixture f;
  auto cp = critical_path(f.sg, f.timings, f.records, 0.0, 6.5);
  CHECK(cp.total() == Approx(6.5));
  // apply 0.5 (agg/apply) + queue 0.5 + recv 3..5 (2 s of a 5 s record: 40 % -> wire 1.0, copy 0.4, wait 0.6)
  // + backward 2 + forward 0.5 + its variable's recv 0.5 (local, CPU -> GPU: PCIe) + 0.5 after the end.
  CHECK(cp.aggregate_apply == Approx(0.5));
  CHECK(cp.compute == Approx(2.5));
  CHECK(cp.copy == Approx(0.4));
  CHECK(cp.network == Approx(1.0 + 0.6));
  CHECK(cp.waiting == Approx(0.5 + 0.5));
  CHECK(cp.pcie == Approx(0.5)); // the variable read had no transport record: a CPU -> GPU copy
  CHECK(cp.ops.front().rfind("apply/", 0) == 0);
}

TEST_CASE("critical path: a transfer's wait for gRPC threads is its cpu part, not network", "[critical_path]")
{
  Fixture f;
  // The gradient's record: of its 2.5 s beyond the copy, 1.5 s were its messages waiting for the threads.
  f.records[0].seconds[size_t(transports::Phase::WIRE)] = 1.0;
  f.records[0].add(transports::Phase::CPU, 1.5);
  auto cp = critical_path(f.sg, f.timings, f.records, 0.0, 6.5);
  CHECK(cp.total() == Approx(6.5));
  // 2 s of the 5 s record are on the path: 40 % of each phase.
  CHECK(cp.cpu == Approx(0.4 * 1.5));
  CHECK(cp.network == Approx(0.4 * 1.0 + 0.6));
  CHECK(cp.copy == Approx(0.4));
}
