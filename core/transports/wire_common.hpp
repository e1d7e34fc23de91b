// Pieces every transport's wire format shares: tensor meta-data encoding (dtype, shape, proto size, dead
// flag) with bounds-checked decoding, real payload bytes of materialized buffers, and timing helpers that
// attribute elapsed time to a TransferRecord phase.
#pragma once

#include "core/rpc/rpc.hpp"
#include "core/runtime/runtime.hpp"
#include "core/tensor/tensor.hpp"
#include "core/transports/transfer_record.hpp"

#include <functional>
#include <memory>

namespace tp::transports {

struct TensorMeta {
  DataType dtype = DataType::INVALID;
  TensorShape shape;
  uint64_t proto_bytes = 0;
  bool is_dead = false;
  uint64_t total_bytes() const
  {
    return is_pod(dtype) ? uint64_t(shape.num_elements()) * dtype_size(dtype) : proto_bytes;
  }
  static TensorMeta of(const Tensor& t, bool dead) { return TensorMeta{t.dtype, t.shape, t.proto_bytes, dead}; }
  bool same(const TensorMeta& o) const
  {
    return dtype == o.dtype && shape == o.shape && proto_bytes == o.proto_bytes && is_dead == o.is_dead;
  }
};

void write_meta(rpc::Writer& w, const TensorMeta& m);
/// False on malformed input (bad dtype, more than 16 dims, negative or overflowing dims).
bool read_meta(rpc::Reader& r, TensorMeta& m);

/// The real bytes of [addr, addr+len) in `space`, or empty when that range is not materialized.
std::vector<uint8_t> real_bytes(MemorySpace& space, const Buffer& b, uint64_t len);
/// Write `bytes` into a buffer if it is materialized (no timing: the caller charges the copy).
void put_bytes(MemorySpace& space, const Buffer& b, const std::vector<uint8_t>& bytes);

/// Run `work`-like steps and add the elapsed simulated time to a record phase.
class PhaseClock {
public:
  PhaseClock(Runtime& rt, std::shared_ptr<TransferRecord> rec, Phase p)
      : rt_(rt), rec_(std::move(rec)), p_(p), t0_(rt.now())
  {
  }
  void stop()
  {
    if (rec_) rec_->add(p_, rt_.now() - t0_);
    rec_.reset();
  }

private:
  Runtime& rt_;
  std::shared_ptr<TransferRecord> rec_;
  Phase p_;
  double t0_;
};

/// Wrap a completion so that the time until it runs is added to `phase` of `rec`.
inline WorkDone timed(Runtime& rt, std::shared_ptr<TransferRecord> rec, Phase phase, WorkDone done)
{
  const double t0 = rt.now();
  return [&rt, rec, phase, t0, done = std::move(done)](Status st) {
    rec->add(phase, rt.now() - t0);
    done(st);
  };
}

} // namespace tp::transports
