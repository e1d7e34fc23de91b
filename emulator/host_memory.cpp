// Real memory for emulated processes (see host_memory.hpp).
#include "emulator/host_memory.hpp"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace tp::emu {

namespace {

/// Emulated processes keep the memory they free, as TF's BFC allocator and gRPC's slice pools do: glibc otherwise
/// maps every block above 32 MiB afresh and unmaps it on free, so each large tensor, staging buffer or message
/// would pay a page fault per 4 KiB page on first touch (most of a large transfer's time on this kind of machine,
/// and a cost no real allocator in the tensor path pays in steady state). Process-wide, set once.
void keep_freed_memory()
{
  static std::once_flag once;
  std::call_once(once, [] {
    mallopt(M_ARENA_MAX, 1); // one heap (sbrk) for all threads: thread arenas unmap their heaps when empty
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, -1); // never give the heap back
    mallopt(M_TOP_PAD, 64 << 20);
  });
}

} // namespace

HostMemory::HostMemory(int numa_nodes, int gpus) : numa_nodes_(numa_nodes), gpus_(gpus)
{
  keep_freed_memory();
}

HostMemory::HostMemory(int numa_nodes, int gpus, std::unique_ptr<SharedArena> arena)
    : numa_nodes_(numa_nodes), gpus_(gpus), arena_(std::move(arena))
{
  keep_freed_memory();
}

HostMemory::~HostMemory()
{
  for (auto& [addr, b] : live_)
    release(b.data);
}

Result<Buffer> HostMemory::allocate(uint64_t size, const AllocAttr& attr)
{
  const Location loc = attr.location;
  if (loc.is_host() && (loc.index < 0 || loc.index >= numa_nodes_))
    return Error::at("", "allocate", "a NUMA node below " + std::to_string(numa_nodes_), loc.to_string());
  if (loc.is_gpu() && (loc.index < 0 || loc.index >= gpus_))
    return Error::at("", "allocate", std::to_string(gpus_) + " emulated GPU(s)", loc.to_string());
  // 64-byte alignment (cache lines); at least one byte so that a zero-size buffer has a unique address. Not
  // zeroed: like the allocators of the tensor path, a reused block holds what it held.
  const uint64_t n = (std::max<uint64_t>(size, 1) + 63) / 64 * 64;
  void* p = arena_ ? static_cast<void*>(arena_->allocate(n)) : std::aligned_alloc(64, n);
  if (!p)
    return Error::at("", "allocate", std::to_string(size) + " bytes of host memory",
                     arena_ ? "the shared arena is full (" + std::to_string(arena_->capacity()) + " bytes)"
                            : std::string("out of memory"));
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
  release(it->second.data);
  live_.erase(it);
}

void HostMemory::release(uint8_t* p)
{
  if (arena_)
    arena_->free(p);
  else
    std::free(p);
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

bool pages_mapped(uint64_t addr, uint64_t len)
{
  const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  const uint64_t first = addr / page * page;
  const uint64_t end = addr + std::max<uint64_t>(len, 1);
  if (end < addr) return false;
  std::vector<unsigned char> residency((end - first + page - 1) / page);
  return ::mincore(reinterpret_cast<void*>(first), end - first, residency.data()) == 0; // ENOMEM: a page unmapped
}

} // namespace tp::emu
