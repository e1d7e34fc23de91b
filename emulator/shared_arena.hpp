// Memory that other processes on this host can map: one memfd per emulated process, sized up front (pages are
// allocated by the kernel on first touch and kept), carved up by a first-fit allocator with coalescing. The software
// verbs device passes the memfd to a peer process over a Unix socket (SCM_RIGHTS); the peer maps it and moves bytes
// into and out of registered regions with memcpy, as a NIC's DMA engine would. Tests: tests/emulator/*.
#pragma once

#include "core/common/result.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace tp::emu {

class SharedArena {
public:
  /// A memfd of `capacity` bytes mapped shared into this process.
  static Result<std::unique_ptr<SharedArena>> create(uint64_t capacity, const std::string& name);
  ~SharedArena();
  SharedArena(const SharedArena&) = delete;
  SharedArena& operator=(const SharedArena&) = delete;

  int fd() const { return fd_; }
  uint8_t* base() const { return base_; }
  uint64_t capacity() const { return capacity_; }
  bool contains(uint64_t addr, uint64_t len) const
  {
    const uint64_t b = reinterpret_cast<uint64_t>(base_);
    return addr >= b && len <= capacity_ && addr - b <= capacity_ - len;
  }
  /// `size` bytes aligned to 64; nullptr when the arena is full.
  uint8_t* allocate(uint64_t size);
  void free(uint8_t* p);
  uint64_t used() const;

private:
  SharedArena(int fd, uint8_t* base, uint64_t capacity);
  int fd_;
  uint8_t* base_;
  uint64_t capacity_;
  mutable std::mutex mu_;
  std::map<uint64_t, uint64_t> free_; ///< offset -> length
  std::map<uint64_t, uint64_t> used_; ///< offset -> length
};

/// A peer process's arena mapped into this one: translates the peer's addresses to local pointers.
class PeerArena {
public:
  /// Map `fd` (received from the peer; closed here) whose memory the peer sees at `remote_base`, between guard pages.
  /// The memfd must hold `capacity` bytes and be sealed against shrinking (SharedArena::create seals it).
  static Result<std::unique_ptr<PeerArena>> map(int fd, uint64_t remote_base, uint64_t capacity);
  ~PeerArena();
  /// Local pointer for the peer's [addr, addr+len), or nullptr when it is not inside the peer's arena.
  uint8_t* translate(uint64_t addr, uint64_t len) const
  {
    if (addr < remote_base_ || len > capacity_ || addr - remote_base_ > capacity_ - len) return nullptr;
    return local_ + (addr - remote_base_);
  }

private:
  PeerArena(uint8_t* mapping, uint64_t mapping_bytes, uint8_t* local, uint64_t remote_base, uint64_t capacity)
      : mapping_(mapping), mapping_bytes_(mapping_bytes), local_(local), remote_base_(remote_base), capacity_(capacity)
  {
  }
  uint8_t* mapping_; ///< the reservation: a guard page, the peer's memory, a guard page
  uint64_t mapping_bytes_;
  uint8_t* local_;
  uint64_t remote_base_, capacity_;
};

} // namespace tp::emu
