// A device pair (tests/device/device_pair.hpp) whose two ends are emulated processes of one Emulation, in threads
// of this OS process: the software device on the emulation's fabric, or the libibverbs device (emulator/emulation.hpp,
// Options::device). Used by tests/device/soft_threads_contract_test.cpp and tests/device/ibv_contract_test.cpp.
#pragma once

#include "tests/device/emulated_end.hpp"

#include <atomic>
#include <thread>

namespace tp::test {

class EmulationPair : public DevicePair {
public:
  /// Both ends on `device` ("soft", "ibv", "ibv:NAME"); an "Unavailable" error when the machine has no such device.
  static Result<std::unique_ptr<DevicePair>> make(const PairOptions& o, const std::string& device,
                                                  std::string backend_name)
  {
    auto p = std::unique_ptr<EmulationPair>(new EmulationPair(device));
    p->backend = std::move(backend_name);
    if (auto st = p->open(o); !st.ok()) return st.error();
    return std::unique_ptr<DevicePair>(std::move(p));
  }
  ~EmulationPair() override
  {
    end_[0].close();
    end_[1].close();
  }

  Status post_send(End e, const verbs::SendWr& wr) override { return end(e).post_send(wr); }
  Status post_recv(End e, const verbs::RecvWr& wr) override { return end(e).post_recv(wr); }
  Status post_recv_after(End e, double seconds, const verbs::RecvWr& wr) override
  {
    return end(e).post_recv_after(seconds, wr);
  }
  Status modify(End e, const verbs::QpAttr& attr, verbs::QpAttrMask mask) override { return end(e).modify(attr, mask); }
  verbs::QpState state(End e) override { return end(e).state(); }
  Status bring_up(End e, const verbs::RcConnectOptions& rc) override
  {
    const bool a = e == End::A;
    return end(e).bring_up(a ? 100 : 200, end_[a ? 1 : 0].endpoint(a ? 200 : 100), rc);
  }
  Result<verbs::MemoryRegion> reg_mr(End e, uint64_t a, uint64_t len, verbs::Access access) override
  {
    return end(e).reg_mr(a, len, access);
  }
  Status dereg_mr(End e, const verbs::MemoryRegion& m) override { return end(e).dereg_mr(m); }
  Status watch_memory(End e, uint64_t a, uint64_t len) override
  {
    return end(e).watch_memory(a, len, [this] { fired_ = seconds_since(t0_); });
  }
  double watch_fired_at() override { return fired_; }
  void hash_at_completion(End e, uint64_t off, uint64_t len) override
  {
    auto& log = log_[int(e)];
    std::lock_guard<std::mutex> lock(log.mu);
    log.hash_from = data[int(e)] + off;
    log.hash_len = len;
  }
  void run(size_t a, size_t b) override
  {
    emu::Emulation::wait_until([&] { return log_[0].count() >= a && log_[1].count() >= b; }, completion_deadline());
    std::this_thread::sleep_for(std::chrono::duration<double>(quiet_time()));
    for (int k = 0; k < 2; ++k) {
      std::lock_guard<std::mutex> lock(log_[k].mu);
      (k == 0 ? wca : wcb) = log_[k].wcs;
      (k == 0 ? ta : tb) = log_[k].times;
    }
    std::lock_guard<std::mutex> lock(log_[1].mu);
    hb = log_[1].hashes;
  }
  const char* lacks(Need need) const override
  {
    if (need == Need::SIMULATED_CLOCK) return "times are wall-clock times: only lower bounds on them hold";
    if (ibv_) return ibv_lacks(need);
    return need == Need::ALLOCATION_BOUNDS ? SOFT_DEVICE_NO_ALLOCATION_BOUNDS : nullptr;
  }

private:
  explicit EmulationPair(const std::string& device) : emu_(options(device)), ibv_(device != "soft") {}
  static emu::Emulation::Options options(const std::string& device)
  {
    emu::Emulation::Options o;
    o.device = device;
    return o;
  }
  static const char* ibv_lacks(Need need)
  {
    switch (need) {
    case Need::ALLOCATION_BOUNDS:
      return "the kernel pins whatever pages are mapped: it cannot know where the test's allocation ends";
    case Need::MEMORY_WATCH:
      return "the libibverbs device has no memory watch (optional in core/device/device.hpp): a CPU polls real "
             "memory itself";
    case Need::STATE_NAMED_ERRORS:
      return "ibv_post_send reports a refused post as an errno, without the QP state";
    default:
      return nullptr;
    }
  }
  Status open(const PairOptions& o)
  {
    using verbs::Access;
    const Access all = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    for (int k = 0; k < 2; ++k) {
      auto p = emu_.try_add_process(k == 0 ? "a" : "b");
      if (!p.ok()) return p.error();
      auto& log = log_[k];
      auto st =
          end_[k].open(*p.value(), o.buffer_bytes, k == 0 ? Location::host(0) : o.loc_b, k == 0 ? all : o.access_b,
                       [this, &log](const verbs::WorkCompletion& wc) { log.add(wc, seconds_since(t0_)); });
      if (!st.ok()) return st;
      data[k] = end_[k].buf.data;
      addr[k] = end_[k].buf.addr;
      mr[k] = end_[k].mr;
    }
    size = end_[1].buf.size;
    if (!o.connect) return ok_status();
    if (auto st = bring_up(End::A, o.rc); !st.ok()) return st;
    return bring_up(End::B, o.rc);
  }
  EmulatedEnd& end(End e) { return end_[int(e)]; }

  emu::Emulation emu_;
  bool ibv_;
  const std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  CompletionLog log_[2];
  EmulatedEnd end_[2];
  std::atomic<double> fired_{-1};
};

} // namespace tp::test
