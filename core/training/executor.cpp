// Task executor (see executor.hpp). Per step: each op waits for its inputs; compute ops queue on their
// device (GPU: one at a time in graph order; CPU: `cpu_threads` at a time); an AGGREGATE op adds each input
// as it arrives (the first is taken as the accumulator); the step ends when every op of the task is done.
// The ops' wiring (edges, slots, queues) is resolved once into an ExecutorPlan, which every rank of a rank template
// shares; each executor keeps only its rank's names, device places, keys, variables and per-step state.
#include "core/training/executor.hpp"

#include "core/rendezvous/rendezvous_key.hpp"
#include "core/training/step_graph.hpp"
#include "core/transports/task_runtime.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <queue>
#include <span>
#include <string_view>
#include <unordered_map>

namespace tp::training {

namespace {

struct Job {
  int order;
  uint64_t seq;
  std::function<void(std::function<void()>)> run; ///< starts the work; calls its argument when finished
  bool operator<(const Job& o) const { return order != o.order ? order > o.order : seq > o.seq; }
};

/// A device's compute resource: `slots` jobs at a time, lowest graph order first.
struct DeviceQueue {
  int slots = 1;
  int busy = 0;
  std::priority_queue<Job> ready;
};

} // namespace

namespace {

/// The wiring of a task's ops, resolved once from the graph (prepare()): what every rank of a rank template shares,
/// so that a thousand ranks keep one copy. Nothing here depends on the rank: its names, devices' places, keys and
/// variables stay with each executor.
struct ExecutorPlan {
  /// One out-edge of an op: the consumer, which of this op's outputs it carries (its slot; NO_OUTPUT for a control
  /// dependency, MISSING when the op has no output of that name) and the consumer's input slot for it.
  static constexpr int NO_OUTPUT = -1, MISSING = -2;
  struct OutEdge {
    int consumer = 0;
    int output = NO_OUTPUT;
    int input = 0;
    const std::string* tensor = nullptr; ///< the graph's (empty for a control dependency)
  };
  struct PlanOp {
    OpId id{};
    const Op* op = nullptr;
    std::vector<OutEdge> out;
    int in_degree = 0;
    /// Its input tensors' names (the graph's), sorted and unique (slot k holds the k-th); an op that reads "its" input
    /// takes slot 0.
    std::vector<const std::string*> inputs;
    int send_input = -1;          ///< SEND: the slot of the tensor it sends (-1: it has no such input)
    int queue = 0;                ///< index of its device queue
    int key = -1;                 ///< SEND, RECV: its rendezvous key's index
    int first_input = 0;          ///< where its input slots start in an executor's flat array of inputs
    int first_output = 0;         ///< the same for its outputs
    int output_slots = 0;         ///< how many outputs it hands on (output_names)
    int aggregate = -1;           ///< AGGREGATE: its accumulator's index
    int apply = -1;               ///< APPLY: the index of its variable among the APPLY ops'
    bool remote_consumer = false; ///< an output feeds a remote SEND: allocate NIC-compatible
  };
  std::vector<PlanOp> ops;
  std::vector<const std::string*> queue_devices; ///< each queue's device (the graph's name)
  std::vector<const std::string*> keys;          ///< each key (the graph's name)
  int input_slots = 0, output_slots = 0, aggregates = 0, applies = 0;

  /// The tensors an op hands on, in output-slot order: a RECV its received tensor, APPLY and SEND nothing, the others
  /// their outputs.
  static std::vector<const std::string*> output_names(const Op& op)
  {
    if (op.kind == OpKind::RECV) return {&op.tensor};
    if (op.kind == OpKind::APPLY || op.kind == OpKind::SEND) return {};
    std::vector<const std::string*> out;
    for (const auto& o : op.outputs)
      out.push_back(&o.tensor);
    return out;
  }

  static int slot_of(const std::vector<const std::string*>& sorted, const std::string& name)
  {
    const auto it = std::lower_bound(sorted.begin(), sorted.end(), name,
                                     [](const std::string* a, const std::string& b) { return *a < b; });
    return it != sorted.end() && **it == name ? int(it - sorted.begin()) : -1;
  }

  /// The plan of `task`'s ops; errors (named with `names`) for an edge that leaves the task.
  static Result<std::shared_ptr<const ExecutorPlan>> build(const StepGraph& sg, const std::string& task,
                                                           const RankNames& names)
  {
    const Graph& g = sg.graph;
    auto plan = std::make_shared<ExecutorPlan>();
    auto& ops = plan->ops;
    std::unordered_map<OpId, int> local_of;
    const auto& mine = sg.ops_of(task);
    ops.reserve(mine.size());
    local_of.reserve(mine.size());
    for (const OpId id : mine) {
      local_of[id] = int(ops.size());
      PlanOp po;
      po.id = id;
      po.op = &g[id];
      ops.push_back(std::move(po));
    }
    std::map<std::string_view, int> queue_of; // device -> its queue
    for (auto& po : ops) {
      auto [q, added] = queue_of.emplace(po.op->device, int(plan->queue_devices.size()));
      if (added) plan->queue_devices.push_back(&po.op->device);
      po.queue = q->second;
      if (po.op->kind == OpKind::SEND || po.op->kind == OpKind::RECV) {
        po.key = int(plan->keys.size());
        plan->keys.push_back(&po.op->key);
      }
      for (auto [e, eend] = boost::out_edges(po.id, g); e != eend; ++e) {
        const OpId t = boost::target(*e, g);
        auto it = local_of.find(t);
        if (it == local_of.end())
          return Error::at("", names(po.op->name), "edges only within the task (a partitioned graph)",
                           names(g[t].device));
        po.out.push_back(OutEdge{it->second, NO_OUTPUT, 0, &g[*e].tensor});
        if (g[t].kind == OpKind::SEND && g[t].remote) po.remote_consumer = true;
      }
    }
    // Each op's input slots (its in-edges' tensors by name), and which slot and output every edge carries.
    for (auto& po : ops)
      for (const auto& e : po.out) {
        ++ops[size_t(e.consumer)].in_degree;
        if (!e.tensor->empty()) ops[size_t(e.consumer)].inputs.push_back(e.tensor);
      }
    for (auto& po : ops) {
      auto less = [](const std::string* a, const std::string* b) { return *a < *b; };
      auto same = [](const std::string* a, const std::string* b) { return *a == *b; };
      std::sort(po.inputs.begin(), po.inputs.end(), less);
      po.inputs.erase(std::unique(po.inputs.begin(), po.inputs.end(), same), po.inputs.end());
      po.inputs.shrink_to_fit();
      if (po.op->kind == OpKind::SEND) po.send_input = slot_of(po.inputs, po.op->tensor);
      po.first_input = plan->input_slots;
      plan->input_slots += int(po.inputs.size());
    }
    for (auto& po : ops) {
      const auto outs = output_names(*po.op);
      po.first_output = plan->output_slots;
      po.output_slots = int(outs.size());
      plan->output_slots += po.output_slots;
      if (po.op->kind == OpKind::AGGREGATE) po.aggregate = plan->aggregates++;
      if (po.op->kind == OpKind::APPLY) po.apply = plan->applies++;
      for (auto& e : po.out) {
        if (e.tensor->empty()) continue;
        e.input = slot_of(ops[size_t(e.consumer)].inputs, *e.tensor);
        const auto it = std::find_if(outs.begin(), outs.end(), [&](const std::string* o) { return *o == *e.tensor; });
        e.output = it == outs.end() ? MISSING : int(it - outs.begin());
      }
      po.out.shrink_to_fit();
    }
    return std::shared_ptr<const ExecutorPlan>(std::move(plan));
  }

  /// The plan of `task`'s ops: a rank template's is built once and shared by every rank's executor while any lives
  /// (the graph outlives them, so its address names it); any other graph's, per task.
  static Result<std::shared_ptr<const ExecutorPlan>> of(const StepGraph& sg, const std::string& task,
                                                        const RankNames& names)
  {
    if (!sg.rank_template) return build(sg, task, names);
    static std::mutex mutex; // emulated tasks may prepare on their own threads
    static std::map<const StepGraph*, std::weak_ptr<const ExecutorPlan>> shared;
    std::lock_guard<std::mutex> lock(mutex);
    for (auto it = shared.begin(); it != shared.end();)
      it = it->second.expired() ? shared.erase(it) : std::next(it);
    const auto& mine = sg.ops_of(task);
    if (auto it = shared.find(&sg); it != shared.end())
      if (auto plan = it->second.lock())
        if (plan->ops.size() == mine.size() && (mine.empty() || plan->ops.front().op == &sg.graph[mine.front()]))
          return plan; // (a graph made where a freed one was gets its own)
    auto plan = build(sg, task, names);
    if (plan.ok()) shared[&sg] = plan.value();
    return plan;
  }
};

} // namespace

struct TaskExecutor::Impl {
  transports::TaskRuntime& task;
  const StepGraph& sg;
  ExecutorOptions options;
  CollectiveHook* collectives;

  using PlanOp = ExecutorPlan::PlanOp;
  std::shared_ptr<const ExecutorPlan> plan;
  std::span<const PlanOp> ops;             ///< the plan's
  std::vector<rendezvous::ParsedKey> keys; ///< the SEND and RECV ops' keys, under this rank's names
  RankNames names;                         ///< this rank's names for a rank template's ops (else the identity)
  std::vector<DeviceQueue> queues;
  std::vector<Location> queue_location;             ///< where each queue's device is, for this rank
  std::map<int, Tensor> variables;                  ///< local index of VARIABLE op -> its persistent tensor
  std::map<std::string, Tensor> variable_by_tensor; ///< the same, by output tensor name (for APPLY)
  std::vector<Tensor*> apply_variable;              ///< by the APPLY op's index: the variable it updates
  /// What ran this step, kept compact (events() names the ops when asked).
  struct Event {
    int op;
    OpKind kind;
    double start, end;
    uint64_t bytes;
  };
  std::vector<Event> events;

  // Per-step state.
  struct OpState {
    double ready = -1, start = -1, end = -1;
    int pending = 0;
    int arrived = 0; ///< AGGREGATE: inputs summed so far
    int outputs = 0; ///< outputs held (from the op's first_output in `output_values`)
    bool done = false;
  };
  std::vector<OpState> state;
  std::vector<Tensor> input_values;  ///< every op's input slots, from its first_input
  std::vector<Tensor> output_values; ///< every op's outputs, kept to the next step as the tensors' last holders
  std::vector<Tensor> accumulators;  ///< AGGREGATE ops' running sums
  int64_t step = 0;
  uint64_t generation = 0;
  size_t remaining = 0;
  bool failed = false;
  FailedOp failed_op; ///< the transfer or collective whose error failed the step

  std::function<void(Status)> step_done;
  uint64_t seq = 0;

  Impl(transports::TaskRuntime& t, const StepGraph& g, ExecutorOptions o, CollectiveHook* c)
      : task(t), sg(g), options(o), collectives(c)
  {
  }

  Runtime& rt() { return task.runtime(); }
  Location location_of(int i) const { return queue_location[size_t(ops[size_t(i)].queue)]; }
  Tensor* input_slots(int i) { return input_values.data() + ops[size_t(i)].first_input; }

  Status prepare()
  {
    const std::string me = task.spec().task;
    if (sg.rank_template) {
      const int rank = rank_of_task(me);
      if (rank < 0 || rank >= sg.layout.workers)
        return Error::at("", me, "one of the " + std::to_string(sg.layout.workers) + " ranks of the graph",
                         "another task");
      names = RankNames(sg.layout, rank);
    }
    auto built = ExecutorPlan::of(sg, me, names);
    if (!built.ok()) return built.error();
    plan = built.value();
    ops = plan->ops;
    for (const std::string* device : plan->queue_devices) {
      auto d = rendezvous::parse_device_name(names(*device));
      if (!d.ok()) return d.error();
      queue_location.push_back(transports::device_location(d.value(), task.spec().cpu_numa_node));
      queues.emplace_back().slots = d->type == "GPU" ? 1 : std::max(1, options.cpu_threads);
    }
    keys.reserve(plan->keys.size());
    for (const std::string* key : plan->keys) {
      auto k = rendezvous::parse_key(names(*key));
      if (!k.ok()) return k.error();
      keys.push_back(k.value());
    }
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op& op = *ops[i].op;
      if (op.kind == OpKind::ALLREDUCE && !collectives)
        return Error::at("", names(op.name), "a collectives engine for ALLREDUCE ops", "none");
      if (op.kind != OpKind::VARIABLE) continue;
      const auto& o = op.outputs.at(0);
      auto t = task.make_tensor(DataType::FLOAT, TensorShape{{int64_t((o.bytes + 3) / 4)}}, location_of(int(i)),
                                AllocatorAttributes{false, false, ops[i].remote_consumer});
      if (!t.ok()) return t.error();
      variables[int(i)] = t.value();
      variable_by_tensor[o.tensor] = t.value();
    }
    apply_variable.assign(size_t(plan->applies), nullptr);
    for (const auto& po : ops) {
      if (po.op->kind != OpKind::APPLY) continue;
      auto it = variable_by_tensor.find(po.op->tensor);
      if (it == variable_by_tensor.end())
        return Error::at("", names(po.op->name), "its variable " + names(po.op->tensor) + " on the same task", "none");
      apply_variable[size_t(po.apply)] = &it->second;
    }
    return ok_status();
  }

  /// An op's first input (slot 0: its only one, or the first by name), or an error when it has none. Every slot is
  /// filled by the time the op runs (each is an in-edge's tensor); a tensor without storage (a 0-byte transfer's) is
  /// handed on as it is.
  const Tensor* first_input(int i)
  {
    if (ops[size_t(i)].inputs.empty()) {
      fail(Error::at("", names(ops[size_t(i)].op->name), "an input tensor", "none"));
      return nullptr;
    }
    return input_slots(i);
  }

  void fail(const Error& e)
  {
    if (failed) return;
    failed = true;
    task.rendezvous().abort_step(step, e);
    auto cb = std::move(step_done);
    step_done = nullptr;
    ++generation;
    if (cb) cb(e);
  }

  void run_step(int64_t s, std::function<void(Status)> done)
  {
    step = s;
    ++generation;
    failed = false;
    failed_op = {};
    step_done = std::move(done);
    // The last step's tensors are released here, as a fresh state would release them.
    state.assign(ops.size(), OpState{});
    input_values.assign(size_t(plan->input_slots), Tensor{});
    output_values.assign(size_t(plan->output_slots), Tensor{});
    accumulators.assign(size_t(plan->aggregates), Tensor{});
    remaining = ops.size();
    for (size_t i = 0; i < ops.size(); ++i)
      state[i].pending = ops[i].in_degree;
    if (ops.empty()) {
      rt().post([this, g = generation] { finish_step(g); });
      return;
    }
    for (size_t i = 0; i < ops.size(); ++i)
      if (ops[i].in_degree == 0) dispatch(int(i));
  }

  void finish_step(uint64_t gen)
  {
    if (gen != generation || failed) return;
    auto cb = std::move(step_done);
    step_done = nullptr;
    if (cb) cb(ok_status());
  }

  /// Queue `run` on the op's device; it calls its argument when the work is over.
  void enqueue(int i, std::function<void(std::function<void()>)> run)
  {
    const int q = ops[size_t(i)].queue;
    queues[size_t(q)].ready.push(
        Job{ops[size_t(i)].op->order, seq++, [this, i, run = std::move(run)](std::function<void()> free) {
              state[size_t(i)].start = rt().now();
              run(std::move(free));
            }});
    pump(q);
  }

  void pump(int q)
  {
    DeviceQueue& dq = queues[size_t(q)];
    while (dq.busy < dq.slots && !dq.ready.empty()) {
      Job j = dq.ready.top();
      dq.ready.pop();
      ++dq.busy;
      j.run([this, q, g = generation] {
        if (g != generation) return;
        --queues[size_t(q)].busy;
        pump(q);
      });
    }
  }

  void record(int i, OpKind kind, double start, uint64_t bytes = 0)
  {
    events.push_back(Event{i, kind, start, rt().now(), bytes});
  }

  Work compute_work(int i, double seconds)
  {
    const Location where = location_of(i);
    const std::string& name = names(ops[size_t(i)].op->name);
    return where.is_gpu() ? Work::gpu_kernel(where.index, seconds, name) : Work::cpu(where.index, seconds, name);
  }

  void dispatch(int i)
  {
    const auto& lo = ops[size_t(i)];
    state[size_t(i)].ready = state[size_t(i)].start = rt().now();
    const Op& op = *lo.op;
    const uint64_t gen = generation;
    switch (op.kind) {
    case OpKind::VARIABLE:
      complete(i, {variables.at(i)});
      return;
    case OpKind::FORWARD:
    case OpKind::BACKWARD:
      enqueue(i, [this, i, gen](std::function<void()> free) {
        const double t0 = rt().now();
        const Op& op = *ops[size_t(i)].op;
        rt().execute(compute_work(i, op.seconds), [this, i, gen, t0, free](Status st) {
          if (gen != generation) return;
          free();
          if (!st.ok()) return fail(st.error());
          const Op& op = *ops[size_t(i)].op;
          record(i, op.kind, t0);
          std::vector<Tensor> outs;
          outs.reserve(op.outputs.size());
          for (const auto& o : op.outputs) {
            auto t = task.make_tensor(DataType::FLOAT, TensorShape{{int64_t((o.bytes + 3) / 4)}}, location_of(i),
                                      AllocatorAttributes{false, false, ops[size_t(i)].remote_consumer});
            if (!t.ok()) return fail(t.error());
            outs.push_back(t.value());
          }
          complete(i, std::move(outs));
        });
      });
      return;
    case OpKind::APPLY:
      if (const Tensor* grad = first_input(i); !grad || !grad->storage) {
        if (grad) fail(Error::at("", names(op.name), "a gradient with storage to apply", "an empty tensor"));
        return;
      }
      enqueue(i, [this, i, gen](std::function<void()> free) {
        const double t0 = rt().now();
        const Tensor& grad = *input_slots(i);
        const Tensor& var = *apply_variable[size_t(ops[size_t(i)].apply)];
        Work w = Work::reduce(*var.buffer(), *grad.buffer(), ops[size_t(i)].op->bytes);
        w.threads = 0; // TF's kernels split large element-wise ops over the intra-op pool
        rt().execute(w, [this, i, gen, t0, free](Status st) {
          if (gen != generation) return;
          free();
          if (!st.ok()) return fail(st.error());
          record(i, OpKind::APPLY, t0, ops[size_t(i)].op->bytes);
          complete(i, {});
        });
      });
      return;
    case OpKind::AGGREGATE:
      return; // summed input by input in deliver()
    case OpKind::IDENTITY: {
      const Tensor* in = first_input(i);
      if (in) complete(i, {*in});
      return;
    }
    case OpKind::SEND: {
      if (lo.send_input < 0) return fail(Error::at("", names(op.name), "input tensor " + names(op.tensor), "none"));
      if (auto st = task.rendezvous().send(step, keys[size_t(lo.key)], input_slots(i)[lo.send_input], false); !st.ok())
        return fail(st.error());
      complete(i, {});
      return;
    }
    case OpKind::RECV: {
      const double t0 = rt().now();
      rendezvous::RecvArgs args;
      args.dst_location = location_of(i);
      args.alloc_attrs.nic_compatible = op.remote;
      task.rendezvous().recv_async(
          step, keys[size_t(lo.key)], args, [this, i, gen, t0](Result<rendezvous::RecvOutcome> r) {
            if (gen != generation) return;
            if (!r.ok()) {
              if (!failed)
                failed_op = {OpKind::RECV, names(ops[size_t(i)].op->name), keys[size_t(ops[size_t(i)].key)].full, t0};
              return fail(r.error());
            }
            record(i, OpKind::RECV, t0, ops[size_t(i)].op->bytes);
            complete(i, {r->tensor});
          });
      return;
    }
    case OpKind::ALLREDUCE: {
      const double t0 = rt().now();
      const Tensor* first = first_input(i);
      if (!first) return;
      Tensor in = *first;
      collectives->allreduce(step, op.collective, in, [this, i, gen, t0](Result<Tensor> r) {
        if (gen != generation) return;
        if (!r.ok()) {
          if (!failed)
            failed_op = {OpKind::ALLREDUCE, names(ops[size_t(i)].op->name), ops[size_t(i)].op->collective, t0};
          return fail(r.error());
        }
        record(i, OpKind::ALLREDUCE, t0, ops[size_t(i)].op->outputs.at(0).bytes);
        complete(i, {r.value()});
      });
      return;
    }
    }
  }

  /// Hands `value` (empty for a control dependency) to input slot `input` of op `target`.
  void deliver(int target, bool control, int input, const Tensor& value)
  {
    OpState& s = state[size_t(target)];
    const Op& op = *ops[size_t(target)].op;
    --s.pending;
    if (op.kind == OpKind::AGGREGATE) s.ready = rt().now();
    if (op.kind == OpKind::AGGREGATE && !control) {
      Tensor& accumulator = accumulators[size_t(ops[size_t(target)].aggregate)];
      if (!accumulator.storage) {
        accumulator = value; // the first gradient becomes the accumulator
        if (++s.arrived == op.arity) complete(target, {accumulator});
        return;
      }
      const uint64_t gen = generation;
      enqueue(target, [this, target, value, gen](std::function<void()> free) {
        const double t0 = rt().now();
        const Tensor& accumulator = accumulators[size_t(ops[size_t(target)].aggregate)];
        const Op& op = *ops[size_t(target)].op;
        Work w = Work::reduce(*accumulator.buffer(), *value.buffer(), op.outputs.at(0).bytes);
        w.threads = 0;
        rt().execute(w, [this, target, gen, t0, free](Status st) {
          if (gen != generation) return;
          free();
          if (!st.ok()) return fail(st.error());
          OpState& s = state[size_t(target)];
          const Op& op = *ops[size_t(target)].op;
          record(target, OpKind::AGGREGATE, t0, op.outputs.at(0).bytes);
          if (++s.arrived == op.arity) complete(target, {accumulators[size_t(ops[size_t(target)].aggregate)]});
        });
      });
      return;
    }
    if (!control) input_slots(target)[input] = value;
    if (s.pending == 0) dispatch(target);
  }

  void complete(int i, std::vector<Tensor> outputs)
  {
    OpState& s = state[size_t(i)];
    s.done = true;
    s.end = rt().now();
    if (s.ready < 0) s.ready = s.start = s.end; // an AGGREGATE of one input
    // Held to the next step (the tensors' last holders); an op hands on no more than its output names.
    const PlanOp& po = ops[size_t(i)];
    s.outputs = std::min(int(outputs.size()), po.output_slots);
    Tensor* held = output_values.data() + po.first_output;
    for (int k = 0; k < s.outputs; ++k)
      held[k] = std::move(outputs[size_t(k)]);
    for (const auto& e : po.out) {
      if (failed) return;
      if (e.tensor->empty()) {
        deliver(e.consumer, true, 0, Tensor{});
        continue;
      }
      if (e.output < 0 || e.output >= state[size_t(i)].outputs)
        return fail(Error::at("", names(po.op->name), "an output named " + names(*e.tensor), "none"));
      deliver(e.consumer, false, e.input, held[e.output]);
    }
    if (--remaining == 0) finish_step(generation);
  }
};

TaskExecutor::TaskExecutor(transports::TaskRuntime& task, const StepGraph& graph, ExecutorOptions options,
                           CollectiveHook* collectives)
    : impl_(std::make_unique<Impl>(task, graph, options, collectives))
{
}

TaskExecutor::~TaskExecutor() = default;

Status TaskExecutor::prepare()
{
  return impl_->prepare();
}

void TaskExecutor::run_step(int64_t step, std::function<void(Status)> done)
{
  impl_->run_step(step, std::move(done));
}

const std::map<std::string, Tensor>& TaskExecutor::variables() const
{
  return impl_->variable_by_tensor;
}

size_t TaskExecutor::op_count() const
{
  return impl_->ops.size();
}

std::vector<OpEvent> TaskExecutor::events() const
{
  std::vector<OpEvent> out;
  out.reserve(impl_->events.size());
  for (const auto& e : impl_->events) {
    const Op& op = *impl_->ops[size_t(e.op)].op;
    out.push_back(OpEvent{impl_->names(op.name), e.kind, impl_->names(op.device), e.start, e.end, e.bytes});
  }
  return out;
}

void TaskExecutor::clear_events()
{
  impl_->events.clear();
}

void TaskExecutor::add_compute_seconds(double& busy) const
{
  for (const auto& e : impl_->events)
    if (e.kind == OpKind::FORWARD || e.kind == OpKind::BACKWARD) busy += e.end - e.start;
}

double TaskExecutor::last_end() const
{
  double last = -1;
  for (const auto& s : impl_->state)
    last = std::max(last, s.end);
  return last;
}

std::vector<OpTiming> TaskExecutor::timings() const
{
  std::vector<OpTiming> out;
  for (size_t i = 0; i < impl_->ops.size() && i < impl_->state.size(); ++i) {
    const auto& s = impl_->state[i];
    out.push_back(OpTiming{impl_->ops[i].op->name, s.ready, s.start, s.end});
  }
  return out;
}

} // namespace tp::training

namespace tp::training {
FailedOp TaskExecutor::failed_op() const
{
  return impl_->failed_op;
}

std::vector<FailedOp> TaskExecutor::waiting_ops() const
{
  std::vector<FailedOp> out;
  for (size_t i = 0; i < impl_->ops.size(); ++i) {
    const auto& lo = impl_->ops[i];
    const auto& st = impl_->state[i];
    if (st.done || st.start < 0) continue;
    if (lo.op->kind == OpKind::RECV)
      out.push_back({OpKind::RECV, impl_->names(lo.op->name), impl_->keys[size_t(lo.key)].full, st.start});
    if (lo.op->kind == OpKind::ALLREDUCE)
      out.push_back({OpKind::ALLREDUCE, impl_->names(lo.op->name), lo.op->collective, st.start});
  }
  std::stable_sort(out.begin(), out.end(), [](const FailedOp& a, const FailedOp& b) { return a.started < b.started; });
  return out;
}
} // namespace tp::training
