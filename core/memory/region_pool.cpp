// First-fit chunking with coalescing frees.
#include "core/memory/region_pool.hpp"

namespace tp::memory {

namespace {
constexpr uint64_t CHUNK_ALIGN = 256;
constexpr uint64_t REGION_ALIGN = 2ull << 20;
uint64_t round_up(uint64_t v, uint64_t a)
{
  return (v + a - 1) / a * a;
}
} // namespace

Result<Buffer> RegionPool::allocate(uint64_t bytes)
{
  const uint64_t need = round_up(std::max<uint64_t>(bytes, 1), CHUNK_ALIGN);
  for (auto& r : regions_)
    for (auto it = r.free.begin(); it != r.free.end(); ++it)
      if (it->second >= need) {
        const uint64_t off = it->first;
        const uint64_t left = it->second - need;
        r.free.erase(it);
        if (left) r.free[off + need] = left;
        return r.buffer.slice(off, bytes);
      }
  // Grow: the next region doubles; an oversized request gets a region of its own size (rounded to 2 MiB).
  uint64_t size = next_region_;
  while (size < need)
    size *= 2;
  size = round_up(size, REGION_ALIGN);
  auto b = space_.allocate(size, attr_);
  if (!b.ok()) return b.error();
  next_region_ = size * 2;
  Region r;
  r.buffer = b.value();
  if (size > need) r.free[need] = size - need;
  regions_.push_back(std::move(r));
  if (hook_) hook_(regions_.size() - 1, regions_.back().buffer);
  return regions_.back().buffer.slice(0, bytes);
}

int RegionPool::region_of(uint64_t addr) const
{
  for (size_t i = 0; i < regions_.size(); ++i) {
    const Buffer& b = regions_[i].buffer;
    if (addr >= b.addr && addr < b.addr + b.size) return int(i);
  }
  return -1;
}

bool RegionPool::free(const Buffer& chunk)
{
  const int ri = region_of(chunk.addr);
  if (ri < 0) return false;
  Region& r = regions_[size_t(ri)];
  uint64_t off = chunk.addr - r.buffer.addr;
  uint64_t len = round_up(std::max<uint64_t>(chunk.size, 1), CHUNK_ALIGN);
  // coalesce with the following and the preceding free chunks
  auto next = r.free.find(off + len);
  if (next != r.free.end()) {
    len += next->second;
    r.free.erase(next);
  }
  auto prev = r.free.lower_bound(off);
  if (prev != r.free.begin()) {
    --prev;
    if (prev->first + prev->second == off) {
      off = prev->first;
      len += prev->second;
      r.free.erase(prev);
    }
  }
  r.free[off] = len;
  return true;
}

uint64_t RegionPool::reserved_bytes() const
{
  uint64_t n = 0;
  for (const auto& r : regions_)
    n += r.buffer.size;
  return n;
}

} // namespace tp::memory
