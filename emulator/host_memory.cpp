// Real memory for emulated processes (see host_memory.hpp).
#include "emulator/host_memory.hpp"

#include "core/common/mimalloc_options.hpp"

#include <dlfcn.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace tp::emu {

namespace {

/// mimalloc (the executables' malloc where the build links it, CMakeLists.txt) maps each block above its segment size
/// afresh and unmaps it on free, as glibc does above 32 MiB; it keeps freed memory only in an arena reserved up front
/// with decommits off (measured, mimalloc 2.0.9: 50 x a 64 MiB block 820 k page faults, 16 k so). Its functions are
/// looked up at run time: sanitizer builds and builds without mimalloc run on glibc.
void keep_freed_memory_in_mimalloc()
{
  using Reserve = int (*)(size_t size, bool commit, bool allow_large);
  // The option's number is 2.0's (Debian 12's 2.0.9): 2.1 renumbered them and purges differently; other versions are
  // left as they are (page faults on large blocks again, results unchanged).
  const MimallocOptionSet option_set = mimalloc20_option_set();
  auto reserve = reinterpret_cast<Reserve>(dlsym(RTLD_DEFAULT, "mi_reserve_os_memory"));
  if (!option_set || !reserve) return;
  constexpr int MI_OPTION_ALLOW_DECOMMIT = 22; // mimalloc.h's mi_option_allow_decommit (2.0)
  option_set(MI_OPTION_ALLOW_DECOMMIT, 0);
  // Under strict overcommit (mode 2) a reserve counts against the commit limit: none then.
  if (FILE* f = std::fopen("/proc/sys/vm/overcommit_memory", "r")) {
    const int mode = std::fgetc(f);
    std::fclose(f);
    if (mode == '2') return;
  }
  // Address space, not memory: pages are backed as they are touched. Half the machine's memory, at most 8 GiB (the
  // emulator's largest working sets are a few GiB); a refused reserve leaves blocks to the OS (still correct).
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) (void)reserve(std::min(size_t(pages) * size_t(page) / 2, size_t(8) << 30), true, false);
}

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
    keep_freed_memory_in_mimalloc();
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
