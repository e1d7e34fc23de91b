// The transfer job over a job backend (see transfer_driver.hpp).
#include "core/jobs/transfer_driver.hpp"

#include "core/rendezvous/rendezvous_key.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>

namespace tp::jobs {

namespace {

std::string dev(Location l)
{
  return l.is_gpu() ? "GPU:" + std::to_string(l.index) : "CPU:0";
}

/// What a step's callbacks share with the driver; they may outlive it (a step that timed out).
struct StepState {
  std::atomic<int> received{0};
  std::atomic<int> sent{0};
  std::atomic<bool> same{true};
  std::mutex mu;
  double first_post = std::numeric_limits<double>::infinity(); ///< the first Recv or Send posted
  double last_received = 0;
  std::vector<uint8_t> pattern; ///< with check_bytes
  void posted(double t)
  {
    std::lock_guard<std::mutex> lock(mu);
    first_post = std::min(first_post, t);
  }
};

struct StepOutcome {
  double latency = 0;
  bool same = true;
};

/// One step: every tensor made on the producer, then its Recv and its Send posted together (as the simulator
/// issues them at the same instant), and the run until all have arrived.
Result<StepOutcome> run_step(JobBackend& b, JobTasks& tasks, const TransferDriverJob& job, int64_t step, uint64_t bytes)
{
  JobProcess& pp = tasks.process(0);
  JobProcess& cp = tasks.process(1);
  transports::TaskRuntime* P = &tasks.task(0);
  transports::TaskRuntime* C = &tasks.task(1);
  auto failure = tasks.failure();
  auto st = std::make_shared<StepState>();
  const int64_t elems = int64_t(bytes / 4 + (bytes % 4 != 0));
  if (job.check_bytes) {
    st->pattern.resize(size_t(elems) * 4);
    for (size_t i = 0; i < st->pattern.size(); ++i)
      st->pattern[i] = uint8_t(i * 7 + uint64_t(step) * 13);
  }
  const double t0 = b.now();
  for (int k = 0; k < job.tensors_per_step; ++k) {
    std::optional<Tensor> tensor;
    b.on(pp, [&] {
      auto t = P->make_tensor(DataType::FLOAT, TensorShape{{elems}}, job.src, AllocatorAttributes{false, false, true});
      if (!t.ok()) return failure->set(t.error());
      if (job.check_bytes) std::memcpy(t->buffer()->data, st->pattern.data(), st->pattern.size());
      tensor = t.value();
    });
    if (auto f = failure->get()) return *f;
    const std::string name = job.numbered_keys ? "tensor" + std::to_string(k) : "tensor";
    const std::string key = rendezvous::create_key(job.producer_task + "/device:" + dev(job.src), 1,
                                                   job.consumer_task + "/device:" + dev(job.dst), name);
    const auto parsed = rendezvous::parse_key(key).value();
    b.post(cp, [&b, C, st, failure, parsed, step, dst = job.dst] {
      st->posted(b.now());
      rendezvous::RecvArgs args;
      args.dst_location = dst;
      args.alloc_attrs.nic_compatible = true;
      C->rendezvous().recv_async(step, parsed, args, [&b, st, failure](Result<rendezvous::RecvOutcome> r) {
        {
          std::lock_guard<std::mutex> lock(st->mu);
          st->last_received = b.now();
        }
        if (!r.ok())
          failure->set(r.error());
        else if (!st->pattern.empty() &&
                 !(r->tensor.buffer() && r->tensor.total_bytes() == st->pattern.size() &&
                   std::memcmp(r->tensor.buffer()->data, st->pattern.data(), st->pattern.size()) == 0))
          st->same = false;
        ++st->received;
      });
    });
    // The tensor moves to the producer's loop: its last reference goes there (the memory strategy is the loop's).
    b.post(pp, [&b, P, st, failure, parsed, step, t = std::move(*tensor)]() mutable {
      st->posted(b.now());
      if (auto s = P->rendezvous().send(step, parsed, t, false); !s.ok()) failure->set(s.error());
      t = Tensor();
      ++st->sent;
    });
    if (auto f = failure->get()) return *f;
  }
  const int n = job.tensors_per_step;
  const RunOutcome o = b.run_until([&] { return st->received == n || failure->has(); }, job.step_timeout);
  if (o == RunOutcome::DEADLINE)
    return Error::msg(job.transport + ": a transfer of " + std::to_string(bytes) + " bytes did not complete in " +
                      std::to_string(job.step_timeout) + " s (protocol stalled)");
  if (auto f = failure->get()) return *f;
  if (st->received != n)
    return Error::msg(job.transport + ": " + std::to_string(n - st->received) + " of " + std::to_string(n) +
                      " transfer(s) of " + std::to_string(bytes) +
                      " bytes never completed and nothing is left to happen: a hang (protocol stalled: the "
                      "consumer waits for data that never comes)");
  StepOutcome out;
  out.same = st->same;
  if (job.latency == TransferDriverJob::Latency::UNTIL_QUIET) {
    out.latency = b.now() - t0;
  } else {
    b.run_until([&] { return st->sent == n; }, job.step_timeout);
    std::lock_guard<std::mutex> lock(st->mu);
    out.latency = st->last_received - st->first_post;
  }
  return out;
}

/// The first record of `side` among `records`.
transports::TransferRecord first_of(const std::vector<transports::TransferRecord>& records, transports::Side side)
{
  for (const auto& r : records)
    if (r.side == side) return r;
  return {};
}

} // namespace

void finish_point(TransferPoint& pt, std::vector<double> latencies, TransferDriverJob::Steady rule,
                  int tensors_per_step)
{
  if (latencies.empty()) return;
  pt.first_latency = latencies.front();
  if (rule == TransferDriverJob::Steady::LAST_STEP) {
    pt.steady_latency = latencies.back();
  } else {
    std::sort(latencies.begin() + 1, latencies.end());
    const size_t rest = latencies.size() - 1;
    pt.steady_latency = rest == 0 ? pt.first_latency : latencies[1 + rest / 2];
  }
  pt.bandwidth = pt.steady_latency > 0 ? double(pt.bytes) * tensors_per_step / pt.steady_latency : 0;
}

Result<TransferDriverResult> run_transfer(JobBackend& b, const TransferDriverJob& job)
{
  auto pr = b.add_process(job.producer_host, "producer");
  if (!pr.ok()) return pr.error();
  auto cr = b.add_process(job.consumer_host, "consumer");
  if (!cr.ok()) return cr.error();
  transports::ClusterSpec spec{{job.producer_task, "producer"}, {job.consumer_task, "consumer"}};
  JobTasks tasks(b);
  for (const bool producer : {true, false}) {
    transports::TaskSpec ts;
    ts.task = producer ? job.producer_task : job.consumer_task;
    ts.transport = job.transport;
    ts.memory.kind = job.strategy;
    ts.memory.gpudirect_gpus = job.gpudirect_gpus;
    ts.options = job.options;
    auto k = tasks.add(producer ? *pr.value() : *cr.value(), ts, spec, producer ? job.src : job.dst);
    if (!k.ok()) return k.error();
  }
  TP_TRY(tasks.start(job.start_timeout));

  TransferDriverResult out;
  const auto w0 = std::chrono::steady_clock::now();
  int64_t step = 0;
  std::vector<transports::TransferRecord> last[2]; // the last step's records of the producer and the consumer
  for (uint64_t bytes : job.sizes) {
    TransferPoint pt;
    pt.bytes = bytes;
    std::vector<double> latencies;
    for (int s = 0; s < job.steps; ++s) {
      ++step;
      for (size_t k = 0; k < 2; ++k)
        b.on(tasks.process(k), [&] { tasks.task(k).log().clear(); });
      auto r = run_step(b, tasks, job, step, bytes);
      if (!r.ok()) return r.error();
      for (size_t k = 0; k < 2; ++k)
        b.on(tasks.process(k), [&] { last[k] = tasks.task(k).log().records(); });
      for (const auto& side : last)
        for (const auto& rec : side)
          out.records.add(rec);
      out.transfers += uint64_t(job.tensors_per_step);
      pt.bytes_ok = pt.bytes_ok && r->same;
      latencies.push_back(r->latency);
      for (size_t k = 0; k < 2; ++k)
        b.on(tasks.process(k), [&] { tasks.task(k).rendezvous().cleanup(step); });
    }
    finish_point(pt, latencies, job.steady, job.tensors_per_step);
    pt.consumer = first_of(last[1], transports::Side::CONSUMER);
    pt.producer = first_of(last[0], transports::Side::PRODUCER);
    out.points.push_back(pt);
  }
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  b.on(tasks.process(1), [&] { out.consumer_memory = tasks.task(1).memory().stats(); });
  b.on(tasks.process(0), [&] { out.producer_memory = tasks.task(0).memory().stats(); });
  tasks.shutdown();
  return out;
}

} // namespace tp::jobs
