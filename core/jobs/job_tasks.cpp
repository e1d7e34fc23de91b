// JobTasks and RunOutcome of the job backend interface (see job_backend.hpp).
#include "core/jobs/job_backend.hpp"

#include <atomic>

namespace tp::jobs {

const char* to_string(RunOutcome o)
{
  switch (o) {
  case RunOutcome::DONE:
    return "done";
  case RunOutcome::IDLE:
    return "idle";
  case RunOutcome::DEADLINE:
    return "deadline";
  case RunOutcome::STOPPED:
    return "stopped";
  }
  return "?";
}

JobTasks::~JobTasks()
{
  for (auto& e : tasks_)
    if (e.rt)
      backend_.on(*e.proc, [&e] {
        e.rt->set_fatal_handler({}); // it refers to this job
        e.rt.reset();
      });
}

Result<size_t> JobTasks::add(JobProcess& p, const transports::TaskSpec& spec, const transports::ClusterSpec& cluster,
                             std::optional<Location> data)
{
  auto rt = backend_.create_task(p, spec, cluster, data);
  if (!rt.ok()) return rt.error();
  tasks_.push_back({&p, std::move(rt.value())});
  JobBackend* backend = &backend_;
  auto failure = failure_;
  backend_.on(p, [&] {
    tasks_.back().rt->set_fatal_handler([backend, failure](const Error& e) {
      failure->set(e);
      backend->stop();
    });
  });
  return tasks_.size() - 1;
}

Status start_transports(JobBackend& backend, const std::vector<ProcessTask>& tasks, double timeout)
{
  auto failure = std::make_shared<JobFailure>();
  auto started = std::make_shared<std::atomic<size_t>>(0);
  for (const auto& t : tasks)
    backend.post(*t.proc, [rt = t.runtime, started, failure] {
      rt->transport().start([started, failure](Status st) {
        if (!st.ok()) failure->set(st.error());
        ++*started;
      });
    });
  const size_t n = tasks.size();
  const RunOutcome o = backend.run_until([&] { return *started == n || failure->has(); }, timeout);
  if (auto f = failure->get()) return *f;
  if (o != RunOutcome::DONE)
    return Error::msg(tasks.empty() ? std::string("no task")
                                    : tasks.front().runtime->spec().transport + ": transports did not start " +
                                          (o == RunOutcome::DEADLINE ? "within the timeout"
                                                                     : "and nothing is left to happen (a hang)"));
  return ok_status();
}

Status JobTasks::start(double timeout)
{
  std::vector<ProcessTask> tasks;
  for (auto& e : tasks_)
    tasks.push_back({e.proc, e.rt.get()});
  return start_transports(backend_, tasks, timeout);
}

void JobTasks::collect_records(transports::TransferLog& into, bool clear)
{
  for (auto& e : tasks_)
    backend_.on(*e.proc, [&] {
      for (const auto& r : e.rt->log().records())
        into.add(r);
      if (clear) e.rt->log().clear();
    });
}

void JobTasks::shutdown()
{
  for (auto& e : tasks_)
    backend_.on(*e.proc, [&] { e.rt->transport().shutdown(); });
}

} // namespace tp::jobs
