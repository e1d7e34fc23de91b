// Delivering work completions on the owner's runtime, for the emulator's completion queues (software device,
// libibverbs): completions come from another thread (the wire, a CQ poller), run on the owner's loop, and wait for a
// handler when none is set yet; a queue destroyed meanwhile drops them.
#pragma once

#include "core/device/device.hpp"
#include "core/runtime/runtime.hpp"

#include <deque>
#include <memory>
#include <mutex>

namespace tp::emu {

class CompletionDelivery {
public:
  explicit CompletionDelivery(Runtime& rt) : rt_(rt), st_(std::make_shared<State>()) {}
  void set_handler(verbs::CompletionHandler handler)
  {
    std::deque<verbs::WorkCompletion> early;
    {
      std::lock_guard<std::mutex> lock(st_->mu);
      st_->handler = std::move(handler);
      early.swap(st_->early);
    }
    for (const auto& wc : early)
      deliver(wc);
  }
  /// From any thread: run the handler with `wc` on the owner's runtime.
  void deliver(const verbs::WorkCompletion& wc)
  {
    std::weak_ptr<State> weak = st_;
    rt_.post([weak, wc] {
      auto st = weak.lock();
      if (!st) return;
      verbs::CompletionHandler h;
      {
        std::lock_guard<std::mutex> lock(st->mu);
        if (!st->handler) {
          st->early.push_back(wc);
          return;
        }
        h = st->handler;
      }
      h(wc);
    });
  }

private:
  struct State {
    std::mutex mu;
    verbs::CompletionHandler handler;
    std::deque<verbs::WorkCompletion> early;
  };
  Runtime& rt_;
  std::shared_ptr<State> st_;
};

} // namespace tp::emu
