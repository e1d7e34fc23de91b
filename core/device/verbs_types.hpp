// Verbs-shaped value types shared by every device backend (simulated NIC, software device, libibverbs):
// access flags, QP states and attributes, work requests, work completions and their status codes.
// Names follow libibverbs (IBV_WC_REM_ACCESS_ERR -> WcStatus::REM_ACCESS_ERR) so that protocol code reads
// like real verbs code. Status strings: device.cpp. Tests: tests/core/verbs_types_test.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tp::verbs {

/// The largest message one RC work request carries (ibv_port_attr.max_msg_sz on current NICs): 2 GiB. A longer
/// one completes with LOC_LEN_ERR at the requester.
constexpr uint64_t MAX_MESSAGE_BYTES = 1ull << 31;

/// The 32-bit SGE length (ibv_sge.length is a uint32_t) of `bytes`, or nullopt when it does not fit. Assigning a
/// 64-bit size to it wraps silently in C (TF verbs' `list.length = buffer_size`, librdmacm's rdma_post_read
/// `sge.length = (uint32_t) length`): every SGE built from a 64-bit size goes through this check.
constexpr std::optional<uint32_t> sge_length(uint64_t bytes)
{
  if (bytes > 0xFFFFFFFFull) return std::nullopt;
  return uint32_t(bytes);
}

/// "a WRITE of 2202009600 bytes exceeds the RC message limit of 2147483648 bytes (max_msg_sz)": what a
/// LOC_LEN_ERR completion of an oversized work request means, with the size and the limit.
std::string oversized_message(const char* what, uint64_t bytes);
/// "a WRITE of 4294968016 bytes does not fit ibv_sge's 32-bit length (it would wrap to 720 bytes)".
std::string sge_wraps(const char* what, uint64_t bytes);

/// Memory region / QP access flags (bit mask, as IBV_ACCESS_*).
enum class Access : uint32_t {
  NONE = 0,
  LOCAL_WRITE = 1u << 0,
  REMOTE_WRITE = 1u << 1,
  REMOTE_READ = 1u << 2,
  REMOTE_ATOMIC = 1u << 3,
};
constexpr Access operator|(Access a, Access b)
{
  return Access(uint32_t(a) | uint32_t(b));
}
constexpr Access operator&(Access a, Access b)
{
  return Access(uint32_t(a) & uint32_t(b));
}
constexpr bool has(Access set, Access flag)
{
  return (uint32_t(set) & uint32_t(flag)) == uint32_t(flag);
}
std::string to_string(Access a);

/// RC queue pair states (IBV_QPS_*).
enum class QpState : uint8_t { RESET, INIT, RTR, RTS, SQD, SQE, ERR };
const char* to_string(QpState s);

/// Path MTU (IBV_MTU_*), in bytes.
enum class Mtu : uint16_t { MTU_256 = 256, MTU_512 = 512, MTU_1024 = 1024, MTU_2048 = 2048, MTU_4096 = 4096 };

/// Work request opcodes supported on RC QPs.
enum class WrOpcode : uint8_t { SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ };
const char* to_string(WrOpcode op);

/// Work completion opcodes (IBV_WC_*).
enum class WcOpcode : uint8_t { SEND, RDMA_WRITE, RDMA_READ, RECV, RECV_RDMA_WITH_IMM };
const char* to_string(WcOpcode op);

/// Work completion status (IBV_WC_*). Errors are delivered in completions, never thrown.
enum class WcStatus : uint8_t {
  SUCCESS,
  LOC_LEN_ERR,       ///< local length error (e.g. incoming SEND larger than the receive buffer)
  LOC_QP_OP_ERR,     ///< local QP operation error
  LOC_PROT_ERR,      ///< local protection error (bad lkey, sge outside the MR, missing LOCAL_WRITE)
  WR_FLUSH_ERR,      ///< WR flushed because the QP is in the error state
  REM_INV_REQ_ERR,   ///< remote invalid request (e.g. remote receive buffer too small)
  REM_ACCESS_ERR,    ///< remote access error (bad rkey, out of bounds, missing remote access flag)
  REM_OP_ERR,        ///< remote operation error
  RETRY_EXC_ERR,     ///< transport retry counter exceeded (peer unreachable or not responding)
  RNR_RETRY_EXC_ERR, ///< receiver-not-ready retry counter exceeded (no receive WR posted)
  GENERAL_ERR,
};
const char* to_string(WcStatus s);

using Gid = std::array<uint8_t, 16>;

/// Address of a device port, as exchanged out of band to connect QPs (LID and/or GID).
struct PortAddress {
  uint16_t lid = 0;
  Gid gid{};
  friend bool operator==(const PortAddress&, const PortAddress&) = default;
};

/// Everything a peer needs to connect to one of our QPs (what perftest exchanges over TCP).
struct QpEndpoint {
  PortAddress port;
  uint32_t qp_num = 0;
  uint32_t psn = 0;
  /// Fixed 26-byte little-endian wire form, for exchange over a stream.
  std::vector<uint8_t> encode() const;
  /// Decode; returns false on a short or malformed buffer.
  static bool decode(const uint8_t* data, size_t len, QpEndpoint& out);
};

/// Scatter/gather element.
struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

struct SendWr {
  uint64_t wr_id = 0;
  WrOpcode opcode = WrOpcode::SEND;
  std::vector<Sge> sg_list; ///< may be empty (zero-length operation)
  bool signaled = true;     ///< IBV_SEND_SIGNALED (ignored when the QP signals all)
  bool inline_data = false; ///< IBV_SEND_INLINE: payload copied into the WQE (no lkey check, no DMA read)
  uint32_t imm_data = 0;    ///< for *_WITH_IMM
  uint64_t remote_addr = 0; ///< for RDMA_*
  uint32_t rkey = 0;        ///< for RDMA_*
  /// Simulator only, for a shortcut (chunk trains, transports::MessengerOptions::read_train): the protocol's work
  /// requests this one stands for. The simulated NIC charges such an RDMA READ as that many READs (outstanding-READ
  /// slots, WQE processing, message rate), so the READs behind it wait as they would; real devices ignore it
  /// (verbs::Device::charges_stand_ins says which do not).
  uint32_t stands_for = 1;
  /// The WRs it is charged as: stands_for, and 0 counts as 1.
  uint32_t charged_as() const { return stands_for > 0 ? stands_for : 1; }

  uint64_t total_length() const
  {
    uint64_t n = 0;
    for (const auto& s : sg_list)
      n += s.length;
    return n;
  }
};

struct RecvWr {
  uint64_t wr_id = 0;
  std::vector<Sge> sg_list; ///< may be empty: then only WRITE_WITH_IMM and zero-length SENDs fit
  uint64_t total_length() const
  {
    uint64_t n = 0;
    for (const auto& s : sg_list)
      n += s.length;
    return n;
  }
};

struct WorkCompletion {
  uint64_t wr_id = 0;
  WcStatus status = WcStatus::SUCCESS;
  WcOpcode opcode = WcOpcode::SEND;
  uint32_t byte_len = 0; ///< bytes received (receive completions) or transferred
  bool with_imm = false;
  uint32_t imm_data = 0;
  uint32_t qp_num = 0;
  uint32_t vendor_err = 0;
  bool ok() const { return status == WcStatus::SUCCESS; }

  /// A send queue's completion, as the simulated and software devices make it (no immediate data).
  static WorkCompletion of_send(uint64_t wr_id, WcStatus st, WcOpcode opc, uint32_t len, uint32_t qp_num)
  {
    return of_recv(wr_id, st, opc, len, false, 0, qp_num);
  }
  /// A receive queue's completion; `imm`: the message carried immediate data `imm_data`.
  static WorkCompletion of_recv(uint64_t wr_id, WcStatus st, WcOpcode opc, uint32_t len, bool imm, uint32_t imm_data,
                                uint32_t qp_num)
  {
    WorkCompletion wc;
    wc.wr_id = wr_id;
    wc.status = st;
    wc.opcode = opc;
    wc.byte_len = len;
    wc.with_imm = imm;
    wc.imm_data = imm_data;
    wc.qp_num = qp_num;
    return wc;
  }
};

struct MemoryRegion {
  uint64_t addr = 0;
  uint64_t length = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  Access access = Access::NONE;
};

struct QpCaps {
  uint32_t max_send_wr = 1024;
  uint32_t max_recv_wr = 1024;
  uint32_t max_send_sge = 4;
  uint32_t max_recv_sge = 4;
  uint32_t max_inline_data = 0;
};

class CompletionQueue;

struct QpInitAttr {
  CompletionQueue* send_cq = nullptr;
  CompletionQueue* recv_cq = nullptr;
  QpCaps cap;
  bool sq_sig_all = false;
};

/// Bits of QpAttr that a modify_qp call sets (IBV_QP_*).
enum class QpAttrMask : uint32_t {
  STATE = 1u << 0,
  ACCESS_FLAGS = 1u << 1,
  PKEY_INDEX = 1u << 2,
  PORT = 1u << 3,
  AV = 1u << 4,
  PATH_MTU = 1u << 5,
  TIMEOUT = 1u << 6,
  RETRY_CNT = 1u << 7,
  RNR_RETRY = 1u << 8,
  RQ_PSN = 1u << 9,
  MAX_QP_RD_ATOMIC = 1u << 10,
  MIN_RNR_TIMER = 1u << 11,
  SQ_PSN = 1u << 12,
  MAX_DEST_RD_ATOMIC = 1u << 13,
  DEST_QPN = 1u << 14,
};
constexpr QpAttrMask operator|(QpAttrMask a, QpAttrMask b)
{
  return QpAttrMask(uint32_t(a) | uint32_t(b));
}
constexpr bool has(QpAttrMask set, QpAttrMask bit)
{
  return (uint32_t(set) & uint32_t(bit)) == uint32_t(bit);
}

/// Masks required by the IB spec for each RC transition (ibv_modify_qp man page).
constexpr QpAttrMask RESET_TO_INIT_MASK =
    QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::ACCESS_FLAGS;
constexpr QpAttrMask INIT_TO_RTR_MASK = QpAttrMask::STATE | QpAttrMask::AV | QpAttrMask::PATH_MTU |
                                        QpAttrMask::DEST_QPN | QpAttrMask::RQ_PSN | QpAttrMask::MAX_DEST_RD_ATOMIC |
                                        QpAttrMask::MIN_RNR_TIMER;
constexpr QpAttrMask RTR_TO_RTS_MASK = QpAttrMask::STATE | QpAttrMask::TIMEOUT | QpAttrMask::RETRY_CNT |
                                       QpAttrMask::RNR_RETRY | QpAttrMask::SQ_PSN | QpAttrMask::MAX_QP_RD_ATOMIC;

struct QpAttr {
  QpState qp_state = QpState::RESET;
  Access qp_access_flags = Access::NONE; ///< remote operations this QP accepts as responder
  uint16_t pkey_index = 0;
  uint8_t port_num = 1;
  PortAddress dest; ///< address vector (AV): the peer's port
  Mtu path_mtu = Mtu::MTU_1024;
  uint32_t dest_qp_num = 0;
  uint32_t rq_psn = 0;
  uint32_t sq_psn = 0;
  uint8_t max_rd_atomic = 16;      ///< outstanding RDMA READs as requester
  uint8_t max_dest_rd_atomic = 16; ///< outstanding RDMA READs as responder
  uint8_t min_rnr_timer = 12;      ///< IB encoding (12 = 0.64 ms)
  uint8_t timeout = 14;            ///< IB encoding: 4.096 us * 2^timeout (14 = 67 ms)
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7; ///< 7 = retry forever
};

/// RNR NAK timer value in seconds for an IB min_rnr_timer encoding (0..31).
double rnr_timer_seconds(uint8_t encoding);
/// Local ACK timeout in seconds for an IB timeout encoding (0 = infinite, returned as a negative value).
double ack_timeout_seconds(uint8_t encoding);

} // namespace tp::verbs
