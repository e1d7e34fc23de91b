// Task executor (see executor.hpp). Per step: each op waits for its inputs; compute ops queue on their
// device (GPU: one at a time in graph order; CPU: `cpu_threads` at a time); an AGGREGATE op adds each input
// as it arrives (the first is taken as the accumulator); the step ends when every op of the task is done.
#include "core/training/executor.hpp"

#include "core/rendezvous/rendezvous_key.hpp"
#include "core/training/step_graph.hpp"
#include "core/transports/task_runtime.hpp"

#include <algorithm>
#include <map>
#include <queue>

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

struct TaskExecutor::Impl {
  transports::TaskRuntime& task;
  const StepGraph& sg;
  ExecutorOptions options;
  CollectiveHook* collectives;

  /// One out-edge of an op, resolved once in prepare(): the consumer, which of this op's outputs it carries (its
  /// slot; NO_OUTPUT for a control dependency, MISSING when the op has no output of that name) and the consumer's
  /// input slot for it.
  static constexpr int NO_OUTPUT = -1, MISSING = -2;
  struct OutEdge {
    int consumer = 0;
    int output = NO_OUTPUT;
    int input = 0;
    const std::string* tensor = nullptr; ///< the graph's (empty for a control dependency)
  };
  struct LocalOp {
    OpId id{};
    const Op* op = nullptr;
    std::vector<OutEdge> out;
    int in_degree = 0;
    /// Its input tensors' names (the graph's), sorted and unique (slot k holds the k-th); an op that reads "its" input
    /// takes slot 0.
    std::vector<const std::string*> inputs;
    int send_input = -1; ///< SEND: the slot of the tensor it sends (-1: it has no such input)
    Location location;
    int queue = 0;                ///< index of its device queue
    int key = -1;                 ///< SEND, RECV: its rendezvous key in `keys`
    bool remote_consumer = false; ///< an output feeds a remote SEND: allocate NIC-compatible
    Tensor* variable = nullptr;   ///< APPLY: the variable it updates
  };
  std::vector<LocalOp> ops;
  std::vector<rendezvous::ParsedKey> keys; ///< the SEND and RECV ops' keys
  RankNames names;                         ///< this rank's names for a rank template's ops (else the identity)
  std::vector<DeviceQueue> queues;
  std::map<int, Tensor> variables;                  ///< local index of VARIABLE op -> its persistent tensor
  std::map<std::string, Tensor> variable_by_tensor; ///< the same, by output tensor name (for APPLY)
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
    bool done = false;
    std::vector<Tensor> inputs;  ///< by input slot
    std::vector<Tensor> outputs; ///< by output slot, kept to the next step as the tensors' last holders
    Tensor accumulator;
  };
  std::vector<OpState> state;
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

  Status prepare()
  {
    const Graph& g = sg.graph;
    const std::string me = task.spec().task;
    if (sg.rank_template) {
      const int rank = rank_of_task(me);
      if (rank < 0 || rank >= sg.layout.workers)
        return Error::at("", me, "one of the " + std::to_string(sg.layout.workers) + " ranks of the graph",
                         "another task");
      names = RankNames(sg.layout, rank);
    }
    std::map<OpId, int> local_of;
    ops.reserve(sg.ops_of(me).size()); // exactly: a thousand ranks each keep their own
    for (const OpId id : sg.ops_of(me)) {
      local_of[id] = int(ops.size());
      LocalOp lo;
      lo.id = id;
      lo.op = &g[id];
      ops.push_back(std::move(lo));
    }
    std::map<std::string, int> queue_of; // device -> its queue
    std::vector<Location> queue_location;
    for (auto& lo : ops) {
      auto [q, added] = queue_of.emplace(lo.op->device, int(queues.size()));
      if (added) {
        auto d = rendezvous::parse_device_name(names(lo.op->device));
        if (!d.ok()) return d.error();
        queue_location.push_back(transports::device_location(d.value(), task.spec().cpu_numa_node));
        queues.emplace_back().slots = d->type == "GPU" ? 1 : std::max(1, options.cpu_threads);
      }
      lo.queue = q->second;
      lo.location = queue_location[size_t(lo.queue)];
      if (lo.op->kind == OpKind::SEND || lo.op->kind == OpKind::RECV) {
        auto k = rendezvous::parse_key(names(lo.op->key));
        if (!k.ok()) return k.error();
        lo.key = int(keys.size());
        keys.push_back(k.value());
      }
      for (auto [e, eend] = boost::out_edges(lo.id, g); e != eend; ++e) {
        const OpId t = boost::target(*e, g);
        auto it = local_of.find(t);
        if (it == local_of.end())
          return Error::at("", names(lo.op->name), "edges only within the task (a partitioned graph)",
                           names(g[t].device));
        lo.out.push_back(OutEdge{it->second, NO_OUTPUT, 0, &g[*e].tensor});
        if (g[t].kind == OpKind::SEND && g[t].remote) lo.remote_consumer = true;
      }
    }
    // Each op's input slots (its in-edges' tensors by name), and which slot and output every edge carries.
    for (auto& lo : ops)
      for (const auto& e : lo.out) {
        ++ops[size_t(e.consumer)].in_degree;
        if (!e.tensor->empty()) ops[size_t(e.consumer)].inputs.push_back(e.tensor);
      }
    for (auto& lo : ops) {
      auto less = [](const std::string* a, const std::string* b) { return *a < *b; };
      auto same = [](const std::string* a, const std::string* b) { return *a == *b; };
      std::sort(lo.inputs.begin(), lo.inputs.end(), less);
      lo.inputs.erase(std::unique(lo.inputs.begin(), lo.inputs.end(), same), lo.inputs.end());
      if (lo.op->kind == OpKind::SEND) lo.send_input = slot_of(lo.inputs, lo.op->tensor);
    }
    for (auto& lo : ops) {
      const auto outs = output_names(*lo.op);
      for (auto& e : lo.out) {
        if (e.tensor->empty()) continue;
        e.input = slot_of(ops[size_t(e.consumer)].inputs, *e.tensor);
        const auto it = std::find_if(outs.begin(), outs.end(), [&](const std::string* o) { return *o == *e.tensor; });
        e.output = it == outs.end() ? MISSING : int(it - outs.begin());
      }
    }
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op& op = *ops[i].op;
      if (op.kind == OpKind::ALLREDUCE && !collectives)
        return Error::at("", names(op.name), "a collectives engine for ALLREDUCE ops", "none");
      if (op.kind != OpKind::VARIABLE) continue;
      const auto& o = op.outputs.at(0);
      auto t = task.make_tensor(DataType::FLOAT, TensorShape{{int64_t((o.bytes + 3) / 4)}}, ops[i].location,
                                AllocatorAttributes{false, false, ops[i].remote_consumer});
      if (!t.ok()) return t.error();
      variables[int(i)] = t.value();
      variable_by_tensor[o.tensor] = t.value();
    }
    for (auto& lo : ops) {
      if (lo.op->kind != OpKind::APPLY) continue;
      auto it = variable_by_tensor.find(lo.op->tensor);
      if (it == variable_by_tensor.end())
        return Error::at("", names(lo.op->name), "its variable " + names(lo.op->tensor) + " on the same task", "none");
      lo.variable = &it->second;
    }
    return ok_status();
  }

  static int slot_of(const std::vector<const std::string*>& sorted, const std::string& name)
  {
    const auto it = std::lower_bound(sorted.begin(), sorted.end(), name,
                                     [](const std::string* a, const std::string& b) { return *a < b; });
    return it != sorted.end() && **it == name ? int(it - sorted.begin()) : -1;
  }

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

  /// An op's first input (slot 0: its only one, or the first by name), or an error when it has none. Every slot is
  /// filled by the time the op runs (each is an in-edge's tensor); a tensor without storage (a 0-byte transfer's) is
  /// handed on as it is.
  const Tensor* first_input(int i)
  {
    const auto& in = state[size_t(i)].inputs;
    if (in.empty()) {
      fail(Error::at("", names(ops[size_t(i)].op->name), "an input tensor", "none"));
      return nullptr;
    }
    return &in[0];
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
    if (state.empty()) state.reserve(ops.size());
    state.resize(ops.size());
    remaining = ops.size();
    for (size_t i = 0; i < ops.size(); ++i) { // the last step's tensors released here, as a fresh state would
      OpState& st = state[i];
      st.ready = st.start = st.end = -1;
      st.arrived = 0;
      st.done = false;
      st.inputs.assign(ops[i].inputs.size(), Tensor{});
      st.outputs.clear();
      st.accumulator = Tensor{};
      st.pending = ops[i].in_degree;
    }
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
    const auto& lo = ops[size_t(i)];
    return lo.location.is_gpu() ? Work::gpu_kernel(lo.location.index, seconds, names(lo.op->name))
                                : Work::cpu(lo.location.index, seconds, names(lo.op->name));
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
            auto t =
                task.make_tensor(DataType::FLOAT, TensorShape{{int64_t((o.bytes + 3) / 4)}}, ops[size_t(i)].location,
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
        const Tensor& grad = state[size_t(i)].inputs[0];
        const Tensor& var = *ops[size_t(i)].variable;
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
      const auto& in = state[size_t(i)].inputs;
      if (lo.send_input < 0) return fail(Error::at("", names(op.name), "input tensor " + names(op.tensor), "none"));
      if (auto st = task.rendezvous().send(step, keys[size_t(lo.key)], in[size_t(lo.send_input)], false); !st.ok())
        return fail(st.error());
      complete(i, {});
      return;
    }
    case OpKind::RECV: {
      const double t0 = rt().now();
      rendezvous::RecvArgs args;
      args.dst_location = lo.location;
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
      if (!s.accumulator.storage) {
        s.accumulator = value; // the first gradient becomes the accumulator
        if (++s.arrived == op.arity) complete(target, {s.accumulator});
        return;
      }
      const uint64_t gen = generation;
      enqueue(target, [this, target, value, gen](std::function<void()> free) {
        const double t0 = rt().now();
        OpState& s = state[size_t(target)];
        const Op& op = *ops[size_t(target)].op;
        Work w = Work::reduce(*s.accumulator.buffer(), *value.buffer(), op.outputs.at(0).bytes);
        w.threads = 0;
        rt().execute(w, [this, target, gen, t0, free](Status st) {
          if (gen != generation) return;
          free();
          if (!st.ok()) return fail(st.error());
          OpState& s = state[size_t(target)];
          const Op& op = *ops[size_t(target)].op;
          record(target, OpKind::AGGREGATE, t0, op.outputs.at(0).bytes);
          if (++s.arrived == op.arity) complete(target, {s.accumulator});
        });
      });
      return;
    }
    if (!control) s.inputs[size_t(input)] = value;
    if (s.pending == 0) dispatch(target);
  }

  void complete(int i, std::vector<Tensor> outputs)
  {
    OpState& s = state[size_t(i)];
    s.done = true;
    s.end = rt().now();
    if (s.ready < 0) s.ready = s.start = s.end; // an AGGREGATE of one input
    s.outputs = std::move(outputs);
    for (const auto& e : ops[size_t(i)].out) {
      if (failed) return;
      if (e.tensor->empty()) {
        deliver(e.consumer, true, 0, Tensor{});
        continue;
      }
      if (e.output < 0 || size_t(e.output) >= s.outputs.size())
        return fail(Error::at("", names(ops[size_t(i)].op->name), "an output named " + names(*e.tensor), "none"));
      deliver(e.consumer, false, e.input, s.outputs[size_t(e.output)]);
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
