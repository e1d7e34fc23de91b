// The software verbs device: RC queue pairs whose data path is a real memcpy between real memory regions, for
// emulated processes in one OS process. A SoftFabric is the wire: one thread that executes every posted work
// request in order (per QP, in posting order), checks keys, bounds and access exactly as the simulated NIC does
// (shared MrTable and QP state machine), and delivers completions on each owner's runtime. Errors are error
// completions: bad lkey LOC_PROT_ERR, bad rkey/bounds/access REM_ACCESS_ERR (the target QP goes to ERR too), no
// receive posted: RNR NAKs retried after min_rnr_timer until rnr_retry is spent (7 = forever) then
// RNR_RETRY_EXC_ERR, peer gone: RETRY_EXC_ERR after retry_cnt ACK timeouts, WRs behind an error: WR_FLUSH_ERR.
// Memory outside the target region is never touched. Devices of different OS processes reach each other through
// link_processes() (emulator/process_link: a Unix socket per process, shared-memory arenas): the requester's wire
// thread sends the WR, the responder's link thread checks and copies, the ACK/NAK comes back. Tests:
// tests/device/soft_threads_contract_test.cpp, tests/device/soft_processes_contract_test.cpp.
#pragma once

#include "core/device/device.hpp"
#include "core/device/mr_table.hpp"
#include "core/device/rc_responder_rules.hpp"
#include "core/runtime/runtime.hpp"
#include "emulator/process_link.hpp"

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace tp::emu {

class SoftDevice;
struct QpCore;
struct PendingSend;

/// A responder's answer to one request (core/device/rc_responder_rules.hpp).
using verbs::ResponderVerdict;

class SoftFabric {
public:
  /// Devices attached here get lids first_lid, first_lid + 1, ... (processes linked by link_processes() need
  /// disjoint ranges: first_lid = 1 + k x ProcessLink::LIDS_PER_PROCESS).
  explicit SoftFabric(uint16_t first_lid = 1);
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
  /// Reach the software devices of other processes on this host: a socket in `dir` per process, and this
  /// process's memory (every registered region must lie in `arena`) mapped by the peers. Once per fabric.
  Status link_processes(const std::string& dir, SharedArena& arena);
  /// Whether `lid` belongs to a linked process that is reachable (state() held).
  bool reaches(uint16_t lid);
  uint64_t next_seq() { return ++seq_; }
  /// Send a WR to its responder in another process (state() held). False: the process cannot be reached.
  bool send_request(const QpCore& q, const PendingSend& p, uint64_t len);
  /// A request frame body from another process (emulator/process_wire.hpp) whose memory is `requester`: checked,
  /// carried out on the addressed QP and memory, and answered with a response frame body (a malformed request is
  /// NAKed as an invalid request, one for a QP not connected to its sender is not acknowledged).
  std::vector<uint8_t> answer_request(const std::vector<uint8_t>& body, const PeerArena& requester);
  /// A response frame body from another process: completes the in-flight WR it answers; anything else is ignored.
  void take_response(const std::vector<uint8_t>& body);
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
  uint64_t seq_ = 0;
  std::unique_ptr<ProcessLink> link_; ///< declared last: destroyed first (its threads call into the devices)
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
  void for_each_qp(const std::function<void(QpCore&)>& f);

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
