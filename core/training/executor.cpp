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

  struct LocalOp {
    OpId id{};
    const Op* op = nullptr;
    std::vector<std::pair<int, std::string>> out; ///< (consumer local index, tensor)
    int in_degree = 0;
    Location location;
    std::string queue; ///< device queue name
    rendezvous::ParsedKey key;
    bool remote_consumer = false; ///< an output feeds a remote SEND: allocate NIC-compatible
  };
  std::vector<LocalOp> ops;
  std::map<OpId, int> local_of;
  std::map<std::string, DeviceQueue> queues;
  std::map<int, Tensor> variables;                  ///< local index of VARIABLE op -> its persistent tensor
  std::map<std::string, Tensor> variable_by_tensor; ///< the same, by output tensor name (for APPLY)
  std::vector<OpEvent> events;

  // Per-step state.
  struct OpState {
    double ready = -1, start = -1, end = -1;
    int pending = 0;
    int arrived = 0; ///< AGGREGATE: inputs summed so far
    bool done = false;
    std::map<std::string, Tensor> inputs;
    std::map<std::string, Tensor> outputs;
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
    for (const OpId id : sg.ops_of(me)) {
      local_of[id] = int(ops.size());
      LocalOp lo;
      lo.id = id;
      lo.op = &g[id];
      ops.push_back(std::move(lo));
    }
    for (auto& lo : ops) {
      auto d = rendezvous::parse_device_name(lo.op->device);
      if (!d.ok()) return d.error();
      lo.location = transports::device_location(d.value(), task.spec().cpu_numa_node);
      lo.queue = lo.op->device;
      if (!queues.count(lo.queue)) queues[lo.queue].slots = d->type == "GPU" ? 1 : std::max(1, options.cpu_threads);
      if (lo.op->kind == OpKind::SEND || lo.op->kind == OpKind::RECV) {
        auto k = rendezvous::parse_key(lo.op->key);
        if (!k.ok()) return k.error();
        lo.key = k.value();
      }
      for (auto [e, eend] = boost::out_edges(lo.id, g); e != eend; ++e) {
        const OpId t = boost::target(*e, g);
        auto it = local_of.find(t);
        if (it == local_of.end())
          return Error::at("", lo.op->name, "edges only within the task (a partitioned graph)", g[t].device);
        lo.out.emplace_back(it->second, g[*e].tensor);
        if (g[t].kind == OpKind::SEND && g[t].remote) lo.remote_consumer = true;
      }
    }
    for (auto& lo : ops)
      for (const auto& [t, _] : lo.out)
        ++ops[size_t(t)].in_degree;
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op& op = *ops[i].op;
      if (op.kind == OpKind::ALLREDUCE && !collectives)
        return Error::at("", op.name, "a collectives engine for ALLREDUCE ops", "none");
      if (op.kind != OpKind::VARIABLE) continue;
      const auto& o = op.outputs.at(0);
      auto t = task.make_tensor(DataType::FLOAT, TensorShape{{int64_t((o.bytes + 3) / 4)}}, ops[i].location,
                                AllocatorAttributes{false, false, ops[i].remote_consumer});
      if (!t.ok()) return t.error();
      variables[int(i)] = t.value();
      variable_by_tensor[o.tensor] = t.value();
    }
    for (const auto& lo : ops)
      if (lo.op->kind == OpKind::APPLY && !variable_by_tensor.count(lo.op->tensor))
        return Error::at("", lo.op->name, "its variable " + lo.op->tensor + " on the same task", "none");
    return ok_status();
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
    state.assign(ops.size(), OpState{});
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
    DeviceQueue& q = queues[ops[size_t(i)].queue];
    q.ready.push(Job{ops[size_t(i)].op->order, seq++, [this, i, run = std::move(run)](std::function<void()> free) {
                       state[size_t(i)].start = rt().now();
                       run(std::move(free));
                     }});
    pump(ops[size_t(i)].queue);
  }

  void pump(const std::string& name)
  {
    DeviceQueue& q = queues[name];
    while (q.busy < q.slots && !q.ready.empty()) {
      Job j = q.ready.top();
      q.ready.pop();
      ++q.busy;
      j.run([this, name, g = generation] {
        if (g != generation) return;
        --queues[name].busy;
        pump(name);
      });
    }
  }

  void record(int i, OpKind kind, double start, uint64_t bytes = 0)
  {
    events.push_back(OpEvent{ops[size_t(i)].op->name, kind, ops[size_t(i)].op->device, start, rt().now(), bytes});
  }

  Work compute_work(int i, double seconds)
  {
    const auto& lo = ops[size_t(i)];
    return lo.location.is_gpu() ? Work::gpu_kernel(lo.location.index, seconds, lo.op->name)
                                : Work::cpu(lo.location.index, seconds, lo.op->name);
  }

  void dispatch(int i)
  {
    const auto& lo = ops[size_t(i)];
    state[size_t(i)].ready = state[size_t(i)].start = rt().now();
    const Op& op = *lo.op;
    const uint64_t gen = generation;
    switch (op.kind) {
    case OpKind::VARIABLE:
      complete(i, {{op.outputs.at(0).tensor, variables.at(i)}});
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
          std::map<std::string, Tensor> outs;
          for (const auto& o : op.outputs) {
            auto t =
                task.make_tensor(DataType::FLOAT, TensorShape{{int64_t((o.bytes + 3) / 4)}}, ops[size_t(i)].location,
                                 AllocatorAttributes{false, false, ops[size_t(i)].remote_consumer});
            if (!t.ok()) return fail(t.error());
            outs[o.tensor] = t.value();
          }
          complete(i, std::move(outs));
        });
      });
      return;
    case OpKind::APPLY:
      enqueue(i, [this, i, gen](std::function<void()> free) {
        const double t0 = rt().now();
        const auto& grad = state[size_t(i)].inputs.begin()->second;
        const Tensor& var = variable_by_tensor.at(ops[size_t(i)].op->tensor);
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
    case OpKind::IDENTITY:
      complete(i, {{op.outputs.at(0).tensor, state[size_t(i)].inputs.begin()->second}});
      return;
    case OpKind::SEND: {
      const auto& in = state[size_t(i)].inputs;
      auto it = in.find(op.tensor);
      if (it == in.end()) return fail(Error::at("", op.name, "input tensor " + op.tensor, "none"));
      if (auto st = task.rendezvous().send(step, lo.key, it->second, false); !st.ok()) return fail(st.error());
      complete(i, {});
      return;
    }
    case OpKind::RECV: {
      const double t0 = rt().now();
      rendezvous::RecvArgs args;
      args.dst_location = lo.location;
      args.alloc_attrs.nic_compatible = op.remote;
      task.rendezvous().recv_async(step, lo.key, args, [this, i, gen, t0](Result<rendezvous::RecvOutcome> r) {
        if (gen != generation) return;
        if (!r.ok()) {
          if (!failed) failed_op = {OpKind::RECV, ops[size_t(i)].op->name, ops[size_t(i)].key.full, t0};
          return fail(r.error());
        }
        record(i, OpKind::RECV, t0, ops[size_t(i)].op->bytes);
        complete(i, {{ops[size_t(i)].op->tensor, r->tensor}});
      });
      return;
    }
    case OpKind::ALLREDUCE: {
      const double t0 = rt().now();
      Tensor in = state[size_t(i)].inputs.begin()->second;
      collectives->allreduce(step, op.collective, in, [this, i, gen, t0](Result<Tensor> r) {
        if (gen != generation) return;
        if (!r.ok()) {
          if (!failed) failed_op = {OpKind::ALLREDUCE, ops[size_t(i)].op->name, ops[size_t(i)].op->collective, t0};
          return fail(r.error());
        }
        record(i, OpKind::ALLREDUCE, t0, ops[size_t(i)].op->outputs.at(0).bytes);
        complete(i, {{ops[size_t(i)].op->outputs.at(0).tensor, r.value()}});
      });
      return;
    }
    }
  }

  void deliver(int target, const std::string& tensor, const Tensor& value)
  {
    OpState& s = state[size_t(target)];
    const Op& op = *ops[size_t(target)].op;
    --s.pending;
    if (op.kind == OpKind::AGGREGATE) s.ready = rt().now();
    if (op.kind == OpKind::AGGREGATE && !tensor.empty()) {
      if (!s.accumulator.storage) {
        s.accumulator = value; // the first gradient becomes the accumulator
        if (++s.arrived == op.arity) complete(target, {{op.outputs.at(0).tensor, s.accumulator}});
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
          if (++s.arrived == op.arity) complete(target, {{op.outputs.at(0).tensor, s.accumulator}});
        });
      });
      return;
    }
    if (!tensor.empty()) s.inputs[tensor] = value;
    if (s.pending == 0) dispatch(target);
  }

  void complete(int i, std::map<std::string, Tensor> outputs)
  {
    OpState& s = state[size_t(i)];
    s.done = true;
    s.end = rt().now();
    if (s.ready < 0) s.ready = s.start = s.end; // an AGGREGATE of one input
    s.outputs = std::move(outputs);
    for (const auto& [t, tensor] : ops[size_t(i)].out) {
      if (failed) return;
      if (tensor.empty()) {
        deliver(t, "", Tensor{});
        continue;
      }
      auto it = s.outputs.find(tensor);
      if (it == s.outputs.end())
        return fail(Error::at("", ops[size_t(i)].op->name, "an output named " + tensor, "none"));
      deliver(t, tensor, it->second);
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

const std::vector<OpEvent>& TaskExecutor::events() const
{
  return impl_->events;
}

void TaskExecutor::clear_events()
{
  impl_->events.clear();
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
    if (lo.op->kind == OpKind::RECV) out.push_back({OpKind::RECV, lo.op->name, lo.key.full, st.start});
    if (lo.op->kind == OpKind::ALLREDUCE) out.push_back({OpKind::ALLREDUCE, lo.op->name, lo.op->collective, st.start});
  }
  std::stable_sort(out.begin(), out.end(), [](const FailedOp& a, const FailedOp& b) { return a.started < b.started; });
  return out;
}
} // namespace tp::training
