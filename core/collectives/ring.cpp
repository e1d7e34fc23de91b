// Ring and tree collectives (see ring.hpp). Each is a small state machine driven by receive callbacks.
#include "core/collectives/ring.hpp"

#include "core/transports/task_runtime.hpp"

#include <memory>

namespace tp::collectives {

std::vector<int64_t> ring_segments(int64_t count, int n)
{
  std::vector<int64_t> off(size_t(n) + 1, 0);
  const int64_t base = count / n, extra = count % n;
  for (int i = 0; i < n; ++i)
    off[size_t(i) + 1] = off[size_t(i)] + base + (i < extra ? 1 : 0);
  return off;
}

namespace {

int mod(int a, int n)
{
  return ((a % n) + n) % n;
}

/// Run `w` unless it moves no bytes (an empty segment: nothing to add or copy), then `done`.
void execute_unless_empty(Channel& ch, const Work& w, uint64_t bytes, WorkDone done)
{
  if (bytes == 0) return done(ok_status());
  ch.task().runtime().execute(w, std::move(done));
}

Result<Tensor> new_tensor(Channel& ch, int64_t elements, Location loc)
{
  return ch.task().make_tensor(DataType::FLOAT, TensorShape{{elements}}, loc, AllocatorAttributes{false, false, true});
}

struct RingState {
  Channel* ch;
  int64_t step;
  std::string name;
  Tensor t;   ///< input, reduced in place segment by segment
  Tensor out; ///< result
  std::vector<int64_t> off;
  TensorDone done;
  std::vector<Tensor> keep; ///< received tensors that later sends forward
  int shift = 0;            ///< allgather step i receives segment (rank - i - shift)
  std::string gather_tag = "/ag";
};

Tensor segment(const RingState& s, const Tensor& t, int idx)
{
  return Channel::view(t, s.off[size_t(idx)], s.off[size_t(idx) + 1] - s.off[size_t(idx)]);
}

void ring_allgather_phase(std::shared_ptr<RingState> s, int i, Tensor forward);

void ring_reduce_scatter(std::shared_ptr<RingState> s, int i)
{
  Channel& ch = *s->ch;
  const int n = ch.size(), r = ch.rank();
  if (i == n - 1) {
    // This rank now owns the fully reduced segment r + 1: it starts the allgather.
    const int own = mod(r + 1, n);
    Tensor src = segment(*s, s->t, own), dst = segment(*s, s->out, own);
    const uint64_t n_bytes = src.total_bytes();
    execute_unless_empty(ch, n_bytes ? Work::memcpy(*dst.buffer(), *src.buffer(), n_bytes) : Work{}, n_bytes,
                         [s, src](Status st) {
                           if (!st.ok()) return s->done(st.error());
                           ring_allgather_phase(s, 0, src);
                         });
    return;
  }
  const int send_idx = mod(r - i, n), recv_idx = mod(r - i - 1, n);
  const std::string tag = s->name + "/rs" + std::to_string(i);
  if (auto st = ch.send(s->step, tag, mod(r + 1, n), segment(*s, s->t, send_idx)); !st.ok()) return s->done(st.error());
  ch.recv(s->step, tag, mod(r - 1, n), [s, i, recv_idx](Result<Tensor> got) {
    if (!got.ok()) return s->done(got.error());
    Tensor dst = segment(*s, s->t, recv_idx);
    if (got->total_bytes() != dst.total_bytes())
      return s->done(Error::at("", s->name, std::to_string(dst.total_bytes()) + " bytes from the left neighbour",
                               std::to_string(got->total_bytes())));
    Tensor src = got.value();
    const uint64_t n_bytes = dst.total_bytes();
    execute_unless_empty(*s->ch, n_bytes ? Work::reduce(*dst.buffer(), *src.buffer(), n_bytes) : Work{}, n_bytes,
                         [s, i, src](Status st) {
                           if (!st.ok()) return s->done(st.error());
                           ring_reduce_scatter(s, i + 1);
                         });
  });
}

void ring_allgather_phase(std::shared_ptr<RingState> s, int i, Tensor forward)
{
  Channel& ch = *s->ch;
  const int n = ch.size(), r = ch.rank();
  if (i == n - 1) {
    auto done = std::move(s->done);
    Tensor out = s->out;
    s->keep.clear();
    return done(out);
  }
  const int recv_idx = mod(r - i - s->shift, n);
  const std::string tag = s->name + s->gather_tag + std::to_string(i);
  if (auto st = ch.send(s->step, tag, mod(r + 1, n), forward); !st.ok()) return s->done(st.error());
  ch.recv(s->step, tag, mod(r - 1, n), [s, i, recv_idx](Result<Tensor> got) {
    if (!got.ok()) return s->done(got.error());
    Tensor dst = segment(*s, s->out, recv_idx);
    if (got->total_bytes() != dst.total_bytes())
      return s->done(Error::at("", s->name, std::to_string(dst.total_bytes()) + " bytes from the left neighbour",
                               std::to_string(got->total_bytes())));
    Tensor src = got.value();
    s->keep.push_back(src); // forwarded at the next step: must outlive the peer's fetch
    const uint64_t n_bytes = dst.total_bytes();
    execute_unless_empty(*s->ch, n_bytes ? Work::memcpy(*dst.buffer(), *src.buffer(), n_bytes) : Work{}, n_bytes,
                         [s, i, src](Status st) {
                           if (!st.ok()) return s->done(st.error());
                           ring_allgather_phase(s, i + 1, src);
                         });
  });
}

} // namespace

void ring_allreduce(Channel& ch, int64_t step, const std::string& name, Tensor t, TensorDone done)
{
  if (t.dtype != DataType::FLOAT || !t.storage)
    return done(Error::at("", name, "a float32 tensor with storage", "another tensor"));
  const int64_t count = t.shape.num_elements();
  if (ch.size() == 1) return done(t);
  auto out = new_tensor(ch, count, t.location());
  if (!out.ok()) return done(out.error());
  auto s = std::make_shared<RingState>();
  s->ch = &ch;
  s->step = step;
  s->name = name;
  s->t = t;
  s->out = out.value();
  s->off = ring_segments(count, ch.size());
  s->done = std::move(done);
  ring_reduce_scatter(s, 0);
}

void ring_allgather(Channel& ch, int64_t step, const std::string& name, Tensor t, std::vector<int64_t> counts,
                    TensorDone done)
{
  const int n = ch.size(), r = ch.rank();
  if (int(counts.size()) != n || counts[size_t(r)] != t.shape.num_elements())
    return done(Error::at("", name, "one count per rank, this rank's equal to its tensor",
                          std::to_string(counts.size()) + " counts"));
  auto s = std::make_shared<RingState>();
  s->ch = &ch;
  s->step = step;
  s->name = name;
  s->off.assign(size_t(n) + 1, 0);
  for (int i = 0; i < n; ++i)
    s->off[size_t(i) + 1] = s->off[size_t(i)] + counts[size_t(i)];
  auto out = new_tensor(ch, s->off.back(), t.location());
  if (!out.ok()) return done(out.error());
  s->out = out.value();
  s->done = std::move(done);
  // Own part in place, then N-1 steps: forward what arrived last (first: own), receive the left's, which is
  // segment (r - i - 1) at step i (the allreduce's allgather starts one segment later: it owns r + 1).
  s->shift = 1;
  s->gather_tag = "/gather";
  Tensor dst = segment(*s, s->out, r);
  const uint64_t own_bytes = t.total_bytes();
  execute_unless_empty(ch, own_bytes ? Work::memcpy(*dst.buffer(), *t.buffer(), own_bytes) : Work{}, own_bytes,
                       [s, t](Status st) {
                         if (!st.ok()) return s->done(st.error());
                         ring_allgather_phase(s, 0, t);
                       });
}

namespace {

struct SizesState {
  Channel* ch;
  int64_t step;
  std::string name;
  std::vector<int64_t> sizes;
  std::function<void(Result<std::vector<int64_t>>)> done;
};

void sizes_step(std::shared_ptr<SizesState> s, int i)
{
  Channel& ch = *s->ch;
  const int n = ch.size(), r = ch.rank();
  if (i == n - 1) return s->done(s->sizes);
  const int send_idx = mod(r - i, n), recv_idx = mod(r - i - 1, n);
  // The size rides in the shape of an empty tensor ([size, 0]): metadata every transport carries, no payload.
  auto a = ch.task().make_tensor(DataType::INT64, TensorShape{{s->sizes[size_t(send_idx)], 0}},
                                 Location::host(ch.task().spec().cpu_numa_node));
  if (!a.ok()) return s->done(a.error());
  const std::string tag = s->name + "/sizes" + std::to_string(i);
  if (auto st = ch.send(s->step, tag, mod(r + 1, n), a.value()); !st.ok()) return s->done(st.error());
  ch.recv(s->step, tag, mod(r - 1, n), [s, recv_idx, i](Result<Tensor> got) {
    if (!got.ok()) return s->done(got.error());
    if (got->shape.dims.size() != 2 || got->shape.dims[0] < 0)
      return s->done(Error::at("", "sizing allgather", "a [size, 0] tensor", "another shape"));
    s->sizes[size_t(recv_idx)] = got->shape.dims[0];
    sizes_step(s, i + 1);
  });
}

} // namespace

void allgather_sizes(Channel& ch, int64_t step, const std::string& name, int64_t mine,
                     std::function<void(Result<std::vector<int64_t>>)> done)
{
  auto s = std::make_shared<SizesState>();
  s->ch = &ch;
  s->step = step;
  s->name = name;
  s->sizes.assign(size_t(ch.size()), -1);
  s->sizes[size_t(ch.rank())] = mine;
  s->done = std::move(done);
  sizes_step(s, 0);
}

void tree_broadcast(Channel& ch, int64_t step, const std::string& name, Tensor t, int root, TensorDone done)
{
  const int n = ch.size();
  const int vr = mod(ch.rank() - root, n); // virtual rank, root = 0
  auto forward = [&ch, step, name, n, root, vr](Tensor value, TensorDone done) {
    // Children of vr in a binomial tree: vr + 2^k for 2^k > vr (the lowest set bit of vr bounds k).
    for (int mask = 1; mask < n; mask <<= 1) {
      if (vr & mask) break;
      if (vr + mask < n)
        if (auto st = ch.send(step, name, mod(vr + mask + root, n), value); !st.ok()) return done(st.error());
    }
    done(value);
  };
  if (vr == 0) return forward(t, std::move(done));
  int mask = 1;
  while (!(vr & mask))
    mask <<= 1;
  const int parent = mod(vr - mask + root, n);
  ch.recv(step, name, parent, [forward, done = std::move(done), bytes = t.total_bytes(), name](Result<Tensor> got) {
    if (!got.ok()) return done(got.error());
    if (got->total_bytes() != bytes)
      return done(
          Error::at("", name, std::to_string(bytes) + " bytes from the parent", std::to_string(got->total_bytes())));
    forward(got.value(), done);
  });
}

} // namespace tp::collectives
