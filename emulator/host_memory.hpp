// MemorySpace of an emulated process: real memory. Every buffer is backed by a real allocation whose address
// is the buffer's address, so a software device can move bytes with memcpy. GPU locations are emulated in host
// RAM (a location tag only). With a SharedArena the memory is a memfd other processes can map.: the emulator runs
// GPU-placed tensors through the same transports, not on GPUs. Thread safe (the software device resolves addresses from
// its own thread). Tests: tests/emulator/*.
#pragma once

#include "core/memory/buffer.hpp"
#include "emulator/shared_arena.hpp"

#include <map>
#include <memory>
#include <mutex>

namespace tp::emu {

class HostMemory final : public MemorySpace {
public:
  /// `gpus`: how many emulated GPU locations exist (a GPU location beyond them is an error, as on a host).
  explicit HostMemory(int numa_nodes = 1, int gpus = 0);
  /// Every buffer from `arena` (memory a peer process can map: the software device between OS processes).
  HostMemory(int numa_nodes, int gpus, std::unique_ptr<SharedArena> arena);
  SharedArena* arena() const { return arena_.get(); }
  ~HostMemory() override;
  Result<Buffer> allocate(uint64_t size, const AllocAttr& attr) override;
  void free(const Buffer& buffer) override;
  uint8_t* resolve(uint64_t addr, uint64_t len) override;
  std::optional<Buffer> find(uint64_t addr) const override;
  bool materialize_by_default() const override { return true; }
  uint64_t allocated_bytes() const;

private:
  void release(uint8_t* p);
  int numa_nodes_, gpus_;
  std::unique_ptr<SharedArena> arena_;
  mutable std::mutex mu_;
  std::map<uint64_t, Buffer> live_; ///< by address
};

/// Whether every page of [addr, addr+len) (at least the one at addr) is mapped in this OS process: what
/// ibv_reg_mr's pinning needs (EFAULT otherwise), without knowing where an allocation ends.
bool pages_mapped(uint64_t addr, uint64_t len);

} // namespace tp::emu
