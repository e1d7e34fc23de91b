// libibverbs device (see ibv_device.hpp). Everything ibverbs-specific stays in this file.
#include "emulator/ibv_device.hpp"

#include "emulator/completion_delivery.hpp"

#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace tp::emu {

using namespace verbs;

namespace {

Error ibv_error(const std::string& call, int err)
{
  return Error::status("Unavailable", call + ": " + std::strerror(err ? err : errno));
}

int access_flags(Access a)
{
  int f = 0;
  if (has(a, Access::LOCAL_WRITE)) f |= IBV_ACCESS_LOCAL_WRITE;
  if (has(a, Access::REMOTE_WRITE)) f |= IBV_ACCESS_REMOTE_WRITE;
  if (has(a, Access::REMOTE_READ)) f |= IBV_ACCESS_REMOTE_READ;
  if (has(a, Access::REMOTE_ATOMIC)) f |= IBV_ACCESS_REMOTE_ATOMIC;
  return f;
}

ibv_mtu mtu_of(Mtu m)
{
  switch (m) {
  case Mtu::MTU_256:
    return IBV_MTU_256;
  case Mtu::MTU_512:
    return IBV_MTU_512;
  case Mtu::MTU_1024:
    return IBV_MTU_1024;
  case Mtu::MTU_2048:
    return IBV_MTU_2048;
  case Mtu::MTU_4096:
    return IBV_MTU_4096;
  }
  return IBV_MTU_1024;
}

ibv_qp_state state_of(QpState s)
{
  switch (s) {
  case QpState::RESET:
    return IBV_QPS_RESET;
  case QpState::INIT:
    return IBV_QPS_INIT;
  case QpState::RTR:
    return IBV_QPS_RTR;
  case QpState::RTS:
    return IBV_QPS_RTS;
  case QpState::SQD:
    return IBV_QPS_SQD;
  case QpState::SQE:
    return IBV_QPS_SQE;
  case QpState::ERR:
    return IBV_QPS_ERR;
  }
  return IBV_QPS_ERR;
}

QpState from_ibv_state(ibv_qp_state s)
{
  switch (s) {
  case IBV_QPS_RESET:
    return QpState::RESET;
  case IBV_QPS_INIT:
    return QpState::INIT;
  case IBV_QPS_RTR:
    return QpState::RTR;
  case IBV_QPS_RTS:
    return QpState::RTS;
  case IBV_QPS_SQD:
    return QpState::SQD;
  case IBV_QPS_SQE:
    return QpState::SQE;
  default:
    return QpState::ERR;
  }
}

WcStatus status_of(ibv_wc_status s)
{
  switch (s) {
  case IBV_WC_SUCCESS:
    return WcStatus::SUCCESS;
  case IBV_WC_LOC_LEN_ERR:
    return WcStatus::LOC_LEN_ERR;
  case IBV_WC_LOC_QP_OP_ERR:
    return WcStatus::LOC_QP_OP_ERR;
  case IBV_WC_LOC_PROT_ERR:
    return WcStatus::LOC_PROT_ERR;
  case IBV_WC_WR_FLUSH_ERR:
    return WcStatus::WR_FLUSH_ERR;
  case IBV_WC_REM_INV_REQ_ERR:
    return WcStatus::REM_INV_REQ_ERR;
  case IBV_WC_REM_ACCESS_ERR:
    return WcStatus::REM_ACCESS_ERR;
  case IBV_WC_REM_OP_ERR:
    return WcStatus::REM_OP_ERR;
  case IBV_WC_RETRY_EXC_ERR:
    return WcStatus::RETRY_EXC_ERR;
  case IBV_WC_RNR_RETRY_EXC_ERR:
    return WcStatus::RNR_RETRY_EXC_ERR;
  default:
    return WcStatus::GENERAL_ERR;
  }
}

WcOpcode opcode_of(ibv_wc_opcode o)
{
  switch (o) {
  case IBV_WC_SEND:
    return WcOpcode::SEND;
  case IBV_WC_RDMA_WRITE:
    return WcOpcode::RDMA_WRITE;
  case IBV_WC_RDMA_READ:
    return WcOpcode::RDMA_READ;
  case IBV_WC_RECV_RDMA_WITH_IMM:
    return WcOpcode::RECV_RDMA_WITH_IMM;
  default:
    return WcOpcode::RECV;
  }
}

/// One CQ: a handler and a progress thread that polls it and posts completions to the runtime.
class IbvCq final : public CompletionQueue {
public:
  IbvCq(Runtime& rt, ibv_cq* cq) : cq_(cq), delivery_(rt)
  {
    thread_ = std::thread([this] { poll(); });
  }
  ~IbvCq() override
  {
    stop_ = true;
    thread_.join();
    ibv_destroy_cq(cq_);
  }
  void set_handler(CompletionHandler handler) override { delivery_.set_handler(std::move(handler)); }
  ibv_cq* raw() { return cq_; }

private:
  void deliver(const WorkCompletion& wc) { delivery_.deliver(wc); }
  void poll()
  {
    ibv_wc wcs[32];
    while (!stop_) {
      const int n = ibv_poll_cq(cq_, 32, wcs);
      if (n <= 0) {
        std::this_thread::yield();
        continue;
      }
      for (int i = 0; i < n; ++i) {
        WorkCompletion wc;
        wc.wr_id = wcs[i].wr_id;
        wc.status = status_of(wcs[i].status);
        wc.opcode = opcode_of(wcs[i].opcode);
        wc.byte_len = wcs[i].byte_len;
        wc.with_imm = (wcs[i].wc_flags & IBV_WC_WITH_IMM) != 0;
        wc.imm_data = ntohl(wcs[i].imm_data);
        wc.qp_num = wcs[i].qp_num;
        wc.vendor_err = wcs[i].vendor_err;
        deliver(wc);
      }
    }
  }
  ibv_cq* cq_;
  CompletionDelivery delivery_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class IbvQp final : public QueuePair {
public:
  IbvQp(ibv_qp* qp, bool roce, uint8_t gid_index) : qp_(qp), roce_(roce), gid_index_(gid_index) {}
  ~IbvQp() override { ibv_destroy_qp(qp_); }
  uint32_t qp_num() const override { return qp_->qp_num; }
  /// The state the device holds, not the last one set: an error completion moves the QP to ERR on its own.
  QpState state() const override
  {
    ibv_qp_attr a{};
    ibv_qp_init_attr init{};
    if (ibv_query_qp(qp_, &a, IBV_QP_STATE, &init) != 0) return attr_.qp_state;
    return from_ibv_state(a.qp_state);
  }
  Status modify(const QpAttr& attr, QpAttrMask mask) override
  {
    ibv_qp_attr a{};
    int m = 0;
    if (has(mask, QpAttrMask::STATE)) a.qp_state = state_of(attr.qp_state), m |= IBV_QP_STATE;
    if (has(mask, QpAttrMask::ACCESS_FLAGS))
      a.qp_access_flags = unsigned(access_flags(attr.qp_access_flags)), m |= IBV_QP_ACCESS_FLAGS;
    if (has(mask, QpAttrMask::PKEY_INDEX)) a.pkey_index = attr.pkey_index, m |= IBV_QP_PKEY_INDEX;
    if (has(mask, QpAttrMask::PORT)) a.port_num = attr.port_num, m |= IBV_QP_PORT;
    if (has(mask, QpAttrMask::AV)) {
      a.ah_attr.dlid = attr.dest.lid;
      a.ah_attr.port_num = attr.port_num ? attr.port_num : 1;
      if (roce_) {
        a.ah_attr.is_global = 1;
        std::memcpy(a.ah_attr.grh.dgid.raw, attr.dest.gid.data(), 16);
        a.ah_attr.grh.sgid_index = gid_index_;
        a.ah_attr.grh.hop_limit = 64;
      }
      m |= IBV_QP_AV;
    }
    if (has(mask, QpAttrMask::PATH_MTU)) a.path_mtu = mtu_of(attr.path_mtu), m |= IBV_QP_PATH_MTU;
    if (has(mask, QpAttrMask::TIMEOUT)) a.timeout = attr.timeout, m |= IBV_QP_TIMEOUT;
    if (has(mask, QpAttrMask::RETRY_CNT)) a.retry_cnt = attr.retry_cnt, m |= IBV_QP_RETRY_CNT;
    if (has(mask, QpAttrMask::RNR_RETRY)) a.rnr_retry = attr.rnr_retry, m |= IBV_QP_RNR_RETRY;
    if (has(mask, QpAttrMask::RQ_PSN)) a.rq_psn = attr.rq_psn, m |= IBV_QP_RQ_PSN;
    if (has(mask, QpAttrMask::MAX_QP_RD_ATOMIC)) a.max_rd_atomic = attr.max_rd_atomic, m |= IBV_QP_MAX_QP_RD_ATOMIC;
    if (has(mask, QpAttrMask::MIN_RNR_TIMER)) a.min_rnr_timer = attr.min_rnr_timer, m |= IBV_QP_MIN_RNR_TIMER;
    if (has(mask, QpAttrMask::SQ_PSN)) a.sq_psn = attr.sq_psn, m |= IBV_QP_SQ_PSN;
    if (has(mask, QpAttrMask::MAX_DEST_RD_ATOMIC))
      a.max_dest_rd_atomic = attr.max_dest_rd_atomic, m |= IBV_QP_MAX_DEST_RD_ATOMIC;
    if (has(mask, QpAttrMask::DEST_QPN)) a.dest_qp_num = attr.dest_qp_num, m |= IBV_QP_DEST_QPN;
    if (int rc = ibv_modify_qp(qp_, &a, m); rc != 0)
      return Error::at("", "ibv_modify_qp", "a valid transition to " + std::string(to_string(attr.qp_state)),
                       std::strerror(rc));
    // Keep our copy of what was set (ibv_query_qp would do, at a cost).
    QpAttr next = attr_;
    if (has(mask, QpAttrMask::STATE)) next.qp_state = attr.qp_state;
    if (has(mask, QpAttrMask::AV)) next.dest = attr.dest;
    if (has(mask, QpAttrMask::DEST_QPN)) next.dest_qp_num = attr.dest_qp_num;
    attr_ = next;
    return ok_status();
  }
  Status post_send(const SendWr& wr) override
  {
    if (auto st = verbs::refuse_stand_in(wr); !st.ok()) return st;
    std::vector<ibv_sge> sges;
    for (const auto& s : wr.sg_list)
      sges.push_back({s.addr, s.length, s.lkey});
    ibv_send_wr w{};
    w.wr_id = wr.wr_id;
    w.sg_list = sges.empty() ? nullptr : sges.data();
    w.num_sge = int(sges.size());
    switch (wr.opcode) {
    case WrOpcode::SEND:
      w.opcode = IBV_WR_SEND;
      break;
    case WrOpcode::SEND_WITH_IMM:
      w.opcode = IBV_WR_SEND_WITH_IMM;
      break;
    case WrOpcode::RDMA_WRITE:
      w.opcode = IBV_WR_RDMA_WRITE;
      break;
    case WrOpcode::RDMA_WRITE_WITH_IMM:
      w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
      break;
    case WrOpcode::RDMA_READ:
      w.opcode = IBV_WR_RDMA_READ;
      break;
    }
    w.send_flags = (wr.signaled ? IBV_SEND_SIGNALED : 0) | (wr.inline_data ? IBV_SEND_INLINE : 0);
    w.imm_data = htonl(wr.imm_data);
    w.wr.rdma.remote_addr = wr.remote_addr;
    w.wr.rdma.rkey = wr.rkey;
    ibv_send_wr* bad = nullptr;
    if (int rc = ibv_post_send(qp_, &w, &bad); rc != 0)
      return Error::at("", "ibv_post_send", "an accepted work request", std::strerror(rc));
    return ok_status();
  }
  Status post_recv(const RecvWr& wr) override
  {
    std::vector<ibv_sge> sges;
    for (const auto& s : wr.sg_list)
      sges.push_back({s.addr, s.length, s.lkey});
    ibv_recv_wr w{};
    w.wr_id = wr.wr_id;
    w.sg_list = sges.empty() ? nullptr : sges.data();
    w.num_sge = int(sges.size());
    ibv_recv_wr* bad = nullptr;
    if (int rc = ibv_post_recv(qp_, &w, &bad); rc != 0)
      return Error::at("", "ibv_post_recv", "an accepted receive", std::strerror(rc));
    return ok_status();
  }
  QpAttr attributes() const override { return attr_; }

private:
  ibv_qp* qp_;
  bool roce_;
  uint8_t gid_index_;
  QpAttr attr_;
};

class IbvDeviceImpl final : public IbvDevice {
public:
  IbvDeviceImpl(Runtime& rt, ibv_context* ctx, ibv_pd* pd, ibv_port_attr port, uint8_t gid_index, ibv_gid gid,
                std::string name)
      : rt_(rt), ctx_(ctx), pd_(pd), port_(port), gid_index_(gid_index), gid_(gid), name_(std::move(name))
  {
  }
  ~IbvDeviceImpl() override
  {
    for (auto& [k, mr] : mrs_)
      ibv_dereg_mr(mr);
    ibv_dealloc_pd(pd_);
    ibv_close_device(ctx_);
  }
  DeviceAttr query() const override
  {
    DeviceAttr a;
    a.name = name_;
    a.link_layer = port_.link_layer == IBV_LINK_LAYER_ETHERNET ? LinkLayer::ETHERNET : LinkLayer::INFINIBAND;
    a.active_mtu = Mtu(128 << port_.active_mtu);
    a.max_inline_data = 64;
    return a;
  }
  PortAddress port_address() const override
  {
    PortAddress p;
    p.lid = port_.lid;
    std::memcpy(p.gid.data(), gid_.raw, 16);
    return p;
  }
  Result<MemoryRegion> reg_mr(uint64_t addr, uint64_t length, Access access) override
  {
    ibv_mr* mr = ibv_reg_mr(pd_, reinterpret_cast<void*>(addr), length, access_flags(access));
    if (!mr) return Error::at("", "ibv_reg_mr", "a registered region", std::strerror(errno));
    std::lock_guard<std::mutex> lock(mu_);
    mrs_[mr->lkey] = mr;
    MemoryRegion m;
    m.addr = addr;
    m.length = length;
    m.lkey = mr->lkey;
    m.rkey = mr->rkey;
    m.access = access;
    return m;
  }
  Status dereg_mr(const MemoryRegion& m) override
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = mrs_.find(m.lkey);
    if (it == mrs_.end()) return Error::at("", "dereg_mr", "a registered lkey", std::to_string(m.lkey));
    ibv_dereg_mr(it->second);
    mrs_.erase(it);
    return ok_status();
  }
  Result<std::unique_ptr<CompletionQueue>> create_cq(int min_entries) override
  {
    ibv_cq* cq = ibv_create_cq(ctx_, min_entries, nullptr, nullptr, 0);
    if (!cq) return ibv_error("ibv_create_cq", errno);
    return std::unique_ptr<CompletionQueue>(new IbvCq(rt_, cq));
  }
  Result<std::unique_ptr<QueuePair>> create_qp(const QpInitAttr& attr) override
  {
    ibv_qp_init_attr ia{};
    ia.send_cq = static_cast<IbvCq*>(attr.send_cq)->raw();
    ia.recv_cq = static_cast<IbvCq*>(attr.recv_cq)->raw();
    ia.qp_type = IBV_QPT_RC;
    ia.sq_sig_all = attr.sq_sig_all ? 1 : 0;
    ia.cap.max_send_wr = attr.cap.max_send_wr;
    ia.cap.max_recv_wr = attr.cap.max_recv_wr;
    ia.cap.max_send_sge = attr.cap.max_send_sge;
    ia.cap.max_recv_sge = attr.cap.max_recv_sge;
    ia.cap.max_inline_data = attr.cap.max_inline_data;
    ibv_qp* qp = ibv_create_qp(pd_, &ia);
    if (!qp) return ibv_error("ibv_create_qp", errno);
    return std::unique_ptr<QueuePair>(new IbvQp(qp, port_.link_layer == IBV_LINK_LAYER_ETHERNET, gid_index_));
  }

private:
  Runtime& rt_;
  ibv_context* ctx_;
  ibv_pd* pd_;
  ibv_port_attr port_;
  uint8_t gid_index_;
  ibv_gid gid_;
  std::string name_;
  std::mutex mu_;
  std::map<uint32_t, ibv_mr*> mrs_;
};

} // namespace

Result<std::vector<std::string>> IbvDevice::list()
{
  int n = 0;
  errno = 0;
  ibv_device** devs = ibv_get_device_list(&n);
  if (!devs)
    return Error::status("Unavailable",
                         std::string("no RDMA device: ibv_get_device_list: ") + std::strerror(errno ? errno : ENODEV));
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i)
    names.push_back(ibv_get_device_name(devs[i]));
  ibv_free_device_list(devs);
  if (names.empty()) return Error::status("Unavailable", "no RDMA device: ibv_get_device_list found none");
  return names;
}

Result<std::unique_ptr<IbvDevice>> IbvDevice::open(Runtime& rt, const std::string& name)
{
  int n = 0;
  errno = 0;
  ibv_device** devs = ibv_get_device_list(&n);
  if (!devs || n == 0) {
    const int err = errno ? errno : ENODEV;
    if (devs) ibv_free_device_list(devs);
    return Error::status("Unavailable", std::string("no RDMA device: ibv_get_device_list: ") + std::strerror(err));
  }
  ibv_device* dev = nullptr;
  for (int i = 0; i < n; ++i)
    if (name.empty() || name == ibv_get_device_name(devs[i])) dev = devs[i], i = n;
  if (!dev) {
    ibv_free_device_list(devs);
    return Error::at("", "device", "an RDMA device named " + name, "none");
  }
  const std::string dev_name = ibv_get_device_name(dev);
  ibv_context* ctx = ibv_open_device(dev);
  ibv_free_device_list(devs);
  if (!ctx) return ibv_error("ibv_open_device " + dev_name, errno);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  if (!pd) {
    ibv_close_device(ctx);
    return ibv_error("ibv_alloc_pd", errno);
  }
  ibv_port_attr port{};
  if (int rc = ibv_query_port(ctx, 1, &port); rc != 0) {
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    return ibv_error("ibv_query_port", rc);
  }
  // RoCE: the first non-zero GID (rxe lists its IPv6 link-local first); InfiniBand: GID 0, routing by LID.
  ibv_gid gid{};
  uint8_t gid_index = 0;
  if (port.link_layer == IBV_LINK_LAYER_ETHERNET)
    for (int i = 0; i < port.gid_tbl_len; ++i) {
      ibv_gid g{};
      if (ibv_query_gid(ctx, 1, i, &g) == 0 && (g.global.subnet_prefix || g.global.interface_id)) {
        gid = g;
        gid_index = uint8_t(i);
        break;
      }
    }
  return std::unique_ptr<IbvDevice>(new IbvDeviceImpl(rt, ctx, pd, port, gid_index, gid, dev_name));
}

} // namespace tp::emu
