// Collectives engine (see engine.hpp).
#include "core/collectives/engine.hpp"

#include "core/collectives/ring.hpp"
#include "core/rpc/rpc.hpp"
#include "core/transports/task_runtime.hpp"

#include <algorithm>

namespace tp::collectives {

namespace {

constexpr uint8_t kByName = 0, kById = 1;

} // namespace

CollectiveEngine::CollectiveEngine(transports::TaskRuntime& task, StreamNetwork& streams, RankTable ranks,
                                   std::shared_ptr<const std::vector<std::string>> processes, int rank,
                                   EngineOptions options)
    : task_(task), streams_(streams), channel_(task, std::move(ranks), rank), processes_(std::move(processes)),
      options_(options)
{
}

CollectiveEngine::CollectiveEngine(transports::TaskRuntime& task, StreamNetwork& streams, std::vector<RankInfo> ranks,
                                   std::vector<std::string> processes, int rank, EngineOptions options)
    : CollectiveEngine(task, streams, std::make_shared<const std::vector<RankInfo>>(std::move(ranks)),
                       std::make_shared<const std::vector<std::string>>(std::move(processes)), rank, options)
{
}

CollectiveEngine::~CollectiveEngine()
{
  alive_.reset(); // a tick still on the runtime's timer list finds the engine gone
  if (rpc_) rpc_->shutdown();
}

void CollectiveEngine::schedule_tick()
{
  std::weak_ptr<bool> alive = alive_;
  task_.runtime().after(options_.tick_seconds, [this, alive] {
    if (alive.lock()) tick();
  });
}

Status CollectiveEngine::start()
{
  if (int(processes_->size()) != channel_.size())
    return Error::at("", "processes", std::to_string(channel_.size()) + " (one per rank)",
                     std::to_string(processes_->size()));
  if (!options_.coordinator) return ok_status();
  rpc_ = std::make_unique<rpc::RpcNode>(task_.runtime(), streams_, options_.rpc_port);
  if (rank() == 0) {
    rpc_->add_method("Negotiate", [this](rpc::Payload req, rpc::Responder respond) {
      rpc::Reader r(req.bytes);
      uint64_t round = 0;
      uint32_t from = 0, n = 0;
      uint8_t idle = 0;
      if (!r.u64(round) || !r.u32(from) || !r.u8(idle) || !r.u32(n) || from == 0 || int(from) >= channel_.size())
        return respond(Error::at("", "Negotiate", "round, rank, idle flag and a request count", "a malformed frame"));
      RoundState& rs = rounds_[round];
      for (uint32_t i = 0; i < n; ++i) {
        uint8_t how = 0;
        std::string name;
        uint64_t bytes = 0;
        if (!r.u8(how) || !r.str(name, 4096) || !r.u64(bytes))
          return respond(Error::at("", "Negotiate", "a request entry", "a malformed frame"));
        TableEntry& e = table_[name];
        if (e.sizes.empty()) e.sizes.assign(size_t(channel_.size()), 0);
        if (e.sizes[from] == 0) {
          e.sizes[from] = bytes + 1; // +1: 0 means "not requested"
          if (++e.count == size_t(channel_.size())) ready_order_.push_back(name);
        }
      }
      ++rs.arrived;
      rs.idle += idle;
      rs.reply.push_back([respond](std::vector<Response> list, bool shutdown) {
        rpc::Writer w;
        w.u8(shutdown);
        w.u32(uint32_t(list.size()));
        for (const auto& x : list) {
          w.str(x.name);
          w.u8(x.error);
          w.str(x.message);
        }
        respond(rpc::Payload{w.take(), 0});
      });
      if (rs.own && rs.arrived == size_t(channel_.size() - 1)) on_round_complete(round);
    });
  }
  return rpc_->start();
}

void CollectiveEngine::begin_step(int64_t step, size_t expected)
{
  step_ = step;
  expected_ = expected;
  completed_ = 0;
  next_in_order_ = 0;
  if (!options_.coordinator || channel_.size() == 1) {
    active_ = false;
    return;
  }
  active_ = true;
  schedule_tick();
}

void CollectiveEngine::allreduce(int64_t step, const std::string& name, Tensor tensor,
                                 std::function<void(Result<Tensor>)> done)
{
  auto [it, inserted] = requests_.try_emplace(name);
  if (!inserted) return done(Error::at("", name, "one outstanding allreduce per name", "a second one"));
  it->second = Request{name, std::move(tensor), std::move(done)};
  new_requests_.push_back(name);
  if (!options_.coordinator || channel_.size() == 1) maybe_run_uncoordinated();
}

void CollectiveEngine::maybe_run_uncoordinated()
{
  if (busy_ || new_requests_.empty()) return;
  std::string name;
  if (order_.empty()) {
    name = new_requests_.front();
    new_requests_.pop_front();
  } else {
    if (next_in_order_ >= order_.size()) return;
    auto it = std::find(new_requests_.begin(), new_requests_.end(), order_[next_in_order_]);
    if (it == new_requests_.end()) return; // the next collective in graph order has not been requested here yet
    name = *it;
    new_requests_.erase(it);
    ++next_in_order_;
  }
  busy_ = true;
  ++stats_.collectives;
  run_ring("allreduce/" + name, requests_.at(name).tensor, [this, name](Result<Tensor> r) {
    busy_ = false;
    finish(name, std::move(r));
    maybe_run_uncoordinated();
  });
}

void CollectiveEngine::run_ring(const std::string& tag, Tensor t, std::function<void(Result<Tensor>)> done)
{
  if (runner_)
    runner_->allreduce(channel_, step_, tag, std::move(t), std::move(done));
  else
    ring_allreduce(channel_, step_, tag, std::move(t), std::move(done));
}

void CollectiveEngine::tick()
{
  if (!active_) return;
  ++round_;
  ++stats_.rounds;
  std::vector<std::string> names(new_requests_.begin(), new_requests_.end());
  new_requests_.clear();
  std::vector<uint64_t> sizes;
  for (const auto& n : names)
    sizes.push_back(requests_.at(n).tensor.total_bytes());
  const bool idle = completed_ == expected_ && requests_.empty();
  negotiate(round_, std::move(names), std::move(sizes), idle);
}

void CollectiveEngine::negotiate(uint64_t round, std::vector<std::string> names, std::vector<uint64_t> sizes, bool idle)
{
  auto after = [this](std::vector<Response> list, bool shutdown) {
    perform(std::move(list), [this, shutdown] {
      if (shutdown) {
        active_ = false;
        return;
      }
      schedule_tick();
    });
  };
  if (rank() == 0) {
    RoundState& rs = rounds_[round];
    for (size_t i = 0; i < names.size(); ++i) {
      TableEntry& e = table_[names[i]];
      if (e.sizes.empty()) e.sizes.assign(size_t(channel_.size()), 0);
      e.sizes[0] = sizes[i] + 1;
      if (++e.count == size_t(channel_.size())) ready_order_.push_back(names[i]);
    }
    rs.own = true;
    rs.idle += idle;
    own_reply_.push_back(after);
    if (rs.arrived == size_t(channel_.size() - 1)) on_round_complete(round);
    return;
  }
  // Requests: a name (and its size) the first time, a 4-byte id afterwards when the response cache is on.
  rpc::Writer w;
  w.u64(round);
  w.u32(uint32_t(rank()));
  w.u8(idle);
  w.u32(uint32_t(names.size()));
  uint64_t wire = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const bool cached = options_.response_cache && seen_.count(names[i]);
    stats_.cache_hits += cached;
    w.u8(cached ? kById : kByName);
    w.str(names[i]);
    w.u64(sizes[i]);
    // The real frame carries the name for the simulator's bookkeeping; the wire counts what the protocol sends.
    if (!cached && options_.request_bytes > names[i].size() + 13)
      wire += options_.request_bytes - (names[i].size() + 13);
  }
  rpc::Payload request{w.take(), wire};
  if (options_.first_mirrored_rank > 0 && rank() >= options_.first_mirrored_rank)
    request.server_copies = options_.mirrored_copies;
  rpc_->call((*processes_)[0], "Negotiate", std::move(request), [this, after](Result<rpc::Payload> p) {
    if (!p.ok()) {
      // The coordinator is gone: fail everything outstanding.
      active_ = false;
      std::vector<std::string> names;
      for (const auto& [n, _] : requests_)
        names.push_back(n);
      std::sort(names.begin(), names.end()); // in name order, whatever the hash's
      for (const auto& n : names)
        finish(n, p.error());
      return;
    }
    rpc::Reader r(p->bytes);
    uint8_t shutdown = 0;
    uint32_t n = 0;
    std::vector<Response> list;
    bool ok = r.u8(shutdown) && r.u32(n);
    for (uint32_t i = 0; ok && i < n; ++i) {
      Response x;
      uint8_t err = 0;
      ok = r.str(x.name, 4096) && r.u8(err) && r.str(x.message, 1 << 16);
      x.error = err;
      list.push_back(x);
    }
    if (!ok) list.clear();
    after(std::move(list), shutdown);
  });
}

void CollectiveEngine::on_round_complete(uint64_t round)
{
  RoundState rs = std::move(rounds_[round]);
  rounds_.erase(round);
  std::vector<Response> list;
  for (const auto& name : ready_order_) {
    Response x;
    x.name = name;
    const auto& sizes = table_[name].sizes;
    for (auto s : sizes)
      if (s != sizes[0]) {
        x.error = true;
        x.message = "mismatched allreduce sizes across ranks for " + name;
      }
    table_.erase(name);
    list.push_back(x);
  }
  ready_order_.clear();
  const bool shutdown = list.empty() && table_.empty() && rs.idle == size_t(channel_.size());
  for (auto& reply : rs.reply)
    reply(list, shutdown);
  auto own = std::move(own_reply_.front());
  own_reply_.erase(own_reply_.begin());
  own(list, shutdown);
}

void CollectiveEngine::finish(const std::string& name, Result<Tensor> r)
{
  auto it = requests_.find(name);
  if (it == requests_.end()) return;
  auto done = std::move(it->second.done);
  requests_.erase(it);
  ++completed_;
  done(std::move(r));
}

void CollectiveEngine::perform(std::vector<Response> list, std::function<void()> then)
{
  for (const auto& x : list)
    seen_[x.name] = true;
  perform_one(std::move(list), 0, std::move(then));
}

void CollectiveEngine::perform_one(std::vector<Response> list, size_t i, std::function<void()> then)
{
  if (i >= list.size()) return then();
  const Response& x = list[i];
  const auto request = x.error ? requests_.end() : requests_.find(x.name);
  if (request == requests_.end()) {
    finish(x.name, Error::at("", x.name, "matching requests on every rank", x.message.empty() ? "none" : x.message));
    return perform_one(std::move(list), i + 1, std::move(then));
  }
  // Fusion: the longest run of following tensors that fits the threshold.
  if (options_.fusion_threshold > 0) {
    std::vector<std::string> group;
    uint64_t bytes = 0;
    size_t j = i;
    for (; j < list.size() && !list[j].error; ++j) {
      const auto r = requests_.find(list[j].name);
      if (r == requests_.end()) break;
      const uint64_t b = r->second.tensor.total_bytes();
      if (!group.empty() && bytes + b > options_.fusion_threshold) break;
      group.push_back(list[j].name);
      bytes += b;
    }
    if (group.size() > 1) {
      auto next = [this, list, j, then]() mutable { perform_one(std::move(list), j, std::move(then)); };
      return run_fused(std::move(group), std::move(next));
    }
  }
  const std::string name = x.name;
  ++stats_.collectives;
  run_ring("allreduce/" + name, request->second.tensor,
           [this, name, list = std::move(list), i, then = std::move(then)](Result<Tensor> r) mutable {
             finish(name, std::move(r));
             perform_one(std::move(list), i + 1, std::move(then));
           });
}

void CollectiveEngine::run_fused(std::vector<std::string> names, std::function<void()> then)
{
  int64_t total = 0;
  std::vector<int64_t> offset;
  for (const auto& n : names) {
    offset.push_back(total);
    total += requests_.at(n).tensor.shape.num_elements();
  }
  const Location loc = requests_.at(names[0]).tensor.location();
  if (!fusion_buffer_.storage || fusion_buffer_.shape.num_elements() < total || fusion_buffer_.location() != loc) {
    auto b = task_.make_tensor(DataType::FLOAT, TensorShape{{total}}, loc, AllocatorAttributes{false, false, true});
    if (!b.ok()) {
      for (const auto& n : names)
        finish(n, b.error());
      return then();
    }
    fusion_buffer_ = b.value();
  }
  ++stats_.collectives;
  stats_.fused_tensors += names.size();
  auto f = std::make_shared<Fusion>();
  f->names = std::move(names);
  f->offset = std::move(offset);
  f->fused = Channel::view(fusion_buffer_, 0, total);
  f->tag = "fused/" + std::to_string(round_) + "/" + f->names[0];
  f->then = std::move(then);
  fuse_copy_in(f, 0);
}

Work CollectiveEngine::fusion_copy(Fusion& f, const Tensor& dst, const Tensor& src, uint64_t bytes) const
{
  Work w = Work::memcpy(*dst.buffer(), *src.buffer(), bytes);
  const bool one_gpu = dst.location().is_gpu() && dst.location() == src.location();
  w.queued = options_.batched_copies > 0 && one_gpu && f.copies % options_.batched_copies != 0;
  ++f.copies;
  return w;
}

void CollectiveEngine::fuse_copy_in(std::shared_ptr<Fusion> f, size_t k)
{
  // Copies in one after the other (as on one stream), then one allreduce of the packed buffer.
  if (k < f->names.size()) {
    const Tensor& in = requests_.at(f->names[k]).tensor;
    const Tensor dst = Channel::view(f->fused, f->offset[k], in.shape.num_elements());
    if (in.total_bytes() == 0) return fuse_copy_in(f, k + 1);
    task_.runtime().execute(fusion_copy(*f, dst, in, in.total_bytes()), [this, f, k](Status st) {
      if (!st.ok()) {
        for (const auto& n : f->names)
          finish(n, st.error());
        return f->then();
      }
      fuse_copy_in(f, k + 1);
    });
    return;
  }
  run_ring(f->tag, f->fused, [this, f](Result<Tensor> r) {
    if (!r.ok()) {
      for (const auto& n : f->names)
        finish(n, r.error());
      return f->then();
    }
    f->copies = 0;
    fuse_copy_out(f, r.value(), 0);
  });
}

void CollectiveEngine::fuse_copy_out(std::shared_ptr<Fusion> f, Tensor fused, size_t k)
{
  // Copies out into a fresh output per tensor, one after the other on the same stream as the copies in (Horovod's
  // MemcpyOutFusionBuffer); the fused operation, and so every tensor of it, is done when the last copy is.
  if (k == f->names.size()) {
    for (size_t i = 0; i < f->names.size(); ++i)
      finish(f->names[i], std::move(f->results[i]));
    return f->then();
  }
  const Tensor& in = requests_.at(f->names[k]).tensor;
  auto out = task_.make_tensor(DataType::FLOAT, in.shape, in.location(), AllocatorAttributes{false, false, true});
  if (!out.ok() || in.total_bytes() == 0) {
    f->results.push_back(std::move(out));
    return fuse_copy_out(f, std::move(fused), k + 1);
  }
  const Tensor src = Channel::view(fused, f->offset[k], in.shape.num_elements());
  const Tensor dst = out.value();
  task_.runtime().execute(fusion_copy(*f, dst, src, dst.total_bytes()), [this, f, fused, k, dst](Status st) mutable {
    if (st.ok())
      f->results.push_back(dst);
    else
      f->results.push_back(st.error());
    fuse_copy_out(f, std::move(fused), k + 1);
  });
}

} // namespace tp::collectives
