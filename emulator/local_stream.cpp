// In-process byte streams (see local_stream.hpp).
#include "emulator/local_stream.hpp"

#include <deque>

namespace tp::emu {

namespace {

/// One direction's receiving end: messages and the handlers, shared by both connection objects.
struct Inbox {
  std::mutex mu;
  Runtime* rt = nullptr;
  std::function<void(Message)> on_message;
  std::function<void(Status)> on_close;
  std::deque<Message> early;
  bool closed = false;
  std::optional<Status> close_status; ///< close seen before a close handler was set
};

class LocalConnection final : public StreamConnection {
public:
  LocalConnection(std::shared_ptr<Inbox> mine, std::shared_ptr<Inbox> theirs, std::string peer)
      : mine_(std::move(mine)), theirs_(std::move(theirs)), peer_(std::move(peer))
  {
  }
  ~LocalConnection() override { close(); }
  void send(Message msg, std::function<void(Status)> done) override
  {
    // The message keeps its split (real bytes, simulated extra): a socket backend sends the extra as zeros and
    // the receiver gets the same split back; in process there is nothing to send.
    {
      std::lock_guard<std::mutex> lock(mine_->mu);
      if (mine_->closed) {
        if (done) mine_->rt->post([done] { done(Error::status("Unavailable", "stream closed")); });
        return;
      }
    }
    deliver(theirs_, std::move(msg));
    if (done) mine_->rt->post([done] { done(ok_status()); });
  }
  void set_receive_handler(std::function<void(Message)> handler) override
  {
    std::deque<Message> early;
    {
      std::lock_guard<std::mutex> lock(mine_->mu);
      mine_->on_message = std::move(handler);
      early.swap(mine_->early);
    }
    for (auto& m : early)
      deliver(mine_, std::move(m));
  }
  void set_close_handler(std::function<void(Status)> handler) override
  {
    std::optional<Status> pending;
    {
      std::lock_guard<std::mutex> lock(mine_->mu);
      mine_->on_close = std::move(handler);
      pending = mine_->close_status;
      mine_->close_status.reset();
    }
    if (pending) notify_close(mine_, *pending);
  }
  void close() override
  {
    for (auto* side : {&mine_, &theirs_}) {
      std::lock_guard<std::mutex> lock((*side)->mu);
      if ((*side)->closed) continue;
      (*side)->closed = true;
    }
    notify_close(theirs_, ok_status());
    notify_close(mine_, ok_status());
  }
  std::string peer_name() const override { return peer_; }

  static void deliver(const std::shared_ptr<Inbox>& in, Message m)
  {
    std::weak_ptr<Inbox> weak = in;
    in->rt->post([weak, m = std::move(m)]() mutable {
      auto box = weak.lock();
      if (!box) return;
      std::function<void(Message)> h;
      {
        std::lock_guard<std::mutex> lock(box->mu);
        if (!box->on_message) {
          box->early.push_back(std::move(m));
          return;
        }
        h = box->on_message;
      }
      h(std::move(m));
    });
  }
  static void notify_close(const std::shared_ptr<Inbox>& in, Status st)
  {
    std::weak_ptr<Inbox> weak = in;
    in->rt->post([weak, st] {
      auto box = weak.lock();
      if (!box) return;
      std::function<void(Status)> h;
      {
        std::lock_guard<std::mutex> lock(box->mu);
        if (!box->on_close) {
          box->close_status = st;
          return;
        }
        h = std::move(box->on_close);
        box->on_close = nullptr;
      }
      h(st);
    });
  }

private:
  std::shared_ptr<Inbox> mine_, theirs_;
  std::string peer_;
};

} // namespace

LocalStreamNetwork::LocalStreamNetwork(LocalStreamHub& hub, std::string process, Runtime& rt)
    : hub_(hub), process_(std::move(process)), rt_(rt)
{
}

LocalStreamNetwork::~LocalStreamNetwork()
{
  std::lock_guard<std::mutex> lock(hub_.mu);
  for (auto it = hub_.listeners.begin(); it != hub_.listeners.end();)
    it = it->second.net == this ? hub_.listeners.erase(it) : std::next(it);
}

Status LocalStreamNetwork::listen(uint16_t port, std::function<void(StreamPtr)> on_accept)
{
  std::lock_guard<std::mutex> lock(hub_.mu);
  auto key = std::make_pair(process_, port);
  if (hub_.listeners.count(key))
    return Error::at("", "listen", "a free port", process_ + ":" + std::to_string(port) + " is taken");
  hub_.listeners[key] = {this, std::move(on_accept)};
  return ok_status();
}

void LocalStreamNetwork::connect(const std::string& peer, uint16_t port, std::function<void(Result<StreamPtr>)> done)
{
  LocalStreamHub::Listener l;
  {
    std::lock_guard<std::mutex> lock(hub_.mu);
    auto it = hub_.listeners.find({peer, port});
    if (it == hub_.listeners.end()) {
      rt_.post([done, peer, port] {
        done(Error::status("Unavailable", "connection refused: " + peer + ":" + std::to_string(port)));
      });
      return;
    }
    l = it->second;
  }
  auto a = std::make_shared<Inbox>(), b = std::make_shared<Inbox>();
  a->rt = &rt_;
  b->rt = &l.net->runtime();
  StreamPtr ours = std::make_shared<LocalConnection>(a, b, peer);
  StreamPtr theirs = std::make_shared<LocalConnection>(b, a, process_);
  l.net->runtime().post([on_accept = l.on_accept, theirs] { on_accept(theirs); });
  rt_.post([done, ours] { done(ours); });
}

} // namespace tp::emu
