// The fixture interface of the device contract suite (tests/device/device_contract_cases.hpp): two ends, A (the
// requester) and B (the responder), each with a device, a registered buffer, a CQ and one RC QP, connected to each
// other. Each backend implements it once (tests/device/*_contract_test.cpp) and gets every case of the suite; what
// a case asks of an end goes through here, so that the end may live in a simulation, in a thread or in another OS
// process. docs/design.md, "The device contract suite", says how a new device gets the suite.
#pragma once

#include "core/device/device.hpp"
#include "core/memory/buffer.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tp::test {

enum class End { A, B };

/// What a case asks of the pair it gets.
struct PairOptions {
  uint64_t buffer_bytes = 1 << 20;
  Location loc_b = Location::host(0);
  verbs::Access access_b = verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_WRITE | verbs::Access::REMOTE_READ;
  bool connect = true; ///< false: both QPs stay in RESET
  verbs::RcConnectOptions rc;
};

/// What some backends cannot show; a case that needs it says why it does not apply there (lacks()).
enum class Need {
  SIMULATED_CLOCK,    ///< exact (model) times, so upper bounds on elapsed time can be asserted
  ALLOCATION_BOUNDS,  ///< reg_mr knows where an allocation ends
  MEMORY_WATCH,       ///< Device::watch_memory (optional in the interface)
  STATE_NAMED_ERRORS, ///< a refused post names the QP state in its error
};

class DevicePair {
public:
  virtual ~DevicePair() = default;

  virtual Status post_send(End e, const verbs::SendWr& wr) = 0;
  virtual Status post_recv(End e, const verbs::RecvWr& wr) = 0;
  /// Post `wr` on `e` `seconds` from now (from the end's own clock and context).
  virtual Status post_recv_after(End e, double seconds, const verbs::RecvWr& wr) = 0;
  virtual Status modify(End e, const verbs::QpAttr& attr, verbs::QpAttrMask mask) = 0;
  virtual verbs::QpState state(End e) = 0;
  /// bring_up_rc_qp on `e`'s QP towards the other end's QP (PSN 100 for A, 200 for B).
  virtual Status bring_up(End e, const verbs::RcConnectOptions& rc) = 0;
  virtual Result<verbs::MemoryRegion> reg_mr(End e, uint64_t addr, uint64_t length, verbs::Access access) = 0;
  virtual Status dereg_mr(End e, const verbs::MemoryRegion& mr) = 0;
  /// Device::watch_memory on `e`; when it fires, watch_fired_at() is the time, on the completions' clock.
  virtual Status watch_memory(End e, uint64_t addr, uint64_t len) = 0;
  virtual double watch_fired_at() = 0;
  /// From now on, hash [off, off+len) of `e`'s buffer as each of its completions is delivered (hb: hashes at B).
  virtual void hash_at_completion(End e, uint64_t off, uint64_t len) = 0;
  /// Let the devices work until A has `a` completions and B has `b` (a simulation: until it is idle), or a
  /// deadline passes, then a short quiet time (completions that should not come would show); then wca, wcb, ta, tb
  /// and hb hold every completion so far.
  virtual void run(size_t a = 0, size_t b = 0) = 0;
  /// nullptr when this backend can show `need`; otherwise why it cannot (the case then says it does not apply).
  virtual const char* lacks(Need need) const = 0;

  std::string backend;
  uint8_t* data[2] = {nullptr, nullptr}; ///< each end's buffer, readable here (shared memory across processes)
  uint64_t addr[2] = {0, 0};             ///< each buffer's address in its own end
  uint64_t size = 0;
  verbs::MemoryRegion mr[2];
  std::vector<verbs::WorkCompletion> wca, wcb;
  std::vector<double> ta, tb; ///< completion times, seconds, one clock for both ends
  std::vector<uint64_t> hb;

  static uint64_t hash(const uint8_t* p, uint64_t len)
  {
    uint64_t h = 1469598103934665603ull; // FNV-1a
    for (uint64_t i = 0; i < len; ++i)
      h = (h ^ p[i]) * 1099511628211ull;
    return h;
  }
  /// The pattern fill_a() writes, as it would read at any offset.
  static uint8_t pattern(uint64_t i, uint8_t seed) { return uint8_t(seed + i * 7); }

  verbs::SendWr write(uint64_t id, uint64_t off_a, uint64_t off_b, uint32_t len, bool imm = false,
                      uint32_t imm_data = 0) const
  {
    verbs::SendWr w;
    w.wr_id = id;
    w.opcode = imm ? verbs::WrOpcode::RDMA_WRITE_WITH_IMM : verbs::WrOpcode::RDMA_WRITE;
    if (len) w.sg_list.push_back({addr[0] + off_a, len, mr[0].lkey});
    w.remote_addr = addr[1] + off_b;
    w.rkey = mr[1].rkey;
    w.imm_data = imm_data;
    return w;
  }
  verbs::SendWr read(uint64_t id, uint64_t off_a, uint64_t off_b, uint32_t len) const
  {
    verbs::SendWr w = write(id, off_a, off_b, len);
    w.opcode = verbs::WrOpcode::RDMA_READ;
    return w;
  }
  verbs::SendWr send(uint64_t id, uint64_t off_a, uint32_t len, bool imm = false, uint32_t imm_data = 0) const
  {
    verbs::SendWr w;
    w.wr_id = id;
    w.opcode = imm ? verbs::WrOpcode::SEND_WITH_IMM : verbs::WrOpcode::SEND;
    if (len) w.sg_list.push_back({addr[0] + off_a, len, mr[0].lkey});
    w.imm_data = imm_data;
    return w;
  }
  verbs::RecvWr recv_b(uint64_t id, uint64_t off_b, uint32_t len) const
  {
    verbs::RecvWr r;
    r.wr_id = id;
    if (len) r.sg_list.push_back({addr[1] + off_b, len, mr[1].lkey});
    return r;
  }
  void fill_a(uint64_t off, uint64_t len, uint8_t seed)
  {
    for (uint64_t i = 0; i < len; ++i)
      data[0][off + i] = pattern(i, seed);
  }
  bool b_matches(uint64_t off_b, uint64_t len, uint8_t seed) const
  {
    for (uint64_t i = 0; i < len; ++i)
      if (data[1][off_b + i] != pattern(i, seed)) return false;
    return true;
  }
};

} // namespace tp::test
