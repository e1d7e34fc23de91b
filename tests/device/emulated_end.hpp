// One end of a device pair on the emulator (tests/device/device_pair.hpp): an emulated process (its loop, memory
// and device: software or libibverbs), a zeroed buffer registered whole, a CQ and one RC QP. Every operation runs on
// the process's loop, as the engine's own code does. Used by tests/device/soft_threads_contract_test.cpp,
// tests/device/ibv_contract_test.cpp and both OS processes of tests/device/soft_processes_contract_test.cpp.
#pragma once

#include "emulator/emulation.hpp"
#include "tests/device/device_pair.hpp"
#include "tests/test_time.hpp"

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>

namespace tp::test {

/// Seconds since `t0` on the steady clock (one clock for every thread and every process of the host).
inline double seconds_since(std::chrono::steady_clock::time_point t0)
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct EmulatedEnd {
  emu::EmuProcess* proc = nullptr;
  Buffer buf;
  verbs::MemoryRegion mr;
  std::unique_ptr<verbs::CompletionQueue> cq;
  std::unique_ptr<verbs::QueuePair> qp;

  /// Allocate, register, create the CQ and the QP on `p`; `on_wc` sees every completion (on the loop).
  Status open(emu::EmuProcess& p, uint64_t bytes, Location loc, verbs::Access access,
              std::function<void(const verbs::WorkCompletion&)> on_wc)
  {
    proc = &p;
    Status st = ok_status();
    emu::Emulation::on(p, [&] { st = open_here(bytes, loc, access, std::move(on_wc)); });
    return st;
  }
  /// Stop the loop, then drop the QP and CQ (no completion may run into a destroyed fixture).
  void close()
  {
    if (proc && proc->runtime) proc->runtime->stop();
    qp.reset();
    cq.reset();
  }
  verbs::QpEndpoint endpoint(uint32_t psn) const { return {proc->device->port_address(), qp->qp_num(), psn}; }

  Status post_send(const verbs::SendWr& wr)
  {
    return on_loop([&] { return qp->post_send(wr); });
  }
  Status post_recv(const verbs::RecvWr& wr)
  {
    return on_loop([&] { return qp->post_recv(wr); });
  }
  Status post_recv_after(double seconds, const verbs::RecvWr& wr)
  {
    emu::Emulation::on(*proc, [&] { proc->runtime->after(seconds, [this, wr] { (void)qp->post_recv(wr); }); });
    return ok_status();
  }
  Status modify(const verbs::QpAttr& attr, verbs::QpAttrMask mask)
  {
    return on_loop([&] { return qp->modify(attr, mask); });
  }
  verbs::QpState state()
  {
    verbs::QpState s = verbs::QpState::RESET;
    emu::Emulation::on(*proc, [&] { s = qp->state(); });
    return s;
  }
  Status bring_up(uint32_t psn, const verbs::QpEndpoint& remote, const verbs::RcConnectOptions& rc)
  {
    return on_loop([&] { return verbs::bring_up_rc_qp(*qp, psn, remote, rc); });
  }
  Result<verbs::MemoryRegion> reg_mr(uint64_t a, uint64_t len, verbs::Access access)
  {
    Result<verbs::MemoryRegion> r = Error::msg("not run");
    emu::Emulation::on(*proc, [&] { r = proc->device->reg_mr(a, len, access); });
    return r;
  }
  Status dereg_mr(const verbs::MemoryRegion& m)
  {
    return on_loop([&] { return proc->device->dereg_mr(m); });
  }
  Status watch_memory(uint64_t a, uint64_t len, std::function<void()> fired)
  {
    return on_loop([&] { return proc->device->watch_memory(a, len, std::move(fired)); });
  }

private:
  Status on_loop(const std::function<Status()>& f)
  {
    Status st = ok_status();
    emu::Emulation::on(*proc, [&] { st = f(); });
    return st;
  }
  Status open_here(uint64_t bytes, Location loc, verbs::Access access,
                   std::function<void(const verbs::WorkCompletion&)> on_wc)
  {
    auto b = proc->memory->allocate(bytes, AllocAttr::at(loc));
    if (!b.ok()) return b.error();
    buf = b.value();
    std::memset(buf.data, 0, buf.size); // the emulator's allocator does not zero
    auto m = proc->device->reg_mr(buf.addr, buf.size, access);
    if (!m.ok()) return m.error();
    mr = m.value();
    auto c = proc->device->create_cq(4096);
    if (!c.ok()) return c.error();
    cq = std::move(c.value());
    cq->set_handler(std::move(on_wc));
    verbs::QpInitAttr ia;
    ia.send_cq = cq.get();
    ia.recv_cq = cq.get();
    ia.cap.max_inline_data = 64;
    auto q = proc->device->create_qp(ia);
    if (!q.ok()) return q.error();
    qp = std::move(q.value());
    return ok_status();
  }
};

/// What one end has seen: its completions with their times and, when asked, a hash of part of its buffer taken as
/// each completion was delivered. Filled on the end's loop, read from the test thread.
struct CompletionLog {
  std::mutex mu;
  std::vector<verbs::WorkCompletion> wcs;
  std::vector<double> times;
  std::vector<uint64_t> hashes;
  const uint8_t* hash_from = nullptr;
  uint64_t hash_len = 0;

  void add(const verbs::WorkCompletion& wc, double t)
  {
    std::lock_guard<std::mutex> lock(mu);
    wcs.push_back(wc);
    times.push_back(t);
    if (hash_from) hashes.push_back(DevicePair::hash(hash_from, hash_len));
  }
  size_t count()
  {
    std::lock_guard<std::mutex> lock(mu);
    return wcs.size();
  }
};

/// Why the software device, like ibv_reg_mr, cannot refuse a registration that runs past the end of an allocation.
constexpr const char* SOFT_DEVICE_NO_ALLOCATION_BOUNDS =
    "the software device checks, as the kernel does, only that the pages are mapped: it cannot know where the "
    "test's allocation ends";

/// How long run() waits for the completions a case expects, and the quiet time after them.
inline double completion_deadline()
{
  return wall_seconds(10.0);
}
inline double quiet_time()
{
  return 0.05;
}

} // namespace tp::test
