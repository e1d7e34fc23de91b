// What both training jobs share (see training_tasks.hpp).
#include "core/jobs/training_tasks.hpp"

#include "core/collectives/ring.hpp"

#include <boost/graph/adjacency_list.hpp>

#include <algorithm>
#include <utility>

namespace tp::jobs {

std::string process_name(const std::string& task)
{
  const auto j = task.find("/job:") + 5;
  const auto r = task.find('/', j);
  const auto t = task.rfind(':');
  return task.substr(j, r - j) + task.substr(t + 1);
}

Result<training::StepGraph> partitioned_step_graph(const training::TrainingModel& model,
                                                   const training::StepLayout& layout)
{
  return training::build_partitioned_step_graph(model, layout);
}

int RankList::rank_of(const std::string& task) const
{
  // Rank r is task r (rank_list's order): a look at one entry, not a scan of every rank's.
  const auto& all = *ranks;
  if (const int r = training::rank_of_task(task); r >= 0 && size_t(r) < all.size() && all[size_t(r)].task == task)
    return r;
  int rank = 0;
  while (all[size_t(rank)].task != task)
    ++rank;
  return rank;
}

RankList rank_list(const training::StepLayout& layout)
{
  RankList out;
  if (layout.mode != training::SyncMode::ALLREDUCE) return out;
  std::vector<collectives::RankInfo> ranks;
  std::vector<std::string> processes;
  for (int r = 0; r < layout.workers; ++r) {
    const std::string task = training::worker_task(r);
    ranks.push_back(
        {task, task + (layout.allreduce_on_host ? std::string("/device:CPU:0")
                                                : "/device:GPU:" + std::to_string(layout.gpu_of[size_t(r)][0]))});
    processes.push_back(process_name(task));
  }
  out.ranks = std::make_shared<const std::vector<collectives::RankInfo>>(std::move(ranks));
  out.processes = std::make_shared<const std::vector<std::string>>(std::move(processes));
  return out;
}

namespace {

/// MaTEx: one blocking allreduce per gradient in graph order, the same on every rank (rank 0's op order).
std::vector<std::string> graph_order_of_allreduces(const training::StepGraph& sg)
{
  std::vector<std::pair<int, std::string>> ordered;
  for (const training::OpId id : sg.ops_of(training::worker_task(0)))
    if (sg.graph[id].kind == training::OpKind::ALLREDUCE)
      ordered.emplace_back(sg.graph[id].order, sg.graph[id].collective);
  std::sort(ordered.begin(), ordered.end());
  std::vector<std::string> names;
  for (auto& [o, n] : ordered)
    names.push_back(n);
  return names;
}

size_t allreduces_of(const training::StepGraph& sg, const std::string& task)
{
  size_t n = 0;
  for (const training::OpId id : sg.ops_of(task))
    n += sg.graph[id].kind == training::OpKind::ALLREDUCE;
  return n;
}

} // namespace

Status set_up_task(TrainingTask& task, std::unique_ptr<transports::TaskRuntime> runtime, StreamNetwork& streams,
                   const training::StepGraph& graph, const RankList& ranks, const TrainingTaskOptions& options)
{
  task.runtime = std::move(runtime);
  const std::string& name = task.runtime->spec().task;
  if (!ranks.ranks->empty()) {
    task.engine = std::make_unique<collectives::CollectiveEngine>(*task.runtime, streams, ranks.ranks, ranks.processes,
                                                                  ranks.rank_of(name), options.collectives);
    if (options.ring_runner) task.engine->set_ring_runner(options.ring_runner);
    if (auto st = task.engine->start(); !st.ok()) return st.error();
    if (!options.collectives.coordinator) task.engine->set_order(graph_order_of_allreduces(graph));
  }
  task.executor = std::make_unique<training::TaskExecutor>(*task.runtime, graph, options.executor, task.engine.get());
  task.allreduces = allreduces_of(graph, name);
  return task.executor->prepare();
}

namespace {

/// The broadcast on one rank: its variables one after the other.
struct Broadcasts {
  collectives::Channel* ch = nullptr;
  std::vector<std::pair<std::string, Tensor>> vars;
  std::shared_ptr<BroadcastState> state;
};

void broadcast_next(std::shared_ptr<Broadcasts> b, size_t i)
{
  if (i == b->vars.size()) {
    ++b->state->done;
    return;
  }
  collectives::tree_broadcast(*b->ch, 0, "broadcast/" + b->vars[i].first, b->vars[i].second, 0,
                              [b, i](Result<Tensor> r) {
                                if (!r.ok()) b->state->failure.set(r.error());
                                broadcast_next(b, i + 1);
                              });
}

} // namespace

std::unique_ptr<collectives::Channel> broadcast_channel(TrainingTask& task, const RankList& ranks)
{
  return std::make_unique<collectives::Channel>(*task.runtime, ranks.ranks, ranks.rank_of(task.runtime->spec().task));
}

void start_variable_broadcast(TrainingTask& task, collectives::Channel& channel, std::shared_ptr<BroadcastState> state)
{
  auto b = std::make_shared<Broadcasts>();
  b->ch = &channel;
  b->state = std::move(state);
  for (const auto& [name, t] : task.executor->variables())
    b->vars.emplace_back(name.substr(0, name.rfind("/rank")), t);
  broadcast_next(b, 0);
}

bool StepTimes::add(int index, double step_seconds)
{
  seconds.push_back(step_seconds);
  if (index < warmup) return false;
  total_measured += step_seconds;
  ++measured;
  return true;
}

OpSnapshot op_snapshot(const TrainingTask& task)
{
  return {task.runtime->spec().task, task.executor->failed_op(), task.executor->waiting_ops()};
}

training::FailedOp blamed_op(const std::vector<OpSnapshot>& tasks, size_t failed_task, bool fatal)
{
  const auto& failed = tasks[failed_task];
  auto fo = failed.failed;
  if ((fatal || !fo.kind) && !failed.waiting.empty()) fo = failed.waiting.front();
  if (!fo.kind) {
    const std::string& me = failed.task;
    for (const auto& t : tasks)
      for (const auto& w : t.waiting)
        if (w.key.find(me + "/") != std::string::npos && (!fo.kind || w.started < fo.started)) fo = w;
  }
  return fo;
}

} // namespace tp::jobs
