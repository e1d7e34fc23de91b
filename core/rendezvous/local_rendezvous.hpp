// One step's rendezvous table with TensorFlow semantics (local_rendezvous.cc): per key a FIFO that holds
// either pending sends or pending receivers, never both. Send is passive (parks the tensor or hands it to the
// oldest waiter); RecvAsync takes a parked tensor or waits; abort is sticky and fails every waiter;
// a waiter can be cancelled. Tests: tests/core/rendezvous_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "core/rendezvous/rendezvous_key.hpp"
#include "core/tensor/tensor.hpp"

#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>

namespace tp::rendezvous {

struct RecvOutcome {
  Tensor tensor;
  bool is_dead = false;
};
using RecvCallback = std::function<void(Result<RecvOutcome>)>;

class LocalRendezvous {
public:
  /// Park `tensor` under `key`, or hand it to the oldest waiting receiver (synchronously, as TF does).
  /// Error (Aborted) after an abort.
  Status send(const ParsedKey& key, const Tensor& tensor, bool is_dead);
  /// Take the tensor parked under `key` now, or wait for it. Returns a waiter id (0 if served at once) that
  /// cancel() accepts.
  uint64_t recv_async(const ParsedKey& key, RecvCallback done);
  /// Cancel a waiting receiver: it is called with a Cancelled error. False if it is no longer waiting.
  bool cancel(uint64_t waiter_id);
  /// Make `status` sticky: every waiter is called with it, parked tensors are dropped, later calls fail.
  void start_abort(const Error& status);
  bool aborted() const { return abort_.has_value(); }
  size_t pending_sends() const;
  size_t pending_receivers() const;

private:
  struct Item {
    bool is_send = false;
    Tensor tensor;
    bool is_dead = false;
    RecvCallback done;
    uint64_t id = 0;
  };
  std::unordered_map<std::string, std::deque<Item>> table_;
  std::unordered_map<uint64_t, std::string> waiter_keys_;
  std::optional<Error> abort_;
  uint64_t next_id_ = 1;
};

} // namespace tp::rendezvous
