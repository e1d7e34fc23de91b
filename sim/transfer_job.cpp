// Producer on machine 0, consumer on machine 1; steps run one after the other.
#include "sim/transfer_job.hpp"
#include "core/common/progress.hpp"
#include "core/rendezvous/rendezvous_key.hpp"
#include "sim/job_estimate.hpp"

#include <chrono>

namespace tp::sim {

namespace {
const char* const PRODUCER = "/job:worker/replica:0/task:0";
const char* const CONSUMER = "/job:ps/replica:0/task:0";

std::string dev(Location l)
{
  return l.is_gpu() ? "GPU:" + std::to_string(l.index) : "CPU:0";
}
} // namespace

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
  Simulation& sim = *simr.value();
  auto names = cluster.host_names();
  auto* pp = sim.add_process(names[0], "producer").value();
  auto* cp = sim.add_process(names[1], "consumer").value();
  transports::ClusterSpec spec{{PRODUCER, "producer"}, {CONSUMER, "consumer"}};
  auto make = [&](const char* task, SimProcess* p, Location loc) -> Result<std::unique_ptr<transports::TaskRuntime>> {
    const auto& host = cluster.host(p->machine());
    transports::TaskSpec ts;
    ts.task = task;
    ts.transport = job.transport;
    ts.memory.kind = job.strategy;
    ts.memory.nic_socket = host.nics.at(0).socket;
    ts.memory.gpudirect_gpus = job.gpudirect_gpus;
    if (job.gpudirect_gpus.empty())
      for (size_t g = 0; g < host.gpus.size(); ++g)
        if (host.gpus[g].socket == host.nics[0].socket) ts.memory.gpudirect_gpus.push_back(int(g));
    ts.options = job.options;
    ts.cpu_numa_node = loc.is_host() ? loc.index : host.nics.at(0).socket;
    if (auto st = [&]() -> Status {
          if (loc.is_gpu() && loc.index >= int(host.gpus.size()))
            return Error::at(host.file, "gpus", "a GPU " + std::to_string(loc.index) + " on " + host.name, "none");
          if (loc.is_host() && loc.index >= int(host.sockets.size()))
            return Error::at(host.file, "sockets", "NUMA node " + std::to_string(loc.index) + " on " + host.name,
                             "none");
          return ok_status();
        }();
        !st.ok())
      return st.error();
    return transports::TaskRuntime::create(ts, p->name(), p->runtime(), &p->device(), p->streams(), spec);
  };
  auto prod = make(PRODUCER, pp, job.src);
  if (!prod.ok()) return prod.error();
  auto cons = make(CONSUMER, cp, job.dst);
  if (!cons.ok()) return cons.error();
  transports::TaskRuntime& P = *prod.value();
  transports::TaskRuntime& C = *cons.value();
  std::optional<Error> failure;
  // A failure the original treats as fatal (TF verbs' CHECK on an error completion, MPI_ERRORS_ARE_FATAL): the
  // process aborts and the job with it, whether or not a receive was waiting for it.
  for (auto* t : {&P, &C})
    t->set_fatal_handler([&failure, &sim](const Error& e) {
      if (!failure) failure = e;
      sim.stop();
    });
  struct ClearFatal { // the handlers refer to this frame: gone with it
    transports::TaskRuntime* t[2];
    ~ClearFatal()
    {
      for (auto* x : t)
        x->set_fatal_handler({});
    }
  } clear_fatal{{&P, &C}};
  P.transport().start([&](Status st) {
    if (!st.ok()) failure = st.error();
  });
  C.transport().start([&](Status st) {
    if (!st.ok()) failure = st.error();
  });
  sim.run();
  if (failure) return *failure;

  TransferResult out;
  out.transport = job.transport;
  out.strategy = memory::to_string(job.strategy);
  const auto w0 = std::chrono::steady_clock::now();
  int64_t step = 0;
  for (uint64_t bytes : job.sizes) {
    TransferPoint pt;
    pt.bytes = bytes;
    const int64_t elems = int64_t(bytes / 4 + (bytes % 4 != 0));
    for (int s = 0; s < job.steps; ++s) {
      ++step;
      P.log().clear();
      C.log().clear();
      const double t0 = sim.now();
      int received = 0;
      for (int k = 0; k < job.tensors_per_step; ++k) {
        auto t = P.make_tensor(DataType::FLOAT, TensorShape{{elems}}, job.src, AllocatorAttributes{false, false, true});
        if (!t.ok()) return t.error();
        const std::string key =
            rendezvous::create_key(std::string(PRODUCER) + "/device:" + dev(job.src), 1,
                                   std::string(CONSUMER) + "/device:" + dev(job.dst), "tensor" + std::to_string(k));
        auto parsed = rendezvous::parse_key(key).value();
        rendezvous::RecvArgs args;
        args.dst_location = job.dst;
        args.alloc_attrs.nic_compatible = true;
        C.rendezvous().recv_async(step, parsed, args, [&](Result<rendezvous::RecvOutcome> r) {
          if (!r.ok() && !failure) failure = r.error();
          ++received;
        });
        if (auto st = P.rendezvous().send(step, parsed, t.value(), false); !st.ok()) return st.error();
      }
      sim.run();
      if (failure) return *failure;
      // No deadline here: sim.run() returned with nothing left to happen (a slow link only makes it return later).
      if (received != job.tensors_per_step)
        return Error::msg(job.transport + ": " + std::to_string(job.tensors_per_step - received) + " of " +
                          std::to_string(job.tensors_per_step) + " transfer(s) of " + std::to_string(bytes) +
                          " bytes never completed and nothing is left to happen: a hang (protocol stalled: the "
                          "consumer waits for data that never comes)");
      const double latency = sim.now() - t0;
      for (auto* log : {&P.log(), &C.log()})
        for (const auto& r : log->records())
          out.records.add(r);
      out.transfers += uint64_t(job.tensors_per_step);
      if (s == 0) pt.first_latency = latency;
      pt.steady_latency = latency;
      P.rendezvous().cleanup(step);
      C.rendezvous().cleanup(step);
    }
    pt.bandwidth = double(bytes) * job.tensors_per_step / pt.steady_latency;
    for (const auto& r : C.log().records())
      if (r.side == transports::Side::CONSUMER) {
        pt.consumer = r;
        break;
      }
    for (const auto& r : P.log().records())
      if (r.side == transports::Side::PRODUCER) {
        pt.producer = r;
        break;
      }
    out.points.push_back(pt);
  }
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  out.consumer_memory = C.memory().stats();
  out.producer_memory = P.memory().stats();
  P.transport().shutdown();
  C.transport().shutdown();
  return out;
}

} // namespace tp::sim
