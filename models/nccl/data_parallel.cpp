// Data-parallel training steps on NCCL collectives: DDP buckets or Horovod fusion over the backward pass (see the
// header).
#include "models/nccl/data_parallel.hpp"

#include "core/common/suggest.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tp::models::nccl {

const char* to_string(Bucketing b)
{
  return b == Bucketing::DDP ? "ddp" : "horovod";
}

Result<Bucketing> parse_bucketing(const std::string& word)
{
  if (word == "ddp") return Bucketing::DDP;
  if (word == "horovod") return Bucketing::HOROVOD;
  return Error::at("", "library", "ddp (PyTorch DistributedDataParallel) or horovod",
                   unknown_name(word, {"ddp", "horovod"}));
}

namespace {

/// A gradient and the moment the backward pass has computed it.
struct Gradient {
  double bytes = 0;
  double ready = 0;
};

/// The trainable variables' gradients in the order the backward pass produces them (the last layer's first), each
/// ready when its layer's backward ends.
std::vector<Gradient> gradients_of(const Workload& w)
{
  std::vector<Gradient> out;
  double t = w.forward_seconds();
  for (auto it = w.layers.rbegin(); it != w.layers.rend(); ++it) {
    t += it->backward_seconds;
    // within a layer, the variables in reverse declaration order (as DDP reverses model.parameters())
    for (auto v = it->variables.rbegin(); v != it->variables.rend(); ++v)
      if (v->trainable) out.push_back({double(v->bytes()), t});
  }
  return out;
}

/// DDP: consecutive gradients (reverse parameter order) into buckets as PyTorch's compute_bucket_assignment_by_size
/// fills them: a gradient goes into the open bucket, which closes once its size reaches its cap (the first bucket's
/// cap is first_bucket, the others bucket_cap), so a bucket passes its cap by at most its last gradient. Each bucket is
/// ready when its last gradient is.
std::vector<BucketAllreduce> ddp_buckets(const std::vector<Gradient>& grads, const DataParallelOptions& o)
{
  std::vector<BucketAllreduce> out;
  BucketAllreduce cur;
  for (const auto& g : grads) {
    cur.bytes += g.bytes;
    cur.gradients += 1;
    cur.ready = std::max(cur.ready, g.ready);
    if (cur.bytes >= (out.empty() ? o.first_bucket : o.bucket_cap)) {
      out.push_back(cur);
      cur = BucketAllreduce{};
    }
  }
  if (cur.gradients > 0) out.push_back(cur);
  return out;
}

/// Horovod: at every cycle boundary (k x cycle from the start of the step), the gradients ready by then and not yet
/// sent are fused in order into buffers of at most `fusion` bytes (a larger gradient alone), each an allreduce.
std::vector<BucketAllreduce> horovod_buffers(const std::vector<Gradient>& grads, const DataParallelOptions& o)
{
  std::vector<BucketAllreduce> out;
  size_t next = 0;
  while (next < grads.size()) {
    // the first cycle boundary at or after the next gradient is ready (that gradient is always taken, so the loop
    // moves on however the boundary rounds)
    const double tick = std::max(grads[next].ready, std::ceil(grads[next].ready / o.cycle - 1e-9) * o.cycle);
    BucketAllreduce cur;
    cur.ready = tick;
    const size_t first = next;
    while (next < grads.size() && (next == first || grads[next].ready <= tick)) {
      if (cur.gradients > 0 && cur.bytes + grads[next].bytes > o.fusion) {
        out.push_back(cur);
        cur = BucketAllreduce{};
        cur.ready = tick;
      }
      cur.bytes += grads[next].bytes;
      cur.gradients += 1;
      ++next;
    }
    out.push_back(cur);
  }
  return out;
}

} // namespace

DataParallelStep data_parallel_step(const CollectiveSetup& setup, const Workload& workload,
                                    const DataParallelOptions& options)
{
  DataParallelStep step;
  step.forward = workload.forward_seconds();
  step.backward = workload.backward_seconds();
  step.ranks = setup.nodes * setup.gpus_per_node;
  const auto grads = gradients_of(workload);
  step.allreduces = options.bucketing == Bucketing::DDP ? ddp_buckets(grads, options) : horovod_buffers(grads, options);
  const CollectiveLinks links = collective_links(setup);
  double free_at = 0; // NCCL's stream: one allreduce after the other
  const BucketAllreduce* largest = nullptr;
  for (auto& b : step.allreduces) {
    const double bytes = double(effective_bytes(Op::ALL_REDUCE, uint64_t(b.bytes), step.ranks));
    b.prediction = predict(setup, links, bytes);
    b.start = std::max(b.ready, free_at);
    b.end = b.start + b.prediction.seconds;
    free_at = b.end;
    step.communication += b.prediction.seconds;
    if (!largest || b.bytes > largest->bytes) largest = &b;
  }
  step.seconds = std::max(step.compute(), free_at);
  step.exposed = step.seconds - step.compute();
  if (step.exposed <= 0.01 * step.seconds || !largest)
    step.bottleneck = "compute (the allreduces hide behind the backward pass)";
  else
    step.bottleneck = fmt::format("communication, {:.1f} ms after the backward pass: {}", step.exposed * 1e3,
                                  largest->prediction.bottleneck);
  return step;
}

} // namespace tp::models::nccl
