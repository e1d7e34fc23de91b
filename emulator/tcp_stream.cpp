// TCP byte streams between OS processes (see tcp_stream.hpp).
#include "emulator/tcp_stream.hpp"
#include "emulator/socket_io.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>

namespace tp::emu {

namespace {

constexpr uint64_t MAX_FRAME = 1ull << 34; // 16 GiB: anything larger is a corrupt length, not a tensor

class TcpConnection final : public StreamConnection, public std::enable_shared_from_this<TcpConnection> {
public:
  TcpConnection(int fd, std::string peer, Runtime& rt) : fd_(fd), peer_(std::move(peer)), rt_(rt)
  {
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~TcpConnection() override
  {
    shut();
    if (reader_.joinable()) {
      if (reader_.get_id() == std::this_thread::get_id())
        reader_.detach();
      else
        reader_.join();
    }
    ::close(fd_);
  }
  void start_reader()
  {
    std::weak_ptr<TcpConnection> weak = shared_from_this();
    reader_ = std::thread([this, weak] { read_loop(weak); });
  }
  void send(Message msg, std::function<void(Status)> done) override
  {
    bool ok = !closed_;
    if (ok) {
      std::lock_guard<std::mutex> lock(write_mu_);
      const uint64_t head[2] = {msg.bytes.size(), msg.extra_wire_bytes};
      ok = send_all(fd_, head, sizeof head) && send_all(fd_, msg.bytes.data(), msg.bytes.size());
      static const std::vector<uint8_t> zeros(1 << 16, 0);
      for (uint64_t left = msg.extra_wire_bytes; ok && left > 0;) {
        const size_t n = size_t(std::min<uint64_t>(left, zeros.size()));
        ok = send_all(fd_, zeros.data(), n);
        left -= n;
      }
    }
    if (done) rt_.post([done, ok] { done(ok ? ok_status() : Error::status("Unavailable", "stream closed")); });
  }
  void set_receive_handler(std::function<void(Message)> handler) override
  {
    std::deque<Message> early;
    {
      std::lock_guard<std::mutex> lock(mu_);
      on_message_ = std::move(handler);
      early.swap(early_);
    }
    for (auto& m : early)
      on_message_(std::move(m));
  }
  void set_close_handler(std::function<void(Status)> handler) override
  {
    std::optional<Status> pending;
    {
      std::lock_guard<std::mutex> lock(mu_);
      on_close_ = std::move(handler);
      pending.swap(close_status_);
    }
    if (pending) notify_close(*pending);
  }
  void close() override
  {
    if (closed_.exchange(true)) return;
    shut();
    notify_close(ok_status());
  }
  std::string peer_name() const override { return peer_; }
  void shut() { ::shutdown(fd_, SHUT_RDWR); }

private:
  void read_loop(std::weak_ptr<TcpConnection> weak)
  {
    Status why = ok_status();
    for (;;) {
      uint64_t head[2];
      if (!recv_all(fd_, head, sizeof head)) {
        why = Error::status("Unavailable", "connection to " + peer_ + " closed by the peer");
        break;
      }
      if (head[0] > MAX_FRAME || head[1] > MAX_FRAME) {
        why = Error::status("Internal", "malformed stream frame from " + peer_);
        break;
      }
      Message m;
      m.bytes.resize(head[0]);
      m.extra_wire_bytes = head[1];
      bool ok = recv_all(fd_, m.bytes.data(), m.bytes.size());
      std::vector<uint8_t> sink(1 << 16);
      for (uint64_t left = head[1]; ok && left > 0;) {
        const size_t n = size_t(std::min<uint64_t>(left, sink.size()));
        ok = recv_all(fd_, sink.data(), n);
        left -= n;
      }
      if (!ok) {
        why = Error::status("Unavailable", "connection to " + peer_ + " closed mid-message");
        break;
      }
      rt_.post([weak, m = std::move(m)]() mutable {
        auto self = weak.lock();
        if (!self) return;
        std::function<void(Message)> h;
        {
          std::lock_guard<std::mutex> lock(self->mu_);
          if (!self->on_message_) {
            self->early_.push_back(std::move(m));
            return;
          }
          h = self->on_message_;
        }
        h(std::move(m));
      });
    }
    if (closed_.exchange(true)) return; // closed here: the close handler already ran
    rt_.post([weak, why] {
      if (auto self = weak.lock()) self->notify_close(why);
    });
  }
  void notify_close(const Status& st)
  {
    std::function<void(Status)> h;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!on_close_) {
        close_status_ = st;
        return;
      }
      h = std::move(on_close_);
      on_close_ = nullptr;
    }
    h(st);
  }

  int fd_;
  std::string peer_;
  Runtime& rt_;
  std::atomic<bool> closed_{false};
  std::mutex write_mu_, mu_;
  std::function<void(Message)> on_message_;
  std::function<void(Status)> on_close_;
  std::deque<Message> early_;
  std::optional<Status> close_status_;
  std::thread reader_;
};

/// Hello: u16 name length + the connecting process's name (so that peer_name() names the process).
bool send_hello(int fd, const std::string& name)
{
  const uint16_t n = uint16_t(name.size());
  return send_all(fd, &n, 2) && send_all(fd, name.data(), n);
}

bool read_hello(int fd, std::string& name)
{
  uint16_t n = 0;
  if (!recv_all(fd, &n, 2) || n > 1024) return false;
  name.resize(n);
  return recv_all(fd, name.data(), n);
}

} // namespace

struct TcpStreamNetwork::Shared {
  std::mutex mu;
  std::vector<std::weak_ptr<TcpConnection>> conns;
  struct Listener {
    int fd;
    std::string file;
    std::thread thread;
  };
  std::map<uint16_t, std::unique_ptr<Listener>> listeners;
  std::atomic<bool> stopping{false};
  void track(const std::shared_ptr<TcpConnection>& c)
  {
    std::lock_guard<std::mutex> lock(mu);
    conns.push_back(c);
  }
};

TcpStreamNetwork::TcpStreamNetwork(std::string dir, std::string process, Runtime& rt)
    : dir_(std::move(dir)), process_(std::move(process)), rt_(rt), shared_(std::make_shared<Shared>())
{
}

TcpStreamNetwork::~TcpStreamNetwork()
{
  shared_->stopping = true;
  for (auto& [port, l] : shared_->listeners) {
    ::shutdown(l->fd, SHUT_RDWR);
    ::unlink(l->file.c_str());
  }
  for (auto& [port, l] : shared_->listeners) {
    l->thread.join();
    ::close(l->fd);
  }
  std::vector<std::weak_ptr<TcpConnection>> conns;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    conns.swap(shared_->conns);
  }
  for (auto& w : conns)
    if (auto c = w.lock()) c->shut();
}

Status TcpStreamNetwork::listen(uint16_t port, std::function<void(StreamPtr)> on_accept)
{
  if (shared_->listeners.count(port))
    return Error::at("", "listen", "a free port", process_ + ":" + std::to_string(port) + " is taken");
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error::msg(std::string("socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 128) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const int e = errno;
    ::close(fd);
    return Error::msg(std::string("listen on 127.0.0.1: ") + std::strerror(e));
  }
  auto l = std::make_unique<Shared::Listener>();
  l->fd = fd;
  l->file = dir_ + "/" + process_ + "." + std::to_string(port);
  {
    const std::string tmp = l->file + ".tmp";
    std::ofstream f(tmp);
    f << ntohs(a.sin_port) << "\n";
    f.close();
    if (!f || ::rename(tmp.c_str(), l->file.c_str()) != 0) {
      ::close(fd);
      return Error::at(l->file, "", "a writable stream directory", "cannot write the port file");
    }
  }
  std::shared_ptr<Shared> sh = shared_;
  Runtime* rt = &rt_;
  l->thread = std::thread([sh, fd, rt, on_accept = std::move(on_accept)] {
    while (!sh->stopping) {
      const int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) {
        if (errno == EINTR) continue;
        return;
      }
      std::string peer;
      if (!read_hello(c, peer)) {
        ::close(c);
        continue;
      }
      auto conn = std::make_shared<TcpConnection>(c, peer, *rt);
      conn->start_reader();
      sh->track(conn);
      rt->post([on_accept, conn] { on_accept(conn); });
    }
  });
  shared_->listeners[port] = std::move(l);
  return ok_status();
}

void TcpStreamNetwork::connect(const std::string& peer, uint16_t port, std::function<void(Result<StreamPtr>)> done)
{
  auto refuse = [&](const std::string& why) { rt_.post([done, why] { done(Error::status("Unavailable", why)); }); };
  std::ifstream f(dir_ + "/" + peer + "." + std::to_string(port));
  int tcp_port = 0;
  if (!(f >> tcp_port) || tcp_port <= 0 || tcp_port > 65535)
    return refuse("connection refused: " + peer + ":" + std::to_string(port));
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(uint16_t(tcp_port));
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || !send_hello(fd, process_)) {
    if (fd >= 0) ::close(fd);
    return refuse("connection refused: " + peer + ":" + std::to_string(port) +
                  " (127.0.0.1:" + std::to_string(tcp_port) + ")");
  }
  auto conn = std::make_shared<TcpConnection>(fd, peer, rt_);
  conn->start_reader();
  shared_->track(conn);
  rt_.post([done, conn] { done(StreamPtr(conn)); });
}

} // namespace tp::emu
