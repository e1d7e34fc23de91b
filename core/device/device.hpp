// The verbs-shaped device interface that all protocol code is written against. Backends implement it:
// sim/sim_device (SimGrid NIC/PCIe/NUMA model), emulator/ soft and libibverbs devices. Like rdma-core's
// dummy_ops, every operation defaults to "not supported" so that a backend overrides only what it has.
// Completions and all other callbacks are delivered on the owning Runtime's executor, one at a time.
// Contract tests run against every backend: the cases of tests/device/device_contract_cases.hpp, instantiated on
// each device by tests/device/*_contract_test.cpp (docs/design.md, "The device contract suite").
#pragma once

#include "core/common/result.hpp"
#include "core/device/verbs_types.hpp"

#include <functional>
#include <memory>
#include <string>

namespace tp {
class MemorySpace;
}

namespace tp::verbs {

using CompletionHandler = std::function<void(const WorkCompletion&)>;

/// A completion queue: completions are pushed to a handler instead of being polled.
class CompletionQueue {
public:
  virtual ~CompletionQueue() = default;
  /// Install the handler invoked for every completion (on the runtime executor). Completions that arrive
  /// before a handler is installed are kept and delivered when one is set.
  virtual void set_handler(CompletionHandler handler) = 0;
};

/// A reliable-connected queue pair.
class QueuePair {
public:
  virtual ~QueuePair() = default;
  virtual uint32_t qp_num() const = 0;
  virtual QpState state() const = 0;
  /// ibv_modify_qp: validates the transition and the required attribute mask; an invalid transition is an
  /// Error and leaves the QP unchanged. Moving to ERR flushes every outstanding WR with WR_FLUSH_ERR.
  virtual Status modify(const QpAttr& attr, QpAttrMask mask) = 0;
  /// ibv_post_send: an Error when the QP is not in RTS (or SQD/SQE), the queue is full or the WR is malformed;
  /// in ERR state the WR is accepted and completes with WR_FLUSH_ERR.
  virtual Status post_send(const SendWr& wr) = 0;
  /// ibv_post_recv: an Error in RESET or when the receive queue is full; in ERR state it completes flushed.
  virtual Status post_recv(const RecvWr& wr) = 0;
  /// Current attributes (a copy).
  virtual QpAttr attributes() const = 0;
};

enum class LinkLayer : uint8_t { INFINIBAND, ETHERNET };

struct DeviceAttr {
  std::string name;
  LinkLayer link_layer = LinkLayer::INFINIBAND;
  Mtu active_mtu = Mtu::MTU_4096;
  double port_rate_bps = 0; ///< data rate of the port in bit/s (after line encoding)
  uint32_t max_qp_wr = 16384;
  uint32_t max_sge = 30;
  uint32_t max_qp_rd_atom = 16;
  uint32_t max_inline_data = 0; ///< largest inline payload a QP may be created with
  uint64_t max_mr_size = ~0ull;
};

class Device {
public:
  virtual ~Device() = default;
  virtual DeviceAttr query() const = 0;
  /// Address of our port, to hand to peers (QpAttr::dest).
  virtual PortAddress port_address() const = 0;

  /// ibv_reg_mr: registers [addr, addr+length) with the given access. The time this takes is a
  /// Work::REGISTER item of the runtime (the simulator charges it there; real devices spend it here).
  virtual Result<MemoryRegion> reg_mr(uint64_t addr, uint64_t length, Access access);
  /// ibv_dereg_mr: later uses of its keys fail with protection/access errors.
  virtual Status dereg_mr(const MemoryRegion& mr);
  virtual Result<std::unique_ptr<CompletionQueue>> create_cq(int min_entries);
  /// Create an RC QP in RESET. Precondition: the CQs outlive the QP.
  virtual Result<std::unique_ptr<QueuePair>> create_qp(const QpInitAttr& attr);
  /// Call `on_write` (once, on the runtime executor) when an incoming RDMA WRITE or READ response lands in
  /// [addr, addr+len): what a CPU spinning on that memory would see (perftest's write_lat). Optional feature.
  virtual Status watch_memory(uint64_t addr, uint64_t len, std::function<void()> on_write);
  /// Whether the device charges a work request that stands for several (SendWr::stands_for) as that many: true only
  /// where the NIC is a model (the simulator). A protocol's simulation shortcut built on it (AR-gRPC's chunk trains)
  /// is off elsewhere, where such a WR would be a different protocol on real hardware.
  virtual bool charges_stand_ins() const { return false; }
};

/// Options for bring_up_rc_qp(): the attributes perftest and the TF verbs transport use.
struct RcConnectOptions {
  Access access = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
  Mtu path_mtu = Mtu::MTU_1024;
  uint8_t timeout = 14;
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 12;
  uint8_t max_rd_atomic = 16;
};

/// What ibv_reg_mr refuses whatever the memory: REMOTE_WRITE/REMOTE_ATOMIC without LOCAL_WRITE (EINVAL).
Status check_registration_access(Access access);
/// For a device that does not charge stand-ins (Device::charges_stand_ins false: the software device, libibverbs): a
/// work request that stands for several (SendWr::stands_for > 1, a simulation shortcut) is refused at post_send, since
/// carried out it would be another protocol with the right bytes, a difference nothing downstream would notice.
Status refuse_stand_in(const SendWr& wr);
/// check_registration_access, and a range that is not inside one allocation of `memory` (unmapped pages are the
/// kernel's EFAULT; a device that knows its process's allocations checks where they end too). The error reg_mr
/// returns, or ok.
Status check_registration(const MemorySpace& memory, uint64_t addr, uint64_t length, Access access);

/// Move a RESET QP through INIT and RTR to RTS, connected to `remote` (what perftest's ctx_connect does).
Status bring_up_rc_qp(QueuePair& qp, uint32_t local_psn, const QpEndpoint& remote, const RcConnectOptions& opt);

} // namespace tp::verbs
