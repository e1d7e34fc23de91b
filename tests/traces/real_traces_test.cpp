// Traces recorded on real jobs by public projects (tests/traces/fixtures/real/README.md says where each came from):
// each parses, its collectives have the bytes their args say and the time of the kernel their launch started. The
// expected values were checked by hand once against the files (the call enclosing each kernel's launch, found by
// its correlation id; the elements and dtype of its args) and are asserted here.
#include "traces/trace.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <string>

using namespace tp;

namespace {

std::string real(const std::string& name)
{
  std::string path = TENSORPATH_SOURCE_DIR; // appended, not added: GCC 12 warns falsely on the sum (-Warray-bounds)
  return path.append("/tests/traces/fixtures/real/").append(name);
}

} // namespace

TEST_CASE("real Kineto trace, PyTorch 2.0 era, gzip'd as written: 128 ranks, sizes from Input Dims, kernels by "
          "correlation",
          "[traces]")
{
  // HolisticTraceAnalysis/tests/data/trace_filter/sampled_rank-0.json.gz, whole. Its kernels are written after
  // every CPU event and out of time order, and every NCCL kernel is named ncclKernel_SendRecv: neither file order nor
  // kernel names can pair them.
  auto t = traces::read_trace(real("hta_sampled_rank-0.json.gz"));
  REQUIRE(t.ok());
  CHECK(t->format == "kineto");
  CHECK(t->world_size == 128);
  CHECK(t->rank == 0);
  CHECK(t->warnings.empty());
  CHECK(t->ops.size() == 1144);
  struct Want {
    const char* kind;
    uint64_t bytes;
    double kernel_us;
  } want[] = {
      {"alltoall", 384 * 8, 30669},          // Input Dims [[384]] "long"
      {"alltoall", 419430400, 62783},        // [[419430400]] "unsigned char"
      {"allreduce", 19618307ull * 4, 11727}, // [[19618307]] "float"
      {"allreduce", 26955536ull * 4, 47652}, //
      {"allgather", 16777216, 42496},        // nccl:_all_gather_base, [[16777216]] "signed char"
      {"alltoall", 419430400, 67827},        //
      {"alltoall", 2846720ull * 4, 21124},   // [[2846720]] "int"
      {"allreduce", 26258430ull * 4, 12119}, //
      {"allreduce", 5716654ull * 4, 36158},  //
      {"allgather", 16777216, 63644},        //
  };
  REQUIRE(t->collectives.size() == std::size(want));
  for (size_t i = 0; i < std::size(want); ++i) {
    INFO("collective " << i);
    CHECK(t->collectives[i].kind == want[i].kind);
    CHECK(t->collectives[i].bytes == want[i].bytes);
    CHECK(t->collectives[i].bytes_known);
    CHECK(t->collectives[i].duration == Approx(want[i].kernel_us * 1e-6));
    CHECK(t->collectives[i].ranks == 128); // no group named: distributedInfo's world
  }
}

TEST_CASE("real Kineto trace, PyTorch 2.1 era: sizes from In msg nelems, groups from the args, waits and GPU-side "
          "annotations left out",
          "[traces]")
{
  // A slice of HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz (README.md: what was kept).
  auto t = traces::read_trace(real("hta_nccl_data_slice.json"));
  REQUIRE(t.ok());
  CHECK(t->format == "kineto");
  CHECK(t->world_size == 2);
  CHECK(t->warnings.empty());
  CHECK(t->ops.size() == 200);
  REQUIRE(t->collectives.size() == 21); // 15 all_reduce + 6 broadcast; not the 6 waits nor the 21 GPU-side copies
  size_t allreduces = 0;
  for (const auto& c : t->collectives) {
    allreduces += c.kind == "allreduce";
    CHECK(c.ranks == 2);
    CHECK(c.group == "0");
    CHECK(c.group_ranks == std::vector<int>{0, 1});
  }
  CHECK(allreduces == 15);
  // the first three in time, checked by hand: broadcast 53120 Float, broadcast 53 Long, all_reduce 2049000 Float
  CHECK(t->collectives[0].kind == "broadcast");
  CHECK(t->collectives[0].bytes == 53120 * 4);
  CHECK(t->collectives[0].duration == Approx(30.975e-6));
  CHECK(t->collectives[1].bytes == 53 * 8);
  CHECK(t->collectives[1].duration == Approx(7.775e-6));
  CHECK(t->collectives[2].kind == "allreduce");
  CHECK(t->collectives[2].bytes == 2049000ull * 4);
  CHECK(t->collectives[2].duration == Approx(3306.963e-6));
  CHECK(t->collectives[2].start == Approx(4458676524716.094e-6));
  // a launch 640 us into its call (the kernel's own correlation 63976): still its call's
  bool found = false;
  for (const auto& c : t->collectives)
    if (c.duration == Approx(2129.38e-6)) {
      found = true;
      CHECK(c.bytes == 2431040ull * 4);
    }
  CHECK(found);
}

TEST_CASE("real Chakra .et from Chakra's converter, gzip'd: collectives from the NCCL kernels with their comm_size",
          "[traces]")
{
  // mlcommons/chakra/tests/data/feeder_tests_trace.tar.gz (member chakra.0.et), whole, gzip'd here. The
  // converter typed the host-side c10d:: calls COMM_COLL_NODE too (is_cpu_op, no comm_size): they are compute, and
  // only the 7 NCCL kernels are collectives. Each comm_size was checked by hand against the kernel node's inputs
  // (elements x bytes per element of its one tensor: [tensor id, storage id, offset, elements, element bytes,
  // device]).
  auto t = traces::read_trace(real("chakra_feeder_rank0.et.gz"));
  REQUIRE(t.ok());
  CHECK(t->format == "chakra");
  CHECK(t->warnings.empty());
  CHECK(t->ops.size() == 3657);
  CHECK(t->transfers.empty());
  struct Want {
    const char* kind;
    uint64_t bytes;
    double dur_us;
  } want[] = {
      {"broadcast", 53120ull * 4, 28}, // Tensor(float) of 53120
      {"broadcast", 53ull * 8, 5},     // Tensor(long int) of 53
      {"allreduce", 2049000ull * 4, 5572}, {"allreduce", 7875584ull * 4, 9093}, {"allreduce", 6563840ull * 4, 8512},
      {"allreduce", 6637568ull * 4, 8178}, {"allreduce", 2431040ull * 4, 5327},
  };
  REQUIRE(t->collectives.size() == std::size(want));
  for (size_t i = 0; i < std::size(want); ++i) {
    INFO(i);
    CHECK(t->collectives[i].kind == want[i].kind);
    CHECK(t->collectives[i].bytes == want[i].bytes);
    CHECK(t->collectives[i].bytes_known);
    CHECK(t->collectives[i].duration == Approx(want[i].dur_us * 1e-6));
    CHECK(t->collectives[i].name.rfind("ncclKernel_", 0) == 0);
  }
}

TEST_CASE("real Kineto traces of eight ranks of one job, PyTorch 2.0 era: replayed together, tensorless "
          "record_param_comms read as waits",
          "[traces]")
{
  // param/et_replay/tests/inputs/dlrm_kineto.tar.gz (README.md): DLRM on 8 V100-SXM2 GPUs, one file per rank. Each
  // rank's 8 collectives were checked by hand (the nccl: call inside each record_param_comms, its Input Dims and type;
  // the kernel whose correlation is the cudaLaunchKernel's inside it). Five record_param_comms per rank enclose no
  // nccl: call, name no tensor and launch no kernel (one cudaStreamWaitEvent): waits, not collectives.
  std::vector<traces::Trace> ranks;
  for (const char* f :
       {"worker0_step_12.1694128201545", "worker1_step_12.1694128201556", "worker2_step_12.1694128201554",
        "worker3_step_12.1694128201557", "worker4_step_12.1694128201547", "worker5_step_12.1694128201549",
        "worker6_step_12.1694128201553", "worker7_step_12.1694128201553"}) {
    auto t = traces::read_trace(real(std::string("param_dlrm_kineto/") + f + ".pt.trace.json.gz"));
    REQUIRE(t.ok());
    CHECK(t->format == "kineto");
    CHECK(t->world_size == 8);
    REQUIRE(t->warnings.size() == 1);
    CHECK(t->warnings[0].find("5 record_param_comms with no tensor") != std::string::npos);
    REQUIRE(t->collectives.size() == 8);
    ranks.push_back(std::move(t.value()));
  }
  struct Want {
    const char* kind;
    uint64_t bytes;
    double kernel_us;
  } rank0[] = {
      {"alltoall", 6144 * 4, 2146},   // nccl:all_to_all Input Dims [[6144]] "float"
      {"alltoall", 24 * 8, 1032},     // [[24]] "long int"
      {"alltoall", 384 * 4, 176},     // [[384]] "int"
      {"alltoall", 3392 * 4, 131},    // [[3392]] "int"
      {"allreduce", 394241 * 4, 246}, // nccl:all_reduce [[394241]] "float"
      {"alltoall", 6144 * 4, 514},    //
      {"allreduce", 112 * 4, 601},    //
      {"allreduce", 226960 * 4, 952}, //
  };
  for (size_t i = 0; i < std::size(rank0); ++i) {
    INFO("rank 0, collective " << i);
    const auto& c = ranks[0].collectives[i];
    CHECK(c.kind == rank0[i].kind);
    CHECK(c.bytes == rank0[i].bytes);
    CHECK(c.bytes_known);
    CHECK(c.ranks == 8);
    CHECK(c.duration == Approx(rank0[i].kernel_us * 1e-6));
  }
  // Rank 1 issued its first all_to_all 5.5 ms before rank 0 and its kernel waited for the others: 7635 us.
  CHECK(ranks[1].collectives[0].duration == Approx(7635e-6));
  CHECK(ranks[1].collectives[4].bytes == 394241 * 4);
  auto merged = traces::merge_rank_traces(std::move(ranks));
  REQUIRE(merged.ok());
  CHECK(merged->collectives.size() == 64);
  CHECK(traces::infer_job(merged.value()).ranks == 8);
  std::set<int> seen;
  for (const auto& c : merged->collectives)
    seen.insert(c.rank);
  CHECK(seen == std::set<int>{0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("real timeline of Bluefog (Horovod's timeline writer, forked), unterminated: its own activities left out",
          "[traces]")
{
  // Bluefog-Lib/bluefog's ybc1.json (README.md): a LeNet-style MNIST job. Written by Bluefog's timeline, a fork of
  // Horovod's (one process per tensor, B/E pairs, an array never closed), with Bluefog's names: ENQUEUE_ALLREDUCE and
  // ENQUEUE_BROADCAST around MPI_* phases, and FORWARD and GRADIENT COMPT. spans that are compute, not collectives.
  // Counted by hand (a stack of B/E per tensor): 2,649 outermost spans, 881 ENQUEUE_ALLREDUCE, 8 ENQUEUE_BROADCAST,
  // 880 FORWARD, 880 GRADIENT COMPT.; no size anywhere.
  auto t = traces::read_trace(real("bluefog_timeline_ybc1.json.gz"));
  REQUIRE(t.ok());
  CHECK(t->format == "horovod_timeline");
  REQUIRE(t->collectives.size() == 889);
  size_t allreduces = 0, broadcasts = 0;
  for (const auto& c : t->collectives) {
    allreduces += c.kind == "allreduce";
    broadcasts += c.kind == "broadcast";
    CHECK_FALSE(c.bytes_known);
    CHECK(c.library == "mpi"); // the MPI_* phase inside each
  }
  CHECK(allreduces == 881);
  CHECK(broadcasts == 8);
  // The first: broadcast.conv1.bias, B at 3944807299538 us, its tensor's last E 77 us later.
  CHECK(t->collectives[0].name == "broadcast.conv1.bias");
  CHECK(t->collectives[0].duration == Approx(77e-6));
  bool told = false;
  for (const auto& w : t->warnings)
    told = told || w.find("1755 more: activities that are not collectives") != std::string::npos;
  CHECK(told); // 5 shown + 1755 more = the 1,760 FORWARD and GRADIENT COMPT. spans
}

TEST_CASE("real Horovod timeline as Horovod writes it: a fused allreduce timed by its NCCL phase with sizes from "
          "the end events",
          "[traces]")
{
  // sagemaker-debugger's horovod_timeline_small.json (README.md): written by Horovod's timeline.cc on an 8-rank TF2
  // job, cut after its first allreduce. Checked by hand: pids 1 and 2 are the only tensors past negotiation; their
  // ALLREDUCE begins at 77576059007 and 77576059009 us, NCCL_ALLREDUCE runs 77576573040-046 and 77576573041-080 us
  // (after INIT_NCCL's 299 ms), the end events say float32 [10] and float32 [256, 10]; the NEGOTIATE phases mark ranks
  // 0, 1, 2, 4, 5, 6 and 7 ready (never 3: the world size is the highest plus one); 11 CYCLE_START marks.
  auto t = traces::read_trace(real("smdebug_horovod_timeline_small.json"));
  REQUIRE(t.ok());
  CHECK(t->format == "horovod_timeline");
  CHECK(t->world_size == 8);
  CHECK(t->warnings.empty()); // the 88 tensors still negotiating are not collectives
  REQUIRE(t->collectives.size() == 2);
  const auto& bias = t->collectives[0];
  CHECK(bias.name == "Adam_Allreduce/HorovodAllreduce_gradient_tape_model_dense_1_BiasAdd_BiasAddGrad_0");
  CHECK(bias.kind == "allreduce");
  CHECK(bias.library == "nccl");
  CHECK(bias.bytes == 10 * 4);
  CHECK(bias.issued == Approx(77576059007e-6).epsilon(1e-15));
  CHECK(bias.start == Approx(77576573040e-6).epsilon(1e-15));
  CHECK(bias.duration == Approx(6e-6).margin(1e-9));
  const auto& weights = t->collectives[1];
  CHECK(weights.name == "Adam_Allreduce/HorovodAllreduce_gradient_tape_model_dense_1_MatMul_1_0");
  CHECK(weights.bytes == 256 * 10 * 4);
  CHECK(weights.duration == Approx(39e-6).margin(1e-9));
  CHECK(t->steps.size() == 11);
}

TEST_CASE("real TensorFlow 1.0 timeline of one GPU step: executor and GPU tracer lanes with copies of no size",
          "[traces]")
{
  // ikhlestov/tensorflow_profiling's profiles/GPU/timeline_02_step_0.json (README.md), as TF's Timeline wrote it.
  // Counted by hand: 171 "X" ops on 8 lanes (the executor's gpu:0 and cpu:0, the tracer's stream:all, 12, 13, 14, 7
  // and memcpy); the first MatMul on the executor's gpu:0 lane lasts 112,787 us; no RecvTensor, _Send or _Recv.
  auto t = traces::read_trace(real("tf_timeline_mlp_gpu_step0.json.gz"));
  REQUIRE(t.ok());
  CHECK(t->format == "tf_timeline");
  CHECK(t->ops.size() == 171);
  CHECK(t->transfers.empty());
  CHECK(t->collectives.empty());
  std::set<std::string> lanes;
  double longest = 0;
  for (const auto& o : t->ops) {
    lanes.insert(o.device);
    longest = std::max(longest, o.duration);
  }
  CHECK(lanes.size() == 8);
  CHECK(lanes.count("/job:localhost/replica:0/task:0/gpu:0") == 1);
  CHECK(lanes.count("/gpu:0/memcpy") == 1);
  CHECK(longest == Approx(112787e-6));
}

TEST_CASE("real distributed TensorFlow 1.x timeline: RecvTensor between tasks of unknown size is kept and said so",
          "[traces]")
{
  // The tf-encrypted fork's timeline_client.json (README.md): 1 ps and 2 workers. Counted by hand: 19 "X" events, 7
  // of them RecvTensor (traceEvents[13] to [19]) on the Compute lanes of worker 0 (3), worker 1 (2) and the ps (2),
  // none with a size; the other 12 are ops on the three tasks' CPUs.
  auto t = traces::read_trace(real("tf_timeline_ps_2workers.json"));
  REQUIRE(t.ok());
  CHECK(t->format == "tf_timeline");
  CHECK(t->ops.size() == 12);
  REQUIRE(t->transfers.size() == 7);
  for (const auto& x : t->transfers) {
    CHECK_FALSE(x.bytes_known); // not 0 bytes silently
    CHECK(x.bytes == 0);
  }
  CHECK(t->transfers[0].duration == Approx(129e-6));
  std::set<std::string> tasks;
  for (const auto& o : t->ops)
    tasks.insert(o.device);
  CHECK(tasks == std::set<std::string>{"/job:ps/replica:0/task:0/device:CPU:0",
                                       "/job:worker/replica:0/task:0/device:CPU:0",
                                       "/job:worker/replica:0/task:1/device:CPU:0"});
  size_t told = 0;
  for (const auto& w : t->warnings)
    told += w.find("carries no size: its size is unknown") != std::string::npos;
  CHECK(told == 5); // five named, the rest counted ("... and 2 more")
  CHECK(traces::infer_job(t.value()).ranks == 3);
}
