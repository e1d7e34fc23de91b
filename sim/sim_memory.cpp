// Bump allocation of virtual addresses (never reused, so a stale address is never someone else's buffer),
// 4 KiB aligned, with per-location capacity accounting.
#include "sim/sim_memory.hpp"

#include <cstring>

namespace tp::sim {

namespace {
constexpr uint64_t SPACE_STRIDE = 1ull << 40; // 1 TiB of address space per location
constexpr uint64_t ALIGN = 4096;
} // namespace

SimMemory::SimMemory(std::string owner, std::vector<Region> regions, bool materialize_default)
    : owner_(std::move(owner)), materialize_default_(materialize_default)
{
  uint64_t base = SPACE_STRIDE; // never hand out address 0
  for (const auto& r : regions) {
    Space s;
    s.region = r;
    s.base = base;
    s.next = base;
    spaces_.push_back(s);
    base += SPACE_STRIDE;
  }
}

SimMemory::Space* SimMemory::space_for(Location loc)
{
  for (auto& s : spaces_)
    if (s.region.location == loc) return &s;
  return nullptr;
}

const SimMemory::Space* SimMemory::space_for(Location loc) const
{
  for (const auto& s : spaces_)
    if (s.region.location == loc) return &s;
  return nullptr;
}

Result<Buffer> SimMemory::allocate(uint64_t size, const AllocAttr& attr)
{
  Space* s = space_for(attr.location);
  if (s == nullptr) return Error::at(owner_, "allocate", "a location of this host", attr.location.to_string());
  if (s->used + double(size) > s->region.capacity)
    return Error::at(owner_, "allocate " + attr.location.to_string(),
                     "at most " + std::to_string(uint64_t(s->region.capacity - s->used)) + " more bytes",
                     std::to_string(size) + " bytes");
  const uint64_t span = size == 0 ? ALIGN : (size + ALIGN - 1) / ALIGN * ALIGN;
  if (s->next + span - s->base > SPACE_STRIDE)
    return Error::at(owner_, "allocate " + attr.location.to_string(), "address space left", "exhausted");
  Allocation a;
  a.buffer.addr = s->next;
  a.buffer.size = size;
  a.buffer.location = attr.location;
  a.buffer.host_kind = attr.host_kind;
  const bool mat = attr.materialize.value_or(materialize_default_);
  const uint64_t backed = mat ? size : std::min<uint64_t>(attr.materialize_prefix, size);
  if (backed > 0) {
    a.bytes.reset(new (std::nothrow) uint8_t[backed]);
    if (!a.bytes)
      return Error::at(owner_, "allocate (materialized)", "host memory for " + std::to_string(backed) + " bytes",
                       "allocation failure");
    std::memset(a.bytes.get(), 0, backed);
    a.buffer.data = a.bytes.get();
    a.backed = backed;
    ++backed_allocations_;
  }
  s->next += span;
  s->used += double(size);
  Buffer b = a.buffer;
  allocations_.emplace(b.addr, std::move(a));
  return b;
}

void SimMemory::free(const Buffer& buffer)
{
  auto it = allocations_.find(buffer.addr);
  if (it == allocations_.end()) return;
  if (Space* s = space_for(it->second.buffer.location)) s->used -= double(it->second.buffer.size);
  if (it->second.bytes) --backed_allocations_;
  for (const Allocation*& found : last_found_)
    if (found == &it->second) found = nullptr;
  allocations_.erase(it);
}

const SimMemory::Allocation* SimMemory::containing(uint64_t addr) const
{
  // An allocation of 0 bytes holds its own address.
  auto holds = [addr](const Buffer& b) { return addr >= b.addr && addr - b.addr < std::max<uint64_t>(b.size, 1); };
  for (const Allocation* found : last_found_)
    if (found && holds(found->buffer)) return found;
  auto it = allocations_.upper_bound(addr);
  if (it == allocations_.begin()) return nullptr;
  --it;
  if (!holds(it->second.buffer)) return nullptr;
  last_found_[next_replaced_] = &it->second;
  next_replaced_ = (next_replaced_ + 1) % last_found_.size();
  return &it->second;
}

std::optional<Buffer> SimMemory::find(uint64_t addr) const
{
  const Allocation* a = containing(addr);
  if (!a) return std::nullopt;
  return a->buffer;
}

uint8_t* SimMemory::resolve(uint64_t addr, uint64_t len)
{
  if (len == 0) return allocation_data(addr);
  return backed_length(addr, len) == len ? allocation_data(addr) : nullptr;
}

uint8_t* SimMemory::allocation_data(uint64_t addr)
{
  if (backed_allocations_ == 0) return nullptr;
  const Allocation* a = containing(addr);
  if (!a || !a->bytes || addr - a->buffer.addr >= a->backed) return nullptr;
  return a->bytes.get() + (addr - a->buffer.addr);
}

uint64_t SimMemory::backed_length(uint64_t addr, uint64_t len)
{
  if (backed_allocations_ == 0) return 0;
  const Allocation* a = containing(addr);
  if (!a || !a->bytes) return 0;
  const uint64_t off = addr - a->buffer.addr;
  if (off >= a->backed) return 0;
  return std::min(len, a->backed - off);
}

double SimMemory::used(Location loc) const
{
  const Space* s = space_for(loc);
  return s ? s->used : 0;
}

} // namespace tp::sim
