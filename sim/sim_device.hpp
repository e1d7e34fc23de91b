// The simulated RDMA NIC: a verbs::Device with RC semantics (state machine, in-order delivery, receive
// WR consumption, RNR and transport retries with go-back-N, access checks, flushes) whose timing comes
// from the hardware models: doorbell, WQE fetch, payload DMA read (+QPI, +GPU peer-read limit), injection
// as a SimGrid comm on PCIe/QPI/port links (contention), NIC pipelines, switch, DMA write, ACK and CQE.
// See docs/model.md for the formulas. Tests: tests/device/sim_contract_test.cpp, tests/sim/sim_timing_test.cpp.
#pragma once

#include "core/device/device.hpp"
#include "core/device/mr_table.hpp"

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tp::sim {

struct SimContext;
class SimMemory;
class QpCore;

class SimDevice final : public verbs::Device {
public:
  /// `owner`: the name of the process this device belongs to (fault injection and retry accounting).
  SimDevice(SimContext& ctx, size_t machine, int nic, SimMemory& memory, int cpu_socket, std::string owner = {});
  ~SimDevice() override;

  verbs::DeviceAttr query() const override;
  verbs::PortAddress port_address() const override;
  Result<verbs::MemoryRegion> reg_mr(uint64_t addr, uint64_t length, verbs::Access access) override;
  Status dereg_mr(const verbs::MemoryRegion& mr) override;
  Result<std::unique_ptr<verbs::CompletionQueue>> create_cq(int min_entries) override;
  Result<std::unique_ptr<verbs::QueuePair>> create_qp(const verbs::QpInitAttr& attr) override;

  /// Precondition: `addr` is memory allocated by this process.
  Status watch_memory(uint64_t addr, uint64_t len, std::function<void()> on_write) override;
  bool charges_stand_ins() const override { return true; }

  /// Fault injection: move every QP of this device to ERR (outstanding and posted WRs are flushed); returns how
  /// many QPs were not in ERR already.
  size_t force_error_all_qps();
  /// Fault injection: the owning process died. Its QPs stop sending and answering and deliver no completions;
  /// peers see nothing (their requests time out).
  void kill();
  bool dead() const { return dead_; }
  const std::string& owner() const { return owner_; }

  // ---- internal, used by QpCore ----
  SimContext& ctx() { return ctx_; }
  SimMemory& memory() { return memory_; }
  size_t machine() const { return machine_; }
  int nic() const { return nic_; }
  int cpu_socket() const { return cpu_socket_; }
  uint16_t lid() const { return lid_; }
  verbs::MrTable& mrs() { return mrs_; }
  QpCore* find_qp(uint32_t qpn) const;
  void unregister_qp(uint32_t qpn);
  /// NIC-wide message-rate limiter: earliest start for `messages` messages (a WR standing for several,
  /// verbs::SendWr::stands_for) injected at or after `t`.
  double reserve_message_slot(double t, uint32_t messages = 1);
  /// Notify memory watchers that [addr, addr+len) was written by the NIC.
  void notify_write(uint64_t addr, uint64_t len);

private:
  SimContext& ctx_;
  size_t machine_;
  int nic_;
  SimMemory& memory_;
  int cpu_socket_;
  std::string owner_;
  bool dead_ = false;
  uint16_t lid_;
  verbs::MrTable mrs_;
  uint32_t next_qpn_ = 0x11;
  std::unordered_map<uint32_t, QpCore*> qps_;
  double message_slot_free_ = 0;
  struct Watch {
    uint64_t addr, len;
    std::function<void()> fn;
  };
  std::vector<Watch> watches_;
};

} // namespace tp::sim
