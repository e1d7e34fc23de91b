// MR key allocation and access checks.
#include "core/device/mr_table.hpp"

namespace tp::verbs {

MemoryRegion MrTable::add(uint64_t addr, uint64_t length, Access access)
{
  MemoryRegion mr;
  mr.addr = addr;
  mr.length = length;
  mr.access = access;
  // Keys: index in the high bits plus a varying low byte, like mlx keys; lkey == rkey as on mlx devices.
  const uint32_t index = next_key_++;
  const uint32_t key = (index << 8) | ((index * 0x9Du) & 0xFFu);
  mr.lkey = key;
  mr.rkey = key;
  by_lkey_[mr.lkey] = mr;
  rkey_to_lkey_[mr.rkey] = mr.lkey;
  return mr;
}

bool MrTable::remove(uint32_t lkey)
{
  auto it = by_lkey_.find(lkey);
  if (it == by_lkey_.end()) return false;
  rkey_to_lkey_.erase(it->second.rkey);
  by_lkey_.erase(it);
  return true;
}

std::optional<MemoryRegion> MrTable::by_lkey(uint32_t lkey) const
{
  auto it = by_lkey_.find(lkey);
  if (it == by_lkey_.end()) return std::nullopt;
  return it->second;
}

WcStatus MrTable::check_local(const Sge& sge, bool need_write) const
{
  if (sge.length == 0) return WcStatus::SUCCESS; // zero-length SGEs are not checked
  auto it = by_lkey_.find(sge.lkey);
  if (it == by_lkey_.end() || !inside(it->second, sge.addr, sge.length)) return WcStatus::LOC_PROT_ERR;
  if (need_write && !has(it->second.access, Access::LOCAL_WRITE)) return WcStatus::LOC_PROT_ERR;
  return WcStatus::SUCCESS;
}

WcStatus MrTable::check_remote(uint32_t rkey, uint64_t addr, uint64_t len, Access need) const
{
  if (len == 0) return WcStatus::SUCCESS; // zero-length RDMA does not check the rkey (IB spec 9.7.5.1.4)
  auto r = rkey_to_lkey_.find(rkey);
  if (r == rkey_to_lkey_.end()) return WcStatus::REM_ACCESS_ERR;
  const MemoryRegion& mr = by_lkey_.at(r->second);
  if (!inside(mr, addr, len) || !has(mr.access, need)) return WcStatus::REM_ACCESS_ERR;
  return WcStatus::SUCCESS;
}

} // namespace tp::verbs
