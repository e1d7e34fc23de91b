// Software verbs device (see soft_device.hpp): memory registration, CQ and QP creation, memory watches. The queue
// pair is soft_qp.cpp, the fabric between devices soft_fabric.cpp.
#include "emulator/soft_device.hpp"

#include "emulator/host_memory.hpp"
#include "emulator/soft_qp.hpp"

#include <stdexcept>

namespace tp::emu {

using namespace verbs;

// ---------------------------------------------------------------- device

SoftDevice::SoftDevice(SoftFabric& fabric, Runtime& rt, std::string name)
    : fabric_(fabric), rt_(rt), name_(std::move(name)), lid_(fabric_.attach(this)), mrs_(0x1000u + 0x10000u * lid_)
{
}

SoftDevice::~SoftDevice()
{
  fabric_.detach(lid_);
}

DeviceAttr SoftDevice::query() const
{
  DeviceAttr a;
  a.name = name_;
  a.link_layer = LinkLayer::INFINIBAND;
  a.active_mtu = Mtu::MTU_4096;
  a.port_rate_bps = 0; // a memcpy, not a port
  a.max_inline_data = 256;
  return a;
}

PortAddress SoftDevice::port_address() const
{
  PortAddress p;
  p.lid = lid_;
  return p;
}

Result<MemoryRegion> SoftDevice::reg_mr(uint64_t addr, uint64_t length, Access access)
{
  if (auto st = check_registration_access(access); !st.ok()) return st.error();
  if (!pages_mapped(addr, length))
    return Error::at("", "reg_mr", "mapped memory (ibv_reg_mr EFAULT)", std::to_string(addr));
  std::lock_guard<std::mutex> lock(fabric_.state());
  return mrs_.add(addr, length, access);
}

Status SoftDevice::dereg_mr(const MemoryRegion& mr)
{
  std::lock_guard<std::mutex> lock(fabric_.state());
  if (!mrs_.remove(mr.lkey)) return Error::at("", "dereg_mr", "a registered lkey", std::to_string(mr.lkey));
  return ok_status();
}

Result<std::unique_ptr<CompletionQueue>> SoftDevice::create_cq(int min_entries)
{
  if (min_entries < 1) return Error::at("", "create_cq", "at least one entry", std::to_string(min_entries));
  return std::unique_ptr<CompletionQueue>(new SoftCq(rt_));
}

Result<std::unique_ptr<QueuePair>> SoftDevice::create_qp(const QpInitAttr& attr)
{
  if (!attr.send_cq || !attr.recv_cq) return Error::at("", "create_qp", "send and receive CQs", "null");
  // As ibv_create_qp: more SGEs per WR than the device has is EINVAL (and keeps every request within the process
  // link's 64-SGE frame, process_wire.hpp).
  for (const uint32_t sges : {attr.cap.max_send_sge, attr.cap.max_recv_sge})
    if (sges > query().max_sge)
      return Error::at("", "create_qp", "max_send_sge and max_recv_sge <= " + std::to_string(query().max_sge),
                       std::to_string(sges));
  if (attr.cap.max_inline_data > query().max_inline_data)
    return Error::at("", "create_qp", "max_inline_data <= " + std::to_string(query().max_inline_data),
                     std::to_string(attr.cap.max_inline_data));
  auto core = std::make_shared<QpCore>(*this, attr);
  std::lock_guard<std::mutex> lock(fabric_.state());
  core->qpn = register_qp(core.get());
  return make_soft_qp(std::move(core));
}

Status SoftDevice::watch_memory(uint64_t addr, uint64_t len, std::function<void()> on_write)
{
  std::lock_guard<std::mutex> lock(fabric_.state());
  watches_.push_back({addr, len, std::move(on_write)});
  return ok_status();
}

QpCore* SoftDevice::qp(uint32_t qpn) const
{
  auto it = qps_.find(qpn);
  return it == qps_.end() ? nullptr : it->second;
}

uint32_t SoftDevice::register_qp(QpCore* q)
{
  const uint32_t n = next_qpn_++;
  qps_[n] = q;
  return n;
}

void SoftDevice::unregister_qp(uint32_t qpn)
{
  qps_.erase(qpn);
}

void SoftDevice::landed(uint64_t addr, uint64_t len)
{
  for (auto it = watches_.begin(); it != watches_.end();) {
    if (addr < it->addr + it->len && it->addr < addr + len) {
      rt_.post(std::move(it->f));
      it = watches_.erase(it);
    } else {
      ++it;
    }
  }
}

void SoftDevice::for_each_qp(const std::function<void(QpCore&)>& f)
{
  for (auto& [n, q] : qps_)
    f(*q);
}

} // namespace tp::emu
