// Real memory for emulated processes (see host_memory.hpp).
#include "emulator/host_memory.hpp"

#include <cstdlib>
#include <cstring>

namespace tp::emu {

HostMemory::~HostMemory()
{
  for (auto& [addr, b] : live_)
    std::free(b.data);
}

Result<Buffer> HostMemory::allocate(uint64_t size, const AllocAttr& attr)
{
  const Location loc = attr.location;
  if (loc.is_host() && (loc.index < 0 || loc.index >= numa_nodes_))
    return Error::at("", "allocate", "a NUMA node below " + std::to_string(numa_nodes_), loc.to_string());
  if (loc.is_gpu() && (loc.index < 0 || loc.index >= gpus_))
    return Error::at("", "allocate", std::to_string(gpus_) + " emulated GPU(s)", loc.to_string());
  // 64-byte alignment (cache lines); at least one byte so that a zero-size buffer has a unique address.
  const uint64_t n = (std::max<uint64_t>(size, 1) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, n);
  if (!p) return Error::at("", "allocate", std::to_string(size) + " bytes of host memory", "out of memory");
  std::memset(p, 0, n);
  Buffer b;
  b.addr = reinterpret_cast<uint64_t>(p);
  b.size = size;
  b.location = loc;
  b.host_kind = attr.host_kind;
  b.data = static_cast<uint8_t*>(p);
  std::lock_guard<std::mutex> lock(mu_);
  live_[b.addr] = b;
  return b;
}

void HostMemory::free(const Buffer& buffer)
{
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(buffer.addr);
  if (it == live_.end()) return;
  std::free(it->second.data);
  live_.erase(it);
}

uint8_t* HostMemory::resolve(uint64_t addr, uint64_t len)
{
  auto b = find(addr);
  if (!b || addr + len > b->addr + std::max<uint64_t>(b->size, 1)) return nullptr;
  return b->data + (addr - b->addr);
}

std::optional<Buffer> HostMemory::find(uint64_t addr) const
{
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.upper_bound(addr);
  if (it == live_.begin()) return std::nullopt;
  --it;
  if (addr >= it->second.addr + std::max<uint64_t>(it->second.size, 1)) return std::nullopt;
  return it->second;
}

uint64_t HostMemory::allocated_bytes() const
{
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  for (const auto& [a, b] : live_)
    n += b.size;
  return n;
}

} // namespace tp::emu
