// One training step as a dataflow graph (Boost.Graph): forward and backward ops per GPU tower, one gradient
// per variable, gradient aggregation, apply; in parameter-server mode the variables live on PS tasks (placed
// greedily by bytes in creation order, as tf.train.replica_device_setter with a greedy byte-size strategy does),
// in allreduce mode every rank keeps its own copy and gradients go through ALLREDUCE ops. partition() then
// cuts every edge between devices into a SEND/RECV pair with a TensorFlow rendezvous key, exactly where TF's
// graph partitioner puts them. Include only from .cpp files (Boost.Graph). Tests: tests/core/step_graph_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "core/training/modes.hpp"
#include "core/training/training_model.hpp"

#include <boost/graph/adjacency_list.hpp>

#include <map>
#include <string>
#include <vector>

namespace tp::training {

struct OpOutput {
  std::string tensor; ///< tensor name (unique in the step), e.g. "grad/conv1/kernel/worker0/gpu0"
  uint64_t bytes = 0;
};

struct Op {
  OpKind kind = OpKind::FORWARD;
  std::string name;   ///< unique op name
  std::string device; ///< full TF device name, "/job:ps/replica:0/task:0/device:CPU:0"
  double seconds = 0; ///< FORWARD, BACKWARD
  std::vector<OpOutput> outputs;
  int arity = 0;          ///< AGGREGATE: inputs summed
  std::string collective; ///< ALLREDUCE: name shared by every rank's op of the same collective
  std::string key;        ///< SEND, RECV: the rendezvous key
  std::string tensor;     ///< SEND, RECV: the tensor moved; APPLY: the variable's tensor
  uint64_t bytes = 0;     ///< SEND, RECV: its size
  bool remote = false;    ///< SEND, RECV: the peer is another task (a transport moves it)
  int order = 0;          ///< scheduling priority on a device (lower first): topological position
};

struct Flow {
  std::string tensor; ///< the tensor carried; empty for a control dependency (same device only)
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Op, Flow>;
using OpId = Graph::vertex_descriptor;

struct StepLayout {
  SyncMode mode = SyncMode::PARAMETER_SERVER;
  int workers = 1;         ///< worker tasks (PS mode) or ranks (allreduce mode)
  int gpus_per_worker = 1; ///< towers per worker task (PS mode); allreduce: 1
  /// PS tasks; 0 = the variables live on worker 0's CPU (single-worker reference, tf_cnn's "params on CPU").
  int ps_tasks = 1;
  /// PS mode with several towers: sum the towers' gradients on the worker CPU before one push (tf_cnn_benchmarks'
  /// fetch-from-PS variable manager); false: every tower pushes its own gradient.
  bool aggregate_on_worker = true;
  /// PS mode: each worker pulls every variable once to its CPU and its towers read that copy (tf_cnn_benchmarks'
  /// distributed_replicated refreshes a worker's replicas this way); false: every tower pulls from the PS itself
  /// (tf_cnn_benchmarks' parameter_server mode: "each tower gets a copy of the variables from the PS").
  bool fetch_per_worker = false;
  /// Allreduce mode: hold rank 0's ops only, every rank running them on its own devices (StepGraph::rank_template).
  bool one_rank_template = false;
  /// Allreduce mode: reduce gradients in host memory (MaTEx's TfReduce is a CPU kernel: gradients are copied to the
  /// host, allreduced there, and copied back for the update); false: on the GPU (Baidu, Horovod).
  bool allreduce_on_host = false;
  /// GPU index of worker w's tower g (default w's towers are GPUs 0..G-1 of its host).
  std::vector<std::vector<int>> gpu_of;
};

std::string worker_task(int w);
std::string ps_task(int s);

struct StepGraph {
  Graph graph;
  StepLayout layout;
  std::vector<std::string> tasks; ///< every task that runs ops
  std::vector<int> variable_ps;   ///< PS shard of each variable (PS mode), in model order
  std::vector<uint64_t> ps_bytes; ///< bytes of variables per PS shard
  size_t sends = 0;               ///< SEND ops after partition (cross-host and local)
  size_t remote_sends = 0;
  uint64_t remote_bytes = 0; ///< bytes crossing tasks per step
  /// Each task's ops in vertex order (index_tasks; build_step_graph and partition keep it up to date), so that a task
  /// finds its ops without a scan of every rank's ops and a string cut per op.
  std::map<std::string, std::vector<OpId>> ops_by_task;
  /// Allreduce mode with StepLayout::one_rank_template: the graph holds rank 0's ops only and every rank runs them
  /// on its own devices under its own names (RankNames); `sends` counts every rank's. Ranks differ in nothing else
  /// (their GPU's place in the host is the backend's business), so one copy serves a thousand ranks.
  bool rank_template = false;
  /// The ops of `task` in vertex order (none for a task that runs no op); in a rank template, rank 0's for every rank.
  const std::vector<OpId>& ops_of(const std::string& task) const;
};

/// A rank's names for the ops of a rank template: rank 0's devices, keys, op and tensor names with the rank's task,
/// GPU and "rank<r>" in place of rank 0's (the identity for rank 0 and for a graph that is not a template).
class RankNames {
public:
  RankNames() = default;
  RankNames(const StepLayout& layout, int rank);
  std::string operator()(const std::string& s) const;
  bool identity() const { return rank_ == 0; }
  int rank() const { return rank_; }

private:
  int rank_ = 0;
  std::string gpu_from_, gpu_to_, cpu_from_, cpu_to_, token_to_;
};

/// The rank of allreduce task `task` ("/job:worker/replica:0/task:<r>"), or -1.
int rank_of_task(const std::string& task);

/// Fill StepGraph::ops_by_task from the graph's ops.
void index_tasks(StepGraph& g);

/// Build the unpartitioned step graph. Errors for an empty model or a layout that does not fit.
Result<StepGraph> build_step_graph(const TrainingModel& model, const StepLayout& layout);

/// The partitioned step graph; in allreduce mode with StepLayout::one_rank_template, rank 0's ops only
/// (StepGraph::rank_template) after checking that renaming them gives rank 1's exactly (else every rank's ops, as
/// without the option: a model whose names contain rank 0's words).
Result<StepGraph> build_partitioned_step_graph(const TrainingModel& model, const StepLayout& layout);

/// Insert SEND/RECV pairs on every edge between devices (one pair per tensor and destination device) and
/// set each op's scheduling order. Idempotent in effect: a partitioned graph has no cross-device edges.
void partition(StepGraph& g);

/// The task ("/job:worker/replica:0/task:1") of a full device name.
std::string task_of_device(const std::string& device);

} // namespace tp::training
