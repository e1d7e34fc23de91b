// The software verbs device: RC queue pairs whose data path is a real memcpy between real memory regions, for
// emulated processes in one OS process. A SoftFabric is the wire: one thread that executes every posted work
// request in order (per QP, in posting order), checks keys, bounds and access exactly as the simulated NIC does
// (shared MrTable and QP state machine), and delivers completions on each owner's runtime. Errors are error
// completions: bad lkey LOC_PROT_ERR, bad rkey/bounds/access REM_ACCESS_ERR (the target QP goes to ERR too), no
// receive posted: RNR NAKs retried after min_rnr_timer until rnr_retry is spent (7 = forever) then
// RNR_RETRY_EXC_ERR, peer gone: RETRY_EXC_ERR after retry_cnt ACK timeouts, WRs behind an error: WR_FLUSH_ERR.
// Memory outside the target region is never touched. Tests: tests/emulator/soft_device_test.cpp.
#pragma once

#include "core/device/device.hpp"
#include "core/device/mr_table.hpp"
#include "core/runtime/runtime.hpp"

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace tp::emu {

class SoftDevice;

class SoftFabric {
public:
  SoftFabric();
  ~SoftFabric();
  SoftFabric(const SoftFabric&) = delete;
  SoftFabric& operator=(const SoftFabric&) = delete;

  uint16_t attach(SoftDevice* dev);
  void detach(uint16_t lid);
  SoftDevice* device(uint16_t lid) const; ///< with state() held
  /// Run `op` on the wire thread after `delay` seconds (0: as soon as possible, FIFO).
  void submit(std::function<void()> op, double delay = 0);
  /// The lock for every device's QP and MR state.
  std::mutex& state() { return state_mu_; }
  uint64_t bytes_moved() const { return bytes_moved_; }
  void count_bytes(uint64_t n) { bytes_moved_ += n; }

private:
  void run();
  mutable std::mutex state_mu_;
  std::map<uint16_t, SoftDevice*> devices_;
  uint16_t next_lid_ = 1;
  std::mutex q_mu_;
  std::condition_variable q_cv_;
  std::deque<std::function<void()>> ready_;
  std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> delayed_;
  bool stop_ = false;
  uint64_t bytes_moved_ = 0;
  std::thread thread_;
};

struct QpCore;

class SoftDevice final : public verbs::Device {
public:
  /// Completions and watch callbacks run on `rt`. `fabric` must outlive the device.
  SoftDevice(SoftFabric& fabric, Runtime& rt, std::string name = "soft0");
  ~SoftDevice() override;
  verbs::DeviceAttr query() const override;
  verbs::PortAddress port_address() const override;
  Result<verbs::MemoryRegion> reg_mr(uint64_t addr, uint64_t length, verbs::Access access) override;
  Status dereg_mr(const verbs::MemoryRegion& mr) override;
  Result<std::unique_ptr<verbs::CompletionQueue>> create_cq(int min_entries) override;
  Result<std::unique_ptr<verbs::QueuePair>> create_qp(const verbs::QpInitAttr& attr) override;
  Status watch_memory(uint64_t addr, uint64_t len, std::function<void()> on_write) override;

  // Wire-side internals (state() held).
  QpCore* qp(uint32_t qpn) const;
  uint32_t register_qp(QpCore* q);
  void unregister_qp(uint32_t qpn);
  verbs::MrTable& mrs() { return mrs_; }
  Runtime& runtime() { return rt_; }
  SoftFabric& fabric() { return fabric_; }
  void landed(uint64_t addr, uint64_t len); ///< fire watches covering this range

private:
  SoftFabric& fabric_;
  Runtime& rt_;
  std::string name_;
  uint16_t lid_;
  verbs::MrTable mrs_;
  std::map<uint32_t, QpCore*> qps_;
  uint32_t next_qpn_ = 0x100;
  struct Watch {
    uint64_t addr, len;
    std::function<void()> f;
  };
  std::vector<Watch> watches_;
};

} // namespace tp::emu
