// Emulated transfers (see transfer_job.hpp).
#include "emulator/transfer_job.hpp"

#include "core/common/resource_estimate.hpp"
#include "core/rendezvous/rendezvous_key.hpp"
#include "core/transports/task_runtime.hpp"
#include "emulator/emulation.hpp"
#include "emulator/job_estimate.hpp"
#include "emulator/process_transfer.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>

namespace tp::emu {

namespace {
const char* const PRODUCER = "/job:ps/replica:0/task:0";
const char* const CONSUMER = "/job:worker/replica:0/task:0";

std::string dev(Location l)
{
  return l.is_gpu() ? "GPU:" + std::to_string(l.index) : "CPU:0";
}
} // namespace

Status check_emulated_size(uint64_t bytes, const std::string& option)
{
  if (bytes > MAX_EMULATED_BYTES)
    return Error::at("", option,
                     "at most " + std::to_string(MAX_EMULATED_BYTES) +
                         " bytes (a float32 tensor of 2^50 elements, the most a tensor's meta-data carries)",
                     std::to_string(bytes));
  EmuTransferJob one;
  one.sizes = {bytes};
  one.steps = 1;
  JobEstimate e = estimate_emulated_transfer(one);
  e.job = "an emulated transfer of " + std::to_string(bytes) + " bytes (" + option + ")";
  return check_budget(e, "the emulator moves real bytes: use a smaller " + option);
}

Result<EmuTransferResult> run_emulated_transfer(const EmuTransferJob& job)
{
  for (uint64_t bytes : job.sizes)
    TP_TRY(check_emulated_size(bytes, "size"));
  if (auto st = check_budget(estimate_emulated_transfer(job), "use smaller tensors, fewer sizes or steps"); !st.ok())
    return st.error();
  if (job.os_processes) return run_process_transfer(job);
  transports::register_builtin_transports();
  if (!transports::find_transport(job.transport))
    return Error::at("", "transport", "a registered transport", "\"" + job.transport + "\"");
  Emulation::Options eo;
  eo.device = job.device;
  Emulation emu(eo);
  auto pr = emu.try_add_process("producer");
  if (!pr.ok()) return pr.error();
  auto cr = emu.try_add_process("consumer");
  if (!cr.ok()) return cr.error();
  auto& pp = *pr.value();
  auto& cp = *cr.value();
  transports::ClusterSpec cluster{{PRODUCER, "producer"}, {CONSUMER, "consumer"}};
  std::unique_ptr<transports::TaskRuntime> P, C;
  std::atomic<int> started{0};
  std::optional<Error> failure;
  std::mutex fail_mu;
  auto set_failure = [&](const Error& e) {
    std::lock_guard<std::mutex> lock(fail_mu);
    if (!failure) failure = e;
  };
  for (auto* p : {&pp, &cp}) {
    auto& out = p == &pp ? P : C;
    emu.on(*p, [&, p] {
      transports::TaskSpec spec;
      spec.task = p == &pp ? PRODUCER : CONSUMER;
      spec.transport = job.transport;
      spec.memory.kind = job.strategy;
      spec.memory.gpudirect_gpus = {0};
      spec.options = job.options;
      auto t = transports::TaskRuntime::create(spec, p->name, *p->runtime, p->device.get(), *p->streams, cluster);
      if (!t.ok()) return set_failure(t.error());
      out = std::move(t.value());
      // What the original treats as fatal (it aborts the process) ends the job with that error.
      out->set_fatal_handler([&](const Error& e) { set_failure(e); });
      out->transport().start([&](Status st) {
        if (!st.ok()) set_failure(st.error());
        ++started;
      });
    });
  }
  if (!Emulation::wait_until([&] { return started == 2 || failure; }, job.timeout))
    return Error::msg(job.transport + ": transports did not start within the timeout");
  if (failure) return *failure;

  EmuTransferResult out;
  out.transport = job.transport;
  int64_t step = 0;
  for (uint64_t bytes : job.sizes) {
    EmuTransferPoint pt;
    pt.bytes = bytes;
    const int64_t elems = int64_t(bytes / 4 + (bytes % 4 != 0)); // bytes <= MAX_EMULATED_BYTES
    std::vector<uint8_t> pattern(size_t(elems) * 4);
    std::vector<double> steady;
    for (int s = 0; s < job.steps; ++s) {
      ++step;
      for (size_t i = 0; i < pattern.size(); ++i)
        pattern[i] = uint8_t(i * 7 + uint64_t(step) * 13);
      const std::string key = rendezvous::create_key(std::string(PRODUCER) + "/device:" + dev(job.src), 1,
                                                     std::string(CONSUMER) + "/device:" + dev(job.dst), "tensor");
      const auto parsed = rendezvous::parse_key(key).value();
      std::atomic<bool> done{false};
      std::atomic<bool> same{false};
      using clk = std::chrono::steady_clock;
      std::atomic<int64_t> t_recv{0}, t_send{0}, t_end{0}; // steady-clock nanoseconds
      auto stamp = [] { return int64_t(clk::now().time_since_epoch().count()); };
      // The tensor is made and filled first; then the Recv and the Send are posted together, as the simulator
      // issues them at the same instant: latency runs from the first of the two to the received tensor.
      std::optional<Tensor> tensor;
      emu.on(pp, [&] {
        auto t =
            P->make_tensor(DataType::FLOAT, TensorShape{{elems}}, job.src, AllocatorAttributes{false, false, true});
        if (!t.ok()) return set_failure(t.error());
        std::memcpy(t->buffer()->data, pattern.data(), pattern.size());
        tensor = t.value();
      });
      if (failure) return *failure;
      cp.runtime->post([&] {
        t_recv = stamp();
        rendezvous::RecvArgs args;
        args.dst_location = job.dst;
        args.alloc_attrs.nic_compatible = true;
        C->rendezvous().recv_async(step, parsed, args, [&](Result<rendezvous::RecvOutcome> r) {
          t_end = stamp();
          if (!r.ok())
            set_failure(r.error());
          else
            same = r->tensor.buffer() && r->tensor.total_bytes() == pattern.size() &&
                   std::memcmp(r->tensor.buffer()->data, pattern.data(), pattern.size()) == 0;
          done = true;
        });
      });
      pp.runtime->post([&] {
        t_send = stamp();
        if (auto st = P->rendezvous().send(step, parsed, *tensor, false); !st.ok()) set_failure(st.error());
        tensor.reset();
      });
      if (!Emulation::wait_until([&] { return done.load() || failure.has_value(); }, job.timeout))
        return Error::msg(job.transport + ": a transfer of " + std::to_string(bytes) + " bytes did not complete in " +
                          std::to_string(job.timeout) + " s (protocol stalled)");
      if (failure) return *failure;
      Emulation::wait_until([&] { return t_send.load() != 0; }, job.timeout);
      pt.bytes_ok = pt.bytes_ok && same;
      // Both runtimes started together: their clocks differ by microseconds; latency is measured on the consumer.
      const double lat =
          double(t_end - std::min(t_recv.load(), t_send.load())) * double(clk::period::num) / double(clk::period::den);
      if (s == 0)
        pt.first_latency = lat;
      else
        steady.push_back(lat);
      emu.on(pp, [&] { P->rendezvous().cleanup(step); });
      emu.on(cp, [&] { C->rendezvous().cleanup(step); });
    }
    std::sort(steady.begin(), steady.end());
    pt.steady_latency = steady.empty() ? pt.first_latency : steady[steady.size() / 2];
    pt.bandwidth = pt.steady_latency > 0 ? double(bytes) / pt.steady_latency : 0;
    out.points.push_back(pt);
  }
  emu.on(pp, [&] {
    for (const auto& r : P->log().records())
      out.records.add(r);
    P->transport().shutdown();
    P.reset();
  });
  emu.on(cp, [&] {
    for (const auto& r : C->log().records())
      out.records.add(r);
    C->transport().shutdown();
    C.reset();
  });
  return out;
}

} // namespace tp::emu
