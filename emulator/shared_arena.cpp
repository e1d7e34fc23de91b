// Shared-memory arenas (see shared_arena.hpp).
#include "emulator/shared_arena.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tp::emu {

Result<std::unique_ptr<SharedArena>> SharedArena::create(uint64_t capacity, const std::string& name)
{
  const int fd = ::memfd_create(("tensorpath-" + name).c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return Error::msg(std::string("memfd_create: ") + std::strerror(errno));
  // Sealed at its size: a peer that maps it can rely on every byte staying there (PeerArena::map checks the seal).
  if (::ftruncate(fd, off_t(capacity)) != 0 ||
      ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const int e = errno;
    ::close(fd);
    return Error::msg(std::string("sizing the shared arena: ") + std::strerror(e));
  }
  void* p = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    ::close(fd);
    return Error::msg(std::string("mmap of the shared arena: ") + std::strerror(e));
  }
  return std::unique_ptr<SharedArena>(new SharedArena(fd, static_cast<uint8_t*>(p), capacity));
}

SharedArena::SharedArena(int fd, uint8_t* base, uint64_t capacity) : fd_(fd), base_(base), capacity_(capacity)
{
  free_[0] = capacity;
}

SharedArena::~SharedArena()
{
  ::munmap(base_, capacity_);
  ::close(fd_);
}

uint8_t* SharedArena::allocate(uint64_t size)
{
  const uint64_t n = (std::max<uint64_t>(size, 1) + 63) / 64 * 64;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < n) continue;
    const uint64_t off = it->first, len = it->second;
    free_.erase(it);
    if (len > n) free_[off + n] = len - n;
    used_[off] = n;
    return base_ + off;
  }
  return nullptr;
}

void SharedArena::free(uint8_t* p)
{
  std::lock_guard<std::mutex> lock(mu_);
  auto u = used_.find(uint64_t(p - base_));
  if (u == used_.end()) return;
  uint64_t off = u->first, len = u->second;
  used_.erase(u);
  auto next = free_.lower_bound(off);
  if (next != free_.end() && next->first == off + len) {
    len += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      prev->second += len;
      return;
    }
  }
  free_[off] = len;
}

uint64_t SharedArena::used() const
{
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  for (const auto& [o, l] : used_)
    n += l;
  return n;
}

Result<std::unique_ptr<PeerArena>> PeerArena::map(int fd, uint64_t remote_base, uint64_t capacity)
{
  // The peer says how large its arena is; the memfd says how large it really is and, sealed against shrinking, that
  // it stays so. Mapping past the end of the file would turn the first access there into SIGBUS, so a capacity the
  // file does not have, or a file that could shrink, is refused.
  struct stat st {};
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (::fstat(fd, &st) != 0 || capacity == 0 || uint64_t(st.st_size) < capacity ||
      remote_base + capacity < remote_base || seals < 0 || !(seals & F_SEAL_SHRINK)) {
    ::close(fd);
    return Error::at("", "peer arena",
                     "a capacity within the peer's memfd (" + std::to_string(st.st_size) +
                         " B), sealed against shrinking",
                     std::to_string(capacity) + " B" + (seals >= 0 && (seals & F_SEAL_SHRINK) ? "" : ", not sealed"));
  }
  // Between PROT_NONE guard pages: an access just outside the peer's memory faults instead of landing in a neighbour.
  const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  const uint64_t span = (capacity + page - 1) / page * page + 2 * page;
  void* reserve = ::mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  void* p = reserve == MAP_FAILED ? MAP_FAILED
                                  : ::mmap(static_cast<uint8_t*>(reserve) + page, capacity, PROT_READ | PROT_WRITE,
                                           MAP_SHARED | MAP_NORESERVE | MAP_FIXED, fd, 0);
  const int e = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    if (reserve != MAP_FAILED) ::munmap(reserve, span);
    return Error::msg(std::string("mmap of a peer's arena: ") + std::strerror(e));
  }
  return std::unique_ptr<PeerArena>(
      new PeerArena(static_cast<uint8_t*>(reserve), span, static_cast<uint8_t*>(p), remote_base, capacity));
}

PeerArena::~PeerArena()
{
  ::munmap(mapping_, mapping_bytes_);
}

} // namespace tp::emu
