// Work-item timing for the simulator. See docs/model.md "Local work" for the formulas.
#include "sim/sim_runtime.hpp"
#include "sim/sim_context.hpp"
#include "sim/sim_memory.hpp"

#include <cstring>
#include <memory>

namespace tp::sim {

SimRuntime::SimRuntime(SimContext& ctx, size_t machine, std::string name, SimMemory& memory)
    : ctx_(ctx), machine_(machine), name_(std::move(name)), memory_(memory)
{
}

double SimRuntime::now() const
{
  return ctx_.reactor.now();
}
void SimRuntime::post(Task task)
{
  ctx_.reactor.post(guard(std::move(task)));
}
TimerId SimRuntime::after(double delay, Task task)
{
  return ctx_.reactor.after(delay, guard(std::move(task)));
}
Task SimRuntime::guard(Task task) const
{
  if (!ctx_.faults) return task; // no fault plan: nobody dies, no wrapping
  return [alive = alive_, task = std::move(task)] {
    if (*alive) task();
  };
}
void SimRuntime::kill()
{
  *alive_ = false;
  for (uint64_t id : pollers_)
    ctx_.reactor.remove_spinner(id);
  pollers_.clear();
}

void SimRuntime::start_busy_poller(int numa_node)
{
  if (!*alive_) return;
  // The thread runs on the socket of the task's CPU memory (a node the host does not have: its first socket).
  const int sockets = int(ctx_.platform->machine(machine_).sockets.size());
  const int s = numa_node >= 0 && numa_node < sockets ? numa_node : 0;
  pollers_.push_back(ctx_.reactor.add_spinner(ctx_.platform->cpu_host(machine_, s)));
}
bool SimRuntime::cancel(TimerId id)
{
  return ctx_.reactor.cancel_timer(id);
}
MemorySpace& SimRuntime::memory()
{
  return memory_;
}

int SimRuntime::socket_for(const Buffer& b) const
{
  return ctx_.platform->socket_of(machine_, b.location);
}

namespace {

template <class T> void reduce_into(uint8_t* dst, const uint8_t* src, uint64_t bytes)
{
  const uint64_t n = bytes / sizeof(T);
  for (uint64_t i = 0; i < n; ++i) {
    T a, b;
    std::memcpy(&a, dst + i * sizeof(T), sizeof(T));
    std::memcpy(&b, src + i * sizeof(T), sizeof(T));
    a = T(a + b);
    std::memcpy(dst + i * sizeof(T), &a, sizeof(T));
  }
}

Error work_error(const Work& w, const std::string& expected, const std::string& got)
{
  return Error::at("", std::string("work ") + to_string(w.kind) + (w.label.empty() ? "" : " '" + w.label + "'"),
                   expected, got);
}

} // namespace

Result<double> SimRuntime::estimate(const Work& w) const
{
  const Platform& pf = *ctx_.platform;
  const models::HostProfile& hp = pf.machine(machine_);
  auto check = [&](const Buffer& b) { return pf.check_location(machine_, b.location); };
  const double bytes = double(w.bytes);
  switch (w.kind) {
  case WorkKind::MEMCPY: {
    TP_TRY(check(w.src));
    TP_TRY(check(w.dst));
    if (w.src.location.is_host() && w.dst.location.is_host()) {
      const auto& cpu = hp.sockets[size_t(w.src.location.index)].cpu;
      double t = cpu.memcpy_time(bytes);
      if (w.src.location != w.dst.location) t = std::max(t, bytes / hp.socket_link.bandwidth);
      return t;
    }
    if (w.src.location.is_gpu() && w.dst.location.is_gpu() && w.src.location == w.dst.location) {
      const auto& g = hp.gpus[size_t(w.src.location.index)].gpu;
      return (w.queued ? 0.0 : g.kernel_launch_overhead) + 2.0 * bytes / g.memory_bandwidth;
    }
    return Error::at("", "estimate", "a host-only or single-GPU copy", "a copy over PCIe (run it to time it)");
  }
  case WorkKind::SERIALIZE:
  case WorkKind::DESERIALIZE: {
    const int s = w.src.location.is_host() ? w.src.location.index : 0;
    const auto& cpu = hp.sockets[size_t(s)].cpu;
    return bytes / (w.kind == WorkKind::SERIALIZE ? cpu.serialize_bandwidth : cpu.deserialize_bandwidth);
  }
  case WorkKind::REDUCE:
    TP_TRY(check(w.src));
    TP_TRY(check(w.dst));
    if (w.dst.location.is_gpu()) return hp.gpus[size_t(w.dst.location.index)].gpu.reduce_time(bytes);
    return hp.sockets[size_t(w.dst.location.index)].cpu.reduce_time(bytes, w.threads);
  case WorkKind::REGISTER:
    return hp.registration.register_time(bytes);
  case WorkKind::DEREGISTER:
    return hp.registration.deregister_time(bytes);
  case WorkKind::GPU_KERNEL:
    TP_TRY(check(w.src));
    return w.seconds;
  case WorkKind::CPU:
    TP_TRY(check(w.src));
    return w.seconds;
  }
  return Error::msg("unknown work kind");
}

MemorySpace* SimRuntime::peer_memory(const std::string& process)
{
  SimProcess* p = ctx_.find_process(process);
  if (!p || p->machine() != machine_ || p->name() == name_) return nullptr;
  return &p->memory();
}

void SimRuntime::finish(const Work& w, WorkDone done)
{
  // Perform the work on real bytes when both sides are materialized. A buffer's own pointer wins over this
  // process's address space: a copy from a peer process on the same machine (peer_memory) brings its own.
  if (w.kind == WorkKind::MEMCPY && w.bytes > 0) {
    uint8_t* d = w.dst.data && w.dst.size >= w.bytes ? w.dst.data : memory_.resolve(w.dst.addr, w.bytes);
    uint8_t* s = w.src.data && w.src.size >= w.bytes ? w.src.data : memory_.resolve(w.src.addr, w.bytes);
    if (d && s) std::memmove(d, s, w.bytes);
  } else if (w.kind == WorkKind::REDUCE && w.bytes > 0) {
    uint8_t* d = memory_.resolve(w.dst.addr, w.bytes);
    uint8_t* s = memory_.resolve(w.src.addr, w.bytes);
    if (d && s) {
      switch (w.element) {
      case ElementType::F32:
        reduce_into<float>(d, s, w.bytes);
        break;
      case ElementType::F64:
        reduce_into<double>(d, s, w.bytes);
        break;
      case ElementType::I32:
        reduce_into<int32_t>(d, s, w.bytes);
        break;
      case ElementType::I64:
        reduce_into<int64_t>(d, s, w.bytes);
        break;
      case ElementType::F16:
        break; // timed only
      }
    }
  }
  done(ok_status());
}

void SimRuntime::execute(const Work& work, WorkDone done)
{
  if (ctx_.faults)
    done = [alive = alive_, done = std::move(done)](Status st) {
      if (*alive) done(std::move(st));
    };
  if ((work.kind == WorkKind::MEMCPY || work.kind == WorkKind::REDUCE) && work.bytes > 0 &&
      (work.src.size < work.bytes && work.src.size != 0)) {
    Error e = work_error(work, "bytes <= source buffer size", std::to_string(work.bytes));
    ctx_.reactor.post([done, e] { done(e); });
    return;
  }
  if (work.kind == WorkKind::MEMCPY && !(work.src.location.is_host() && work.dst.location.is_host()) &&
      !(work.src.location == work.dst.location)) {
    execute_memcpy(work, std::move(done));
    return;
  }
  auto t = estimate(work);
  if (!t.ok()) {
    Error e = t.error();
    ctx_.reactor.post([done, e] { done(e); });
    return;
  }
  const Platform& pf = *ctx_.platform;
  simgrid::s4u::Host* where = nullptr;
  int threads = 1;
  if (work.kind == WorkKind::GPU_KERNEL || (work.kind == WorkKind::REDUCE && work.dst.location.is_gpu()) ||
      (work.kind == WorkKind::MEMCPY && work.src.location.is_gpu()))
    where = pf.gpu_host(machine_, (work.kind == WorkKind::REDUCE ? work.dst : work.src).location.index);
  else {
    int s = 0;
    const Buffer& b = work.kind == WorkKind::REDUCE ? work.dst : work.src;
    if (b.location.is_host()) s = b.location.index;
    where = pf.cpu_host(machine_, s);
    const auto& cpu = pf.machine(machine_).sockets[size_t(s)].cpu;
    *t += cpu.work_handoff_latency;
    // A host sum over several threads (TF's gradient sums and updates use the intra-op pool: every core) holds that
    // many cores for its time, so it competes with the processes' other work, the gRPC threads among it.
    if (work.kind == WorkKind::REDUCE) threads = work.threads <= 0 ? cpu.cores : std::min(work.threads, cpu.cores);
    work_cpu_seconds_ += *t * threads;
  }
  auto w = std::make_shared<Work>(work);
  ctx_.start_exec(
      where, *t, [this, w, done = std::move(done)]() mutable { finish(*w, std::move(done)); }, threads);
}

void SimRuntime::execute_memcpy(const Work& work, WorkDone done)
{
  // Copies that cross PCIe (host<->GPU, GPU<->GPU): a DMA by the GPU copy engine, i.e. a SimGrid comm on
  // the PCIe (and QPI) links that contends with NIC traffic, after the cudaMemcpy fixed cost and one DMA
  // round trip. Pageable host memory is first staged through a pinned buffer by the CPU.
  const Platform& pf = *ctx_.platform;
  for (const Buffer* b : {&work.src, &work.dst}) {
    auto st = pf.check_location(machine_, b->location);
    if (!st.ok()) {
      Error e = st.error();
      ctx_.reactor.post([done, e] { done(e); });
      return;
    }
  }
  const models::HostProfile& hp = pf.machine(machine_);
  const Location gpu_side = work.src.location.is_gpu() ? work.src.location : work.dst.location;
  const auto& gpu = hp.gpus[size_t(gpu_side.index)].gpu;
  double fixed = (work.queued ? 0.0 : gpu.memcpy_launch_overhead) +
                 pf.local_copy_latency(machine_, work.src.location, work.dst.location);
  const Buffer& host_side = work.src.location.is_host() ? work.src : work.dst;
  double staging = 0;
  if (host_side.location.is_host() && host_side.host_kind == HostMemoryKind::PAGEABLE)
    staging = hp.sockets[size_t(host_side.location.index)].cpu.memcpy_time(double(work.bytes));
  auto w = std::make_shared<Work>(work);
  auto* from = pf.local_host(machine_, work.src.location);
  auto* to = pf.local_host(machine_, work.dst.location);
  if (work.src.location.is_gpu() && work.dst.location.is_gpu() && !hp.nvlink &&
      hp.gpus[size_t(work.src.location.index)].socket != hp.gpus[size_t(work.dst.location.index)].socket) {
    // Over PCIe, GPUs on different sockets have no peer access (CUDA reports none across the socket link; NCCL
    // disables it): the driver stages the copy through pinned host memory in pipelined chunks. Both halves run at
    // once: device -> host memory of the destination's socket (over the socket link), and host -> device. GPUs on
    // one NVLink fabric are peers whatever their sockets.
    const int dst_socket = hp.gpus[size_t(work.dst.location.index)].socket;
    auto* host = pf.local_host(machine_, Location::host(dst_socket));
    ctx_.reactor.after(fixed, [this, w, from, to, host, done = std::move(done)]() mutable {
      auto left = std::make_shared<int>(2);
      auto shared_done = std::make_shared<WorkDone>(std::move(done));
      auto half = [this, w, left, shared_done]() {
        if (--*left == 0) finish(*w, std::move(*shared_done));
      };
      ctx_.start_comm(from, host, double(w->bytes), half);
      ctx_.start_comm(host, to, double(w->bytes), half);
    });
    return;
  }
  ctx_.reactor.after(fixed + staging, [this, w, from, to, done = std::move(done)]() mutable {
    ctx_.start_comm(from, to, double(w->bytes),
                    [this, w, done = std::move(done)]() mutable { finish(*w, std::move(done)); });
  });
}

} // namespace tp::sim
