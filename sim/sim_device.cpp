// The simulated RDMA NIC (see sim/sim_device.hpp): the device (memory regions, CQs, QPs, the NIC-wide message rate,
// memory watches, fault injection's forced errors and process death), its completion queues and the queue pair
// facade. The RC queue pair itself: sim/rc_qp.hpp (requester sim/rc_requester.cpp, responder sim/rc_responder.cpp,
// loss model sim/rc_loss.cpp). Formulas: docs/model.md.
#include "sim/sim_device.hpp"
#include "sim/rc_qp.hpp"
#include "sim/sim_context.hpp"
#include "sim/sim_memory.hpp"

namespace tp::sim {

// ---------------------------------------------------------------------------------------------------------
// Completion queue

void SimCq::set_handler(CompletionHandler handler)
{
  st_->handler = std::move(handler);
  while (!st_->backlog.empty()) {
    push(st_->backlog.front());
    st_->backlog.pop_front();
  }
}

void SimCq::push(const WorkCompletion& wc)
{
  if (!st_->handler) {
    st_->backlog.push_back(wc);
    return;
  }
  std::weak_ptr<State> weak = st_;
  reactor_.post([weak, wc] {
    if (auto s = weak.lock(); s && s->handler) s->handler(wc);
  });
}

// ---------------------------------------------------------------------------------------------------------
// Queue pair facade

class SimQueuePair final : public QueuePair {
public:
  SimQueuePair(SimDevice& dev, std::shared_ptr<QpCore> core) : dev_(dev), core_(std::move(core)) {}
  ~SimQueuePair() override { dev_.unregister_qp(core_->qpn()); }
  uint32_t qp_num() const override { return core_->qpn(); }
  QpState state() const override { return core_->attr().qp_state; }
  Status modify(const QpAttr& attr, QpAttrMask mask) override { return core_->modify(attr, mask); }
  Status post_send(const SendWr& wr) override { return core_->post_send(wr); }
  Status post_recv(const RecvWr& wr) override { return core_->post_recv(wr); }
  QpAttr attributes() const override { return core_->attr(); }

private:
  SimDevice& dev_;
  std::shared_ptr<QpCore> core_;
};

// ---------------------------------------------------------------------------------------------------------
// Device

SimDevice::SimDevice(SimContext& ctx, size_t machine, int nic, SimMemory& memory, int cpu_socket, std::string owner)
    : ctx_(ctx), machine_(machine), nic_(nic), memory_(memory), cpu_socket_(cpu_socket), owner_(std::move(owner)),
      lid_(ctx.next_lid++), mrs_(0x100u + 0x40u * lid_)
{
  ctx_.devices_by_lid[lid_] = this;
}

SimDevice::~SimDevice()
{
  ctx_.devices_by_lid.erase(lid_);
}

DeviceAttr SimDevice::query() const
{
  const auto& spec = ctx_.platform->nic(machine_, nic_);
  DeviceAttr a;
  a.name = "sim_" + spec.nic.name;
  a.link_layer = spec.nic.link_layer == models::LinkLayerKind::INFINIBAND ? LinkLayer::INFINIBAND : LinkLayer::ETHERNET;
  a.active_mtu = Mtu(spec.nic.mtu);
  a.port_rate_bps = spec.nic.line_rate * 8;
  a.max_qp_rd_atom = 16;
  a.max_inline_data = spec.nic.max_inline_data;
  return a;
}

PortAddress SimDevice::port_address() const
{
  PortAddress p;
  p.lid = lid_;
  // GID: fe80::<lid> style, enough to be unique within the simulation.
  p.gid[0] = 0xfe;
  p.gid[1] = 0x80;
  p.gid[14] = uint8_t(lid_ >> 8);
  p.gid[15] = uint8_t(lid_);
  return p;
}

Result<MemoryRegion> SimDevice::reg_mr(uint64_t addr, uint64_t length, Access access)
{
  if (!ctx_.platform->nic(machine_, nic_).nic.rdma_capable())
    return Error::at("", "reg_mr", "an RDMA-capable NIC",
                     ctx_.platform->nic(machine_, nic_).nic.name + " (Ethernet only)");
  if (auto st = check_registration(memory_, addr, length, access); !st.ok()) return st.error();
  return mrs_.add(addr, length, access);
}

Status SimDevice::dereg_mr(const MemoryRegion& mr)
{
  if (!mrs_.remove(mr.lkey))
    return Error::at("", "dereg_mr", "a registered memory region", "unknown lkey " + std::to_string(mr.lkey));
  return ok_status();
}

Result<std::unique_ptr<CompletionQueue>> SimDevice::create_cq(int min_entries)
{
  if (min_entries <= 0) return Error::at("", "create_cq", "a positive number of entries", std::to_string(min_entries));
  return std::unique_ptr<CompletionQueue>(new SimCq(ctx_.reactor));
}

Result<std::unique_ptr<QueuePair>> SimDevice::create_qp(const QpInitAttr& attr)
{
  if (!ctx_.platform->nic(machine_, nic_).nic.rdma_capable())
    return Error::at("", "create_qp", "an RDMA-capable NIC",
                     ctx_.platform->nic(machine_, nic_).nic.name + " (Ethernet only)");
  if (!attr.send_cq || !attr.recv_cq || !dynamic_cast<SimCq*>(attr.send_cq) || !dynamic_cast<SimCq*>(attr.recv_cq))
    return Error::at("", "create_qp", "send and receive CQs created by this device", "a missing or foreign CQ");
  const auto& nic = ctx_.platform->nic(machine_, nic_).nic;
  if (attr.cap.max_inline_data > nic.max_inline_data)
    return Error::at("", "create_qp.cap.max_inline_data", "at most " + std::to_string(nic.max_inline_data),
                     std::to_string(attr.cap.max_inline_data));
  const uint32_t qpn = next_qpn_++;
  auto core = std::make_shared<QpCore>(*this, qpn, attr);
  qps_[qpn] = core.get();
  return std::unique_ptr<QueuePair>(new SimQueuePair(*this, core));
}

QpCore* SimDevice::find_qp(uint32_t qpn) const
{
  auto it = qps_.find(qpn);
  return it == qps_.end() ? nullptr : it->second;
}

void SimDevice::unregister_qp(uint32_t qpn)
{
  qps_.erase(qpn);
}

size_t SimDevice::force_error_all_qps()
{
  size_t n = 0;
  for (auto& [qpn, core] : qps_) {
    if (core->attr().qp_state == QpState::ERR) continue;
    QpAttr a;
    a.qp_state = QpState::ERR;
    if (core->modify(a, QpAttrMask::STATE).ok()) ++n;
  }
  return n;
}

void SimDevice::kill()
{
  dead_ = true;
  for (auto& [qpn, core] : qps_)
    core->kill();
}

double SimDevice::reserve_message_slot(double t, uint32_t messages)
{
  const double rate = ctx_.platform->nic(machine_, nic_).nic.max_message_rate;
  if (rate <= 0) return t;
  const double start = std::max(t, message_slot_free_);
  message_slot_free_ = start + double(messages) / rate;
  return start;
}

Status SimDevice::watch_memory(uint64_t addr, uint64_t len, std::function<void()> on_write)
{
  if (!memory_.find(addr))
    return Error::at("", "watch_memory", "an address allocated by this process", std::to_string(addr));
  watches_.push_back(Watch{addr, len, std::move(on_write)});
  return ok_status();
}

void SimDevice::notify_write(uint64_t addr, uint64_t len)
{
  if (dead_) return;
  for (size_t i = 0; i < watches_.size();) {
    const Watch& w = watches_[i];
    if (addr < w.addr + std::max<uint64_t>(w.len, 1) && w.addr < addr + len) {
      auto fn = std::move(watches_[i].fn);
      watches_.erase(watches_.begin() + long(i));
      ctx_.reactor.post(std::move(fn));
    } else {
      ++i;
    }
  }
}

} // namespace tp::sim
