// Unix-socket links between software devices of different processes (see process_link.hpp).
// The frames and their decoders: emulator/process_wire.hpp.
#include "emulator/process_link.hpp"
#include "emulator/process_wire.hpp"
#include "emulator/socket_io.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tp::emu {

namespace {

sockaddr_un address(const std::string& path)
{
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  return a;
}

} // namespace

Result<std::unique_ptr<ProcessLink>> ProcessLink::open(const std::string& dir, uint16_t first_lid, SharedArena& arena,
                                                       Handlers handlers)
{
  if (owner_of(first_lid) != first_lid)
    return Error::at("", "first_lid", "1 + k x " + std::to_string(LIDS_PER_PROCESS), std::to_string(first_lid));
  const std::string path = dir + "/fabric-" + std::to_string(first_lid) + ".sock";
  if (path.size() >= sizeof(sockaddr_un::sun_path))
    return Error::at(dir, "process link directory", "a path short enough for a Unix socket", "too long");
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error::msg(std::string("socket: ") + std::strerror(errno));
  ::unlink(path.c_str());
  sockaddr_un a = address(path);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0) {
    const int e = errno;
    ::close(fd);
    return Error::at(path, "bind", "a socket path this process can create", std::strerror(e));
  }
  return std::unique_ptr<ProcessLink>(new ProcessLink(dir, first_lid, arena, std::move(handlers), fd));
}

ProcessLink::ProcessLink(std::string dir, uint16_t first_lid, SharedArena& arena, Handlers h, int listen_fd)
    : dir_(std::move(dir)), first_lid_(first_lid), arena_(arena), h_(std::move(h)), listen_fd_(listen_fd)
{
  acceptor_ = std::thread([this] { accept_loop(); });
}

ProcessLink::~ProcessLink()
{
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  ::close(listen_fd_);
  ::unlink(path_of(first_lid_).c_str());
  std::vector<std::shared_ptr<Conn>> conns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    conns = all_;
  }
  for (auto& c : conns)
    ::shutdown(c->fd, SHUT_RDWR);
  for (auto& c : conns) {
    if (c->reader.joinable()) c->reader.join();
    ::close(c->fd);
  }
}

std::string ProcessLink::path_of(uint16_t first_lid) const
{
  return dir_ + "/fabric-" + std::to_string(first_lid) + ".sock";
}

bool ProcessLink::reaches(uint16_t lid)
{
  const uint16_t owner = owner_of(lid);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (lost_.count(owner)) return false;
    if (outgoing_.count(owner)) return true;
  }
  struct stat st;
  return ::stat(path_of(owner).c_str(), &st) == 0;
}

bool ProcessLink::write_frame(Conn& c, uint8_t type, const std::vector<uint8_t>& body)
{
  const auto head = wire::encode_head(type, uint32_t(body.size()));
  std::lock_guard<std::mutex> lock(c.write_mu);
  return send_all(c.fd, head.data(), head.size()) && send_all(c.fd, body.data(), body.size());
}

bool ProcessLink::send_request(uint16_t dst_lid, const std::vector<uint8_t>& frame)
{
  const uint16_t owner = owner_of(dst_lid);
  std::shared_ptr<Conn> c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (lost_.count(owner)) return false;
    auto it = outgoing_.find(owner);
    if (it != outgoing_.end()) c = it->second;
  }
  if (!c) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    sockaddr_un a = address(path_of(owner));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      return false;
    }
    // Hello with our arena's memfd.
    std::vector<uint8_t> msg =
        wire::encode_hello({first_lid_, reinterpret_cast<uint64_t>(arena_.base()), arena_.capacity()});
    iovec iov{msg.data(), msg.size()};
    alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int))] = {};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctrl;
    mh.msg_controllen = sizeof ctrl;
    cmsghdr* cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    const int afd = arena_.fd();
    std::memcpy(CMSG_DATA(cm), &afd, sizeof(int));
    if (::sendmsg(fd, &mh, MSG_NOSIGNAL) != ssize_t(msg.size())) {
      ::close(fd);
      return false;
    }
    c = std::make_shared<Conn>();
    c->fd = fd;
    c->peer_first_lid = owner;
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      ::close(fd);
      return false;
    }
    auto [it, fresh] = outgoing_.emplace(owner, c);
    if (!fresh) { // another thread connected meanwhile: use its connection
      ::close(fd);
      c = it->second;
    } else {
      all_.push_back(c);
      c->reader = std::thread([this, c] { read_loop(c); });
    }
  }
  return write_frame(*c, wire::REQUEST, frame);
}

void ProcessLink::accept_loop()
{
  while (!stopping_) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      return; // shut down
    }
    // The hello (with the peer's memfd) comes first.
    uint8_t buf[wire::FRAME_HEAD_BYTES + wire::HELLO_BODY_BYTES];
    iovec iov{buf, sizeof buf};
    // Room for more descriptors than a hello carries: every one the peer sent is received (and closed) here.
    alignas(cmsghdr) char ctrl[CMSG_SPACE(8 * sizeof(int))] = {};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctrl;
    mh.msg_controllen = sizeof ctrl;
    const ssize_t r = ::recvmsg(fd, &mh, MSG_WAITALL | MSG_CMSG_CLOEXEC);
    std::vector<int> fds;
    for (cmsghdr* cm = r > 0 ? CMSG_FIRSTHDR(&mh) : nullptr; cm; cm = CMSG_NXTHDR(&mh, cm))
      if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
        for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); ++i) {
          int one;
          std::memcpy(&one, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
          fds.push_back(one);
        }
    const auto hello = r == ssize_t(sizeof buf) ? wire::decode_hello(buf, sizeof buf) : std::nullopt;
    if (!hello || fds.size() != 1 || (mh.msg_flags & MSG_CTRUNC)) { // exactly one memfd, with a valid hello
      for (int f : fds)
        ::close(f);
      ::close(fd);
      continue;
    }
    const int afd = fds[0];
    const uint16_t peer_lid = hello->first_lid;
    auto arena = PeerArena::map(afd, hello->arena_base, hello->arena_capacity);
    if (!arena.ok()) {
      ::close(fd);
      continue;
    }
    auto c = std::make_shared<Conn>();
    c->fd = fd;
    c->peer_first_lid = peer_lid;
    c->arena = std::move(arena.value());
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    lost_.erase(peer_lid); // a restarted peer
    all_.push_back(c);
    c->reader = std::thread([this, c] { read_loop(c); });
  }
}

void ProcessLink::read_loop(std::shared_ptr<Conn> c)
{
  // Until the peer closes or sends a malformed frame (a protocol error: the connection is dropped).
  std::vector<uint8_t> body;
  wire::read_frames([&](uint8_t* p, size_t n) { return recv_all(c->fd, p, n); }, body,
                    [&](uint8_t type, const std::vector<uint8_t>& b) {
                      if (type == wire::REQUEST && c->arena)
                        return write_frame(*c, wire::RESPONSE, h_.on_request(b, *c->arena));
                      if (type == wire::RESPONSE) {
                        h_.on_response(b);
                        return true;
                      }
                      return false;
                    });
  if (stopping_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    lost_[c->peer_first_lid] = true;
    auto it = outgoing_.find(c->peer_first_lid);
    if (it != outgoing_.end() && it->second == c) outgoing_.erase(it);
  }
  if (h_.on_peer_lost) h_.on_peer_lost(c->peer_first_lid);
}

} // namespace tp::emu
