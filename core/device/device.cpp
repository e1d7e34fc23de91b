// Status/opcode string tables (as rdma-core's enum_strs.c), default "not supported" device operations
// (as rdma-core's dummy_ops.c), IB timer encodings and the RC bring-up helper.
#include "core/device/device.hpp"

#include "core/memory/buffer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tp::verbs {

std::string to_string(Access a)
{
  std::string s;
  auto add = [&](Access f, const char* n) {
    if (has(a, f)) s += (s.empty() ? "" : "|") + std::string(n);
  };
  add(Access::LOCAL_WRITE, "LOCAL_WRITE");
  add(Access::REMOTE_WRITE, "REMOTE_WRITE");
  add(Access::REMOTE_READ, "REMOTE_READ");
  add(Access::REMOTE_ATOMIC, "REMOTE_ATOMIC");
  return s.empty() ? "NONE" : s;
}

const char* to_string(QpState s)
{
  static const char* const names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
  return names[static_cast<int>(s)];
}

const char* to_string(WrOpcode op)
{
  static const char* const names[] = {"SEND", "SEND_WITH_IMM", "RDMA_WRITE", "RDMA_WRITE_WITH_IMM", "RDMA_READ"};
  return names[static_cast<int>(op)];
}

const char* to_string(WcOpcode op)
{
  static const char* const names[] = {"SEND", "RDMA_WRITE", "RDMA_READ", "RECV", "RECV_RDMA_WITH_IMM"};
  return names[static_cast<int>(op)];
}

const char* to_string(WcStatus s)
{
  // Wording of ibv_wc_status_str() where one exists.
  static const char* const names[] = {"success",
                                      "local length error",
                                      "local QP operation error",
                                      "local protection error",
                                      "Work Request Flushed Error",
                                      "remote invalid request error",
                                      "remote access error",
                                      "remote operation error",
                                      "transport retry counter exceeded",
                                      "RNR retry counter exceeded",
                                      "general error"};
  return names[static_cast<int>(s)];
}

std::string oversized_message(const char* what, uint64_t bytes)
{
  return std::string(what) + " of " + std::to_string(bytes) + " bytes exceeds the RC message limit of " +
         std::to_string(MAX_MESSAGE_BYTES) + " bytes (max_msg_sz)";
}

std::string sge_wraps(const char* what, uint64_t bytes)
{
  return std::string(what) + " of " + std::to_string(bytes) +
         " bytes does not fit ibv_sge's 32-bit length (it would wrap to " + std::to_string(bytes & 0xFFFFFFFFull) +
         " bytes)";
}

double rnr_timer_seconds(uint8_t encoding)
{
  // IBTA spec table "Encoding for RNR NAK Timer Field" (milliseconds).
  static const double ms[32] = {655.36, 0.01,  0.02,  0.03,  0.04,  0.06,   0.08,   0.12,   0.16,   0.24,  0.32,
                                0.48,   0.64,  0.96,  1.28,  1.92,  2.56,   3.84,   5.12,   7.68,   10.24, 15.36,
                                20.48,  30.72, 40.96, 61.44, 81.92, 122.88, 163.84, 245.76, 327.68, 491.52};
  return ms[encoding & 31] * 1e-3;
}

double ack_timeout_seconds(uint8_t encoding)
{
  if (encoding == 0) return -1.0; // infinite
  return 4.096e-6 * std::ldexp(1.0, encoding & 31);
}

std::vector<uint8_t> QpEndpoint::encode() const
{
  std::vector<uint8_t> out(26);
  out[0] = uint8_t(port.lid);
  out[1] = uint8_t(port.lid >> 8);
  std::memcpy(out.data() + 2, port.gid.data(), 16);
  for (int i = 0; i < 4; ++i) {
    out[18 + i] = uint8_t(qp_num >> (8 * i));
    out[22 + i] = uint8_t(psn >> (8 * i));
  }
  return out;
}

bool QpEndpoint::decode(const uint8_t* data, size_t len, QpEndpoint& out)
{
  if (data == nullptr || len != 26) return false;
  out.port.lid = uint16_t(data[0] | (data[1] << 8));
  std::memcpy(out.port.gid.data(), data + 2, 16);
  out.qp_num = 0;
  out.psn = 0;
  for (int i = 0; i < 4; ++i) {
    out.qp_num |= uint32_t(data[18 + i]) << (8 * i);
    out.psn |= uint32_t(data[22 + i]) << (8 * i);
  }
  return (out.qp_num >> 24) == 0 && (out.psn >> 24) == 0; // both are 24-bit quantities
}

static Error not_supported(const char* op)
{
  return Error::at({}, op, "an operation this device supports", "not supported");
}

Result<MemoryRegion> Device::reg_mr(uint64_t, uint64_t, Access)
{
  return not_supported("reg_mr");
}
Status Device::dereg_mr(const MemoryRegion&)
{
  return not_supported("dereg_mr");
}
Result<std::unique_ptr<CompletionQueue>> Device::create_cq(int)
{
  return not_supported("create_cq");
}
Result<std::unique_ptr<QueuePair>> Device::create_qp(const QpInitAttr&)
{
  return not_supported("create_qp");
}
Status Device::watch_memory(uint64_t, uint64_t, std::function<void()>)
{
  return not_supported("watch_memory");
}

Status refuse_stand_in(const SendWr& wr)
{
  if (wr.stands_for <= 1) return ok_status();
  return Error::at("", "post_send",
                   "a work request of its own (SendWr::stands_for 1: only the simulator charges one that stands for "
                   "several)",
                   "stands_for " + std::to_string(wr.stands_for));
}

Status check_registration_access(Access access)
{
  if ((has(access, Access::REMOTE_WRITE) || has(access, Access::REMOTE_ATOMIC)) && !has(access, Access::LOCAL_WRITE))
    return Error::at("", "reg_mr", "LOCAL_WRITE together with REMOTE_WRITE/REMOTE_ATOMIC (ibv_reg_mr EINVAL)",
                     to_string(access));
  return ok_status();
}

Status check_registration(const MemorySpace& memory, uint64_t addr, uint64_t length, Access access)
{
  if (auto st = check_registration_access(access); !st.ok()) return st;
  auto b = memory.find(addr);
  if (!b || addr + length > b->addr + std::max<uint64_t>(b->size, 1))
    return Error::at("", "reg_mr", "an address range inside memory allocated by this process",
                     "[" + std::to_string(addr) + ", +" + std::to_string(length) + ")");
  return ok_status();
}

Status bring_up_rc_qp(QueuePair& qp, uint32_t local_psn, const QpEndpoint& remote, const RcConnectOptions& opt)
{
  QpAttr a;
  a.qp_state = QpState::INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags = opt.access;
  TP_TRY(qp.modify(a, RESET_TO_INIT_MASK));

  a.qp_state = QpState::RTR;
  a.dest = remote.port;
  a.path_mtu = opt.path_mtu;
  a.dest_qp_num = remote.qp_num;
  a.rq_psn = remote.psn;
  a.max_dest_rd_atomic = opt.max_rd_atomic;
  a.min_rnr_timer = opt.min_rnr_timer;
  TP_TRY(qp.modify(a, INIT_TO_RTR_MASK));

  a.qp_state = QpState::RTS;
  a.timeout = opt.timeout;
  a.retry_cnt = opt.retry_cnt;
  a.rnr_retry = opt.rnr_retry;
  a.sq_psn = local_psn;
  a.max_rd_atomic = opt.max_rd_atomic;
  TP_TRY(qp.modify(a, RTR_TO_RTS_MASK));
  return ok_status();
}

} // namespace tp::verbs
