// Memory-region bookkeeping for devices that check keys themselves (simulated NIC, software device):
// key allocation, lkey/rkey lookup, and the local/remote access checks that turn into LOC_PROT_ERR and
// REM_ACCESS_ERR completions. Tests: tests/core/mr_table_test.cpp.
#pragma once

#include "core/device/verbs_types.hpp"

#include <cstdint>
#include <optional>
#include <unordered_map>

namespace tp::verbs {

class MrTable {
public:
  /// `key_seed` makes keys differ between devices (a key from another device is not valid here).
  explicit MrTable(uint32_t key_seed = 0x1000) : next_key_(key_seed) {}

  MemoryRegion add(uint64_t addr, uint64_t length, Access access);
  /// False if no MR has this lkey.
  bool remove(uint32_t lkey);

  /// Local check for an SGE: lkey valid and [addr, addr+len) inside the MR; `need_write` for receive buffers
  /// and RDMA READ destinations (LOCAL_WRITE). Returns SUCCESS or LOC_PROT_ERR.
  WcStatus check_local(const Sge& sge, bool need_write) const;
  /// Responder check: rkey valid, range inside the MR, the MR grants `need`. SUCCESS or REM_ACCESS_ERR.
  WcStatus check_remote(uint32_t rkey, uint64_t addr, uint64_t len, Access need) const;

  std::optional<MemoryRegion> by_lkey(uint32_t lkey) const;
  size_t size() const { return by_lkey_.size(); }

private:
  static bool inside(const MemoryRegion& mr, uint64_t addr, uint64_t len)
  {
    return addr >= mr.addr && len <= mr.length && addr - mr.addr <= mr.length - len;
  }
  uint32_t next_key_;
  std::unordered_map<uint32_t, MemoryRegion> by_lkey_;
  std::unordered_map<uint32_t, uint32_t> rkey_to_lkey_;
};

} // namespace tp::verbs
