// The trace readers on what the tools write (issue 18): Kineto kernels matched to their launches by correlation id
// (not file order), PyTorch 1.x sizes from Input Dims, ranks from distributedInfo and the args; Horovod sizes on the
// end event, markers without pid, unterminated arrays; unknown dtypes and sizes as named warnings, never 0 bytes.
#include "traces/trace.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

using namespace tp;

namespace {

traces::Trace parse(const std::string& text)
{
  auto t = traces::parse_trace(text, "t.json");
  INFO(text);
  if (!t.ok()) FAIL(t.error().message());
  return t.value();
}

bool warned(const traces::Trace& t, const std::string& a, const std::string& b = "")
{
  return std::any_of(t.warnings.begin(), t.warnings.end(), [&](const std::string& w) {
    return w.find(a) != std::string::npos && w.find(b) != std::string::npos;
  });
}

/// A Kineto trace with these events.
std::string kineto(const std::string& events, const std::string& extra = "")
{
  return R"({"schemaVersion": 1, )" + extra + R"("traceEvents": [)" + events + "]}";
}

} // namespace

TEST_CASE("Kineto: kernels go to the call that launched them (correlation id), not to the last call in the file",
          "[traces]")
{
  // Kineto's order: both CPU calls, then both launches, then the kernels (here the second collective's first). The
  // old reader gave each kernel to the last nccl: call before it in the file: both to the all_gather.
  auto t = parse(kineto(R"(
    {"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 1, "tid": 1, "ts": 100, "dur": 50,
     "args": {"In msg nelems": 1000, "dtype": "Float", "Group size": 2}},
    {"ph": "X", "cat": "user_annotation", "name": "nccl:all_gather", "pid": 1, "tid": 1, "ts": 200, "dur": 50,
     "args": {"In msg nelems": 10, "dtype": "Float", "Group size": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 110, "dur": 5, "args": {"correlation": 7}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 210, "dur": 5, "args": {"correlation": 8}},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllGather_RING_LL", "pid": 0, "tid": 9, "ts": 5000, "dur": 30, "args": {"correlation": 8}},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float", "pid": 0, "tid": 9, "ts": 300, "dur": 4000, "args": {"correlation": 7}}
  )"));
  REQUIRE(t.collectives.size() == 2);
  CHECK(t.collectives[0].kind == "allreduce");
  CHECK(t.collectives[0].bytes == 4000);
  CHECK(t.collectives[0].start == Approx(300e-6));
  CHECK(t.collectives[0].duration == Approx(4000e-6));
  CHECK(t.collectives[1].kind == "allgather");
  CHECK(t.collectives[1].duration == Approx(30e-6));
  CHECK(t.warnings.empty());
  CHECK(t.ops.empty()); // NCCL kernels are the collectives' time, not compute
}

TEST_CASE("Kineto: a launch on another thread at the same time does not take the kernel", "[traces]")
{
  // Thread 2 launches a kernel while thread 1 is inside nccl:all_reduce: the kernel is not the collective's.
  auto t = parse(kineto(R"(
    {"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 1, "tid": 1, "ts": 100, "dur": 50,
     "args": {"In msg nelems": 1000, "dtype": "Float"}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 120, "dur": 5, "args": {"correlation": 3}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 130, "dur": 5, "args": {"correlation": 4}},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_Broadcast_RING_LL", "pid": 0, "tid": 9, "ts": 200, "dur": 9, "args": {"correlation": 3}},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL", "pid": 0, "tid": 8, "ts": 210, "dur": 70, "args": {"correlation": 4}}
  )"));
  REQUIRE(t.collectives.size() == 2);
  CHECK(t.collectives[0].kind == "broadcast"); // a collective of its own, from the kernel, with a warning
  CHECK_FALSE(t.collectives[0].bytes_known);
  CHECK(t.collectives[1].kind == "allreduce");
  CHECK(t.collectives[1].duration == Approx(70e-6));
  CHECK(warned(t, "traceEvents[3]", "linked to no nccl: call"));
}

TEST_CASE("Kineto: without launches, the External id links a kernel to its call", "[traces]")
{
  auto t = parse(kineto(R"(
    {"ph": "X", "cat": "user_annotation", "name": "nccl:broadcast", "pid": 1, "tid": 1, "ts": 100, "dur": 50,
     "args": {"External id": 42, "In msg nelems": 256, "dtype": "BFloat16"}},
    {"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 1, "tid": 1, "ts": 200, "dur": 50,
     "args": {"External id": 43, "In msg nelems": 256, "dtype": "Double"}},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 9, "ts": 900, "dur": 11, "args": {"External id": 43}},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_Broadcast", "pid": 0, "tid": 9, "ts": 800, "dur": 22, "args": {"External id": 42}}
  )"));
  REQUIRE(t.collectives.size() == 2);
  CHECK(t.collectives[0].kind == "broadcast");
  CHECK(t.collectives[0].bytes == 512);
  CHECK(t.collectives[0].duration == Approx(22e-6));
  CHECK(t.collectives[1].bytes == 2048);
  CHECK(t.collectives[1].duration == Approx(11e-6));
}

TEST_CASE("Kineto from PyTorch 1.x: the size from Input Dims and Input type, record_param_comms and its nccl: call "
          "as one collective, the ranks from distributedInfo",
          "[traces]")
{
  // As PyTorch 1.13 writes it: record_param_comms lists an empty TensorList; the nccl: call inside it the tensor.
  auto t = parse(kineto(R"J(
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 4, "tid": 5, "ts": 1000, "dur": 134,
     "args": {"External id": 41956, "Input Dims": [[], [], [], [], [], [], []], "Input type": ["TensorList", "Scalar", "Scalar", "Scalar", "", "", ""]}},
    {"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 4, "tid": 5, "ts": 1022, "dur": 105,
     "args": {"External id": 41957, "Input Dims": [[1024, 256]], "Input type": ["float"]}},
    {"ph": "X", "cat": "user_annotation", "name": "nccl:all_to_all", "pid": 4, "tid": 5, "ts": 2000, "dur": 100,
     "args": {"Input Dims": [[384], []], "Input type": ["long int", "Scalar"]}},
    {"ph": "X", "cat": "user_annotation", "name": "nccl:_all_gather_base", "pid": 4, "tid": 5, "ts": 3000, "dur": 100,
     "args": {"Input Dims": [[[10, 10], [5]]], "Input type": ["c10::Half"]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4, "tid": 5, "ts": 1033, "dur": 14, "args": {"correlation": 6981619}},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
     "pid": 0, "tid": 84, "ts": 1200, "dur": 11727, "args": {"External id": 6981619, "correlation": 6981619}}
  )J",
                        R"("distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 128}, )"));
  CHECK(t.world_size == 128);
  CHECK(t.rank == 3);
  REQUIRE(t.collectives.size() == 3);
  CHECK(t.collectives[0].name == "nccl:all_reduce");
  CHECK(t.collectives[0].bytes == 1024ull * 256 * 4);
  CHECK(t.collectives[0].ranks == 128); // no group named: the default group
  CHECK(t.collectives[0].duration == Approx(11727e-6));
  CHECK(t.collectives[1].kind == "alltoall");
  CHECK(t.collectives[1].bytes == 384 * 8);
  CHECK(t.collectives[2].kind == "allgather");
  CHECK(t.collectives[2].bytes == (100 + 5) * 2); // a tensor list: every tensor
  // the calls without a kernel keep their CPU time, with a warning each
  CHECK(warned(t, "traceEvents[2] (nccl:all_to_all)", "no NCCL kernel"));
}

TEST_CASE("Kineto from PyTorch 2.x: ranks and groups from the record_param_comms args, GPU-side copies and waits "
          "are not collectives",
          "[traces]")
{
  auto t = parse(kineto(R"(
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 9, "tid": 9, "ts": 100.5, "dur": 189.626,
     "args": {"Process Group Name": "3", "Out msg nelems": 2049000, "Process Group Ranks": "[0, 2, 4, 6]", "In msg nelems": 2049000, "dtype": "Float", "Collective name": "allreduce"}},
    {"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 9, "tid": 9, "ts": 120.25, "dur": 92.804, "args": {}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", "pid": 9, "tid": 9, "ts": 150.125, "dur": 12.422, "args": {"correlation": 60047}},
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 9, "tid": 9, "ts": 500, "dur": 36,
     "args": {"Collective name": "wait", "dtype": "Byte", "In msg nelems": 0, "Group size": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 9, "tid": 9, "ts": 600, "dur": 20,
     "args": {"Collective name": "broadcast", "dtype": "Float", "In msg nelems": 5, "Process Group Name": "7"}},
    {"ph": "X", "cat": "gpu_user_annotation", "name": "nccl:all_reduce", "pid": 0, "tid": 40, "ts": 300, "dur": 2636},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float", "pid": 0, "tid": 40, "ts": 300, "dur": 2636.669,
     "args": {"correlation": 60047, "Collective name": "allreduce", "In msg nelems": 2049000, "dtype": "Float"}}
  )",
                        R"("distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8, "pg_config": [
                             {"pg_name": "7", "pg_desc": "tp", "pg_size": 2, "ranks": [0, 1]}]}, )"));
  REQUIRE(t.collectives.size() == 2); // the all_reduce (once), the broadcast; not the wait, not the GPU copy
  const auto& ar = t.collectives[0];
  CHECK(ar.kind == "allreduce");
  CHECK(ar.name == "nccl:all_reduce");
  CHECK(ar.bytes == 2049000ull * 4);
  CHECK(ar.group == "3");
  CHECK(ar.group_ranks == std::vector<int>{0, 2, 4, 6});
  CHECK(ar.ranks == 4);
  CHECK(ar.duration == Approx(2636.669e-6));
  const auto& bc = t.collectives[1];
  CHECK(bc.kind == "broadcast");
  CHECK(bc.group_ranks == std::vector<int>{0, 1}); // from distributedInfo.pg_config
  CHECK(bc.ranks == 2);
}

TEST_CASE("Kineto from PyTorch 2.0: a record_param_comms with scalars only is a wait unless it launched a kernel",
          "[traces]")
{
  // Two tensorless record_param_comms with no Collective name and no nccl: call inside: the first's one runtime call
  // is a cudaStreamWaitEvent (a wait: left out, counted in one warning); the second launched a compute kernel (not a
  // wait: kept as a collective of unknown size, as a barrier whose allreduce the trace records apart would be).
  const char* scalars =
      R"("Input Dims": [[], [], [], [], [], []], "Input type": ["Scalar", "Scalar", "Scalar", "", "", ""])";
  auto t = parse(kineto(std::string(R"(
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 9, "tid": 9, "ts": 100, "dur": 5, "args": {)") +
                            scalars + R"(}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamWaitEvent", "pid": 9, "tid": 9, "ts": 101, "dur": 1, "args": {"correlation": 7}},
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 9, "tid": 9, "ts": 200, "dur": 50, "args": {)" +
                            scalars + R"(}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 210, "dur": 5, "args": {"correlation": 8}},
    {"ph": "X", "cat": "kernel", "name": "my_kernel", "pid": 0, "tid": 7, "ts": 220, "dur": 10, "args": {"device": 0, "correlation": 8}}
  )",
                        R"("distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2}, )"));
  REQUIRE(t.collectives.size() == 1);
  CHECK(t.collectives[0].start == Approx(200e-6));
  CHECK_FALSE(t.collectives[0].bytes_known);
  CHECK(warned(t, "1 record_param_comms with no tensor", "traceEvents[0]"));
}

TEST_CASE("Kineto: an unknown dtype or a missing size is a named warning and an unknown size, not a refusal",
          "[traces]")
{
  auto t = parse(kineto(R"(
    {"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 1, "tid": 1, "ts": 100, "dur": 5,
     "args": {"In msg nelems": 1000, "dtype": "Float8_e8m0fnu"}},
    {"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 1, "tid": 1, "ts": 200, "dur": 5,
     "args": {"Input Dims": [[16]], "Input type": ["c10::Float4_e2m1fn_x2"]}},
    {"ph": "X", "cat": "user_annotation", "name": "nccl:reduce_scatter", "pid": 1, "tid": 1, "ts": 300, "dur": 5}
  )"));
  REQUIRE(t.collectives.size() == 3);
  for (const auto& c : t.collectives) {
    CHECK_FALSE(c.bytes_known);
    CHECK(c.bytes == 0);
  }
  CHECK(t.collectives[2].kind == "reducescatter");
  CHECK(warned(t, "traceEvents[0].args.dtype", "Float8_e8m0fnu"));
  CHECK(warned(t, "traceEvents[1].args.Input type", "c10::Float4_e2m1fn_x2"));
  CHECK(warned(t, "traceEvents[2] (nccl:reduce_scatter)", "size unknown"));
}

TEST_CASE("trace warnings: a few of each kind in full, then a count", "[traces]")
{
  std::string events;
  for (int i = 0; i < 20; ++i)
    events += std::string(i ? "," : "") + R"({"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 1,
      "tid": 1, "ts": )" +
              std::to_string(100 * (i + 1)) + R"(, "dur": 5, "args": {"In msg nelems": 4, "dtype": "Float"}})";
  auto t = parse(kineto(events));
  CHECK(t.collectives.size() == 20);
  CHECK(t.warnings.size() == 6); // 5 "no NCCL kernel" in full, then "... and 15 more"
  CHECK(warned(t, "... and 15 more", "collectives without a kernel"));
}

TEST_CASE("Horovod: the size from the end event's dtype and shape, as Horovod writes them", "[traces]")
{
  // Timeline::End writes {"dtype": DataType_Name(...), "shape": shape().DebugString()} on the outermost "E".
  auto t = parse(R"([
{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros":1600000000000000}},
{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "DistributedAdamOptimizer_Allreduce/HorovodAllreduce_grad_0"}},
{"ph": "B", "name": "NEGOTIATE_ALLREDUCE", "ts": 10, "pid": 1},
{"ph": "X", "name": "0", "ts": 11, "pid": 1, "dur": 0},
{"ph": "E", "ts": 20, "pid": 1},
{"ph": "B", "name": "ALLREDUCE", "ts": 20, "pid": 1},
{"ph": "B", "name": "NCCL_ALLREDUCE", "ts": 25, "pid": 1},
{"ph": "E", "ts": 90, "pid": 1},
{"ph": "E", "ts": 100, "pid": 1, "args": {"dtype": "HOROVOD_FLOAT32", "shape": "[3, 3, 64, 128]"}},
{"ph": "i", "name": "CYCLE_START", "ts": 150, "s": "g"},
{"ph": "C", "name": "fusion_buffer", "ts": 160, "args": {"bytes": 1024}},
{"ph": "B", "name": "ALLGATHER", "ts": 200, "pid": 1},
{"ph": "E", "ts": 260, "pid": 1, "args": {"dtype": "HOROVOD_FLOAT16", "shape": "[8, 1000]"}},
{"ph": "B", "name": "BROADCAST", "ts": 300, "pid": 1},
{"ph": "E", "ts": 310, "pid": 1}
])");
  REQUIRE(t.collectives.size() == 3);
  CHECK(t.collectives[0].kind == "allreduce");
  CHECK(t.collectives[0].bytes == 3ull * 3 * 64 * 128 * 4);
  // Its NCCL_ALLREDUCE phase moves the bytes: that is its time; the ALLREDUCE's begin is when it was issued.
  CHECK(t.collectives[0].start == Approx(25e-6));
  CHECK(t.collectives[0].duration == Approx(65e-6));
  CHECK(t.collectives[0].issued == Approx(20e-6));
  CHECK(t.collectives[0].library == "nccl");
  CHECK(t.collectives[1].kind == "allgather");
  CHECK(t.collectives[1].bytes == 8 * 1000 * 2);
  CHECK(t.collectives[1].library.empty()); // no phase says
  CHECK(t.collectives[1].duration == Approx(60e-6)); // the whole activity
  CHECK(t.collectives[1].issued < 0);
  // no size anywhere: unknown, with a warning naming the event, not 0 bytes silently
  CHECK(t.collectives[2].kind == "broadcast");
  CHECK_FALSE(t.collectives[2].bytes_known);
  CHECK(warned(t, "[13] (BROADCAST", "size unknown"));
  CHECK(t.warnings.size() == 1);
}

TEST_CASE("Horovod: a phase that ends before it begins is refused naming both events", "[traces]")
{
  // The NCCL phase's span is the collective's time: a phase ending before its begin would give a negative one.
  auto t = traces::parse_trace(R"([{"ph": "B", "name": "ALLREDUCE", "ts": 100, "pid": 1},
                                   {"ph": "B", "name": "NCCL_ALLREDUCE", "ts": 110, "pid": 1},
                                   {"ph": "E", "ts": 105, "pid": 1},
                                   {"ph": "E", "ts": 120, "pid": 1}])",
                               "t.json");
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().message().find("t.json") != std::string::npos);
  CHECK(t.error().message().find("[2]") != std::string::npos); // the E
  CHECK(t.error().message().find("an end after its begin ([1])") != std::string::npos);
  // A library phase that begins before its activity (clocks apart): issued no later than the phase's start.
  auto u = parse(R"([{"ph": "B", "name": "ALLREDUCE", "ts": 100, "pid": 1},
                     {"ph": "B", "name": "NCCL_ALLREDUCE", "ts": 90, "pid": 1},
                     {"ph": "E", "ts": 95, "pid": 1},
                     {"ph": "E", "ts": 120, "pid": 1}])");
  REQUIRE(u.collectives.size() == 1);
  CHECK(u.collectives[0].start == Approx(90e-6));
  CHECK(u.collectives[0].duration == Approx(5e-6));
  CHECK(u.collectives[0].issued <= u.collectives[0].start);
}

TEST_CASE("Horovod: Gloo's phase times a collective as NCCL's does and a phase ended on another thread does not",
          "[traces]")
{
  // Horovod without MPI runs Gloo: GLOO_ALLREDUCE moves the bytes, after WAIT_FOR_DATA.
  auto t = parse(R"([{"ph": "B", "name": "ALLREDUCE", "ts": 100, "pid": 1},
                     {"ph": "B", "name": "WAIT_FOR_DATA", "ts": 100, "pid": 1},
                     {"ph": "E", "ts": 500, "pid": 1},
                     {"ph": "B", "name": "GLOO_ALLREDUCE", "ts": 500, "pid": 1},
                     {"ph": "E", "ts": 510, "pid": 1},
                     {"ph": "E", "ts": 520, "pid": 1, "args": {"dtype": "float32", "shape": "[4]"}},
                     {"ph": "B", "name": "ALLREDUCE", "ts": 1000, "pid": 2, "tid": 1},
                     {"ph": "B", "name": "MPI_ALLREDUCE", "ts": 1020, "pid": 2, "tid": 1},
                     {"ph": "E", "ts": 1030, "pid": 2, "tid": 2},
                     {"ph": "E", "ts": 1300, "pid": 2, "tid": 1}])");
  REQUIRE(t.collectives.size() == 2);
  CHECK(t.collectives[0].library == "gloo");
  CHECK(t.collectives[0].start == Approx(500e-6));
  CHECK(t.collectives[0].duration == Approx(10e-6));
  CHECK(t.collectives[1].library == "mpi");
  CHECK(t.collectives[1].duration == Approx(300e-6)); // its phase's E came on another thread: the whole activity
}

TEST_CASE("Horovod: an unknown dtype is a named warning, not a refusal", "[traces]")
{
  auto t = parse(R"([{"ph": "B", "name": "ALLREDUCE", "ts": 1, "pid": 1},
                     {"ph": "E", "ts": 2, "pid": 1, "args": {"dtype": "HOROVOD_COMPLEX7", "shape": "[4]"}}])");
  REQUIRE(t.collectives.size() == 1);
  CHECK_FALSE(t.collectives[0].bytes_known);
  CHECK(warned(t, "[1].args.dtype", "HOROVOD_COMPLEX7"));
}

TEST_CASE("Horovod: an unterminated array, also with its last event cut off mid-write", "[traces]")
{
  const std::string head = R"([
{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "grad_0"}},
{"ph": "B", "name": "ALLREDUCE", "ts": 20, "pid": 1},
{"ph": "E", "ts": 100, "pid": 1, "args": {"dtype": "HOROVOD_FLOAT32", "shape": "[256]"}},
)";
  auto t = parse(head); // "},\n" and nothing more: what a job that ended leaves
  REQUIRE(t.collectives.size() == 1);
  CHECK(t.collectives[0].bytes == 1024);
  CHECK(t.warnings.empty());
  // killed while writing the next event
  auto cut = parse(head + R"({"ph": "B", "name": "ALLREDUCE", "ts": 120, "pid": 1, "args": {"dty)");
  REQUIRE(cut.collectives.size() == 1);
  CHECK(cut.collectives[0].bytes == 1024);
  CHECK(warned(cut, "cut off", "dropped"));
  // a begin without its end (the timeline stopped): said, not counted
  auto open = parse(head + R"({"ph": "B", "name": "ALLREDUCE", "ts": 120, "pid": 1},)");
  CHECK(open.collectives.size() == 1);
  CHECK(warned(open, "[3] (ALLREDUCE grad_0)", "never ended"));
  // a syntax error in the middle is still an error at its byte
  auto bad = traces::parse_trace(R"([{"ph": "B", "pid": 1, "ts": 1}, {"ph": "E" "pid": 1}, {"ph": "i"},)", "b.json");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().field.find("byte") != std::string::npos);
}

TEST_CASE("dtype sizes for the names PyTorch, Kineto's Input type and Horovod write", "[traces]")
{
  CHECK(traces::dtype_bytes("Float") == 4);
  CHECK(traces::dtype_bytes("float") == 4);
  CHECK(traces::dtype_bytes("BFloat16") == 2);
  CHECK(traces::dtype_bytes("c10::BFloat16") == 2);
  CHECK(traces::dtype_bytes("long int") == 8);
  CHECK(traces::dtype_bytes("unsigned char") == 1);
  CHECK(traces::dtype_bytes("signed char") == 1);
  CHECK(traces::dtype_bytes("Byte") == 1);
  CHECK(traces::dtype_bytes("ComplexFloat") == 8);
  CHECK(traces::dtype_bytes("c10::complex<double>") == 16);
  CHECK(traces::dtype_bytes("Float8_e4m3fn") == 1);
  CHECK(traces::dtype_bytes("HOROVOD_FLOAT32") == 4);
  CHECK(traces::dtype_bytes("HOROVOD_INT64") == 8);
  CHECK(traces::dtype_bytes("HOROVOD_BFLOAT16") == 2);
  CHECK(traces::dtype_bytes("Scalar") == 0);
  CHECK(traces::dtype_bytes("TensorList") == 0);
}
