// Whole-buffer send/receive on a connected socket (TCP, Unix stream), retrying on EINTR and short transfers; a
// closed peer is `false`, never SIGPIPE. Shared by the emulator's process link, TCP streams and control sockets.
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace tp::emu {

inline bool send_all(int fd, const void* data, size_t n)
{
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

inline bool recv_all(int fd, void* data, size_t n)
{
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= size_t(r);
  }
  return true;
}

} // namespace tp::emu
