// Producer on machine 0, consumer on machine 1, through the transfer driver (core/jobs/transfer_driver.hpp).
#include "sim/transfer_job.hpp"
#include "sim/job_estimate.hpp"
#include "sim/sim_job_backend.hpp"

namespace tp::sim {

Result<TransferResult> run_transfer_job(const models::ClusterProfile& cluster, const TransferJob& job)
{
  if (cluster.host_count() < 2)
    return Error::at("", "transfer", "a cluster of at least two hosts", std::to_string(cluster.host_count()));
  for (uint64_t s : job.sizes)
    if (s > 4 * uint64_t(MAX_TENSOR_ELEMENTS)) // a float32 tensor of at most MAX_TENSOR_ELEMENTS elements
      return Error::at("", "size",
                       "at most " + std::to_string(4 * uint64_t(MAX_TENSOR_ELEMENTS)) +
                           " bytes (a float32 tensor of 2^50 elements, the most a tensor's meta-data carries)",
                       std::to_string(s));
  // Refuse up front what the machine cannot hold or the time budget does not allow (materialized bytes, records).
  if (auto st = check_budget(estimate_transfer(cluster, job),
                             job.materialize ? "use smaller or fewer tensors, fewer steps, or virtual (not "
                                               "materialized) buffers"
                                             : "use fewer tensors, steps or sizes");
      !st.ok())
    return st.error();
  SimOptions so;
  so.materialize = job.materialize;
  auto simr = Simulation::create(cluster, so);
  if (!simr.ok()) return simr.error();
  SimJobBackend backend(*simr.value(), cluster);
  jobs::TransferDriverJob dj;
  static_cast<jobs::TransferSpec&>(dj) = job;
  // Steps end when nothing is left to happen; the last one is the steady state.
  dj.latency = jobs::TransferDriverJob::Latency::UNTIL_QUIET;
  dj.steady = jobs::TransferDriverJob::Steady::LAST_STEP;
  auto r = jobs::run_transfer(backend, dj);
  if (!r.ok()) return r.error();
  TransferResult out;
  out.transport = job.transport;
  out.strategy = memory::to_string(job.strategy);
  out.points = std::move(r->points);
  out.transfers = r->transfers;
  out.wall_seconds = r->wall_seconds;
  out.consumer_memory = r->consumer_memory;
  out.producer_memory = r->producer_memory;
  out.records = std::move(r->records);
  return out;
}

} // namespace tp::sim
