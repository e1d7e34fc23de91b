// TCP incast at the receivers' switch ports inside the simulated gRPC path (see incast_ports.hpp).
#include "sim/incast_ports.hpp"

#include "models/congestion/tcp_incast.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace tp::sim {

uint64_t IncastPorts::begin_burst(size_t src, size_t dst, double now)
{
  // Bursts that ended long before anything now running can overlap are forgotten (never one still on the wire).
  for (auto it = bursts_.begin(); it != bursts_.end();)
    it = it->second.on_wire == 0 && it->second.last < now - 10 * min_rto_ ? bursts_.erase(it) : std::next(it);
  const uint64_t id = next_++;
  bursts_[id] = {src, dst, now, now, 0};
  return id;
}

void IncastPorts::touch(uint64_t burst, double now)
{
  auto it = bursts_.find(burst);
  if (it != bursts_.end()) it->second.last = std::max(it->second.last, now);
}

void IncastPorts::on_wire(uint64_t burst, int delta)
{
  auto it = bursts_.find(burst);
  if (it != bursts_.end()) it->second.on_wire = std::max(0, it->second.on_wire + delta);
}

bool IncastPorts::running(uint64_t id, const Burst& b, uint64_t self, double started, double now) const
{
  return b.src != b.dst && b.start <= now && (id == self || b.on_wire > 0 || b.last + min_rto_ > started);
}

int IncastPorts::congested_ports(uint64_t self, double started, double now) const
{
  std::map<size_t, std::set<size_t>> senders_into;
  for (const auto& [id, b] : bursts_)
    if (running(id, b, self, started, now)) senders_into[b.dst].insert(b.src);
  int n = 0;
  for (const auto& [dst, senders] : senders_into)
    n += senders.size() >= 2 ? 1 : 0;
  return std::max(n, 1);
}

double IncastPorts::charge(uint64_t burst, double bytes, double rate, double link_delay, double started, double now,
                           const std::string& process, const std::string& peer)
{
  const auto self = bursts_.find(burst);
  if (self == bursts_.end() || !(bytes > 0) || !(rate > 0)) return 0;
  // The machines whose bursts into the same receiver run while this first message is on the wire: one with a
  // message on the wire, or with traffic within the last minimum RTO (not yet idle long enough to have ended).
  std::set<size_t> senders;
  for (const auto& [id, b] : bursts_)
    if (b.dst == self->second.dst && running(id, b, burst, started, now)) senders.insert(b.src);
  const int n = int(senders.size());
  if (n < 2) return 0;
  const int rank = int(std::distance(senders.begin(), senders.find(self->second.src)));
  const int k = int((uint64_t(rank) + charges_into_[self->second.dst]++) % uint64_t(n));
  uint64_t size = 65536; // the model's size: a power of two at or above the burst's
  while (double(size) < bytes && size < (uint64_t(1) << 40))
    size <<= 1;
  const double delay = std::max(link_delay, 1e-7);
  const uint64_t buffer = buffer_ > 0 ? buffer_
                                      : models::dynamic_threshold_share(shared_->lossy_pool, shared_->lossy_alpha,
                                                                        congested_ports(burst, started, now));
  const auto key = std::make_tuple(n, size, rate, delay, buffer);
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    models::IncastConfig c;
    c.senders = n;
    c.bytes_per_sender = size;
    c.link_rate = rate;
    c.link_delay = delay;
    c.buffer_bytes = buffer;
    c.min_rto = min_rto_;
    c.start_jitter = std::min(1e-6, 2 * delay); // the workers are not in lock step
    // Incast is chaotic at the nanosecond (whether a resend finds the port's last slot): each sender's charge is
    // its mean excess over five runs with the senders' starts spread over 1 us (seeds 1-5).
    constexpr int runs = 5;
    std::vector<double> excess(size_t(n), 0);
    const double ideal = models::max_min_incast(c).completion;
    for (int seed = 1; seed <= runs; ++seed) {
      c.seed = uint64_t(seed);
      auto r = models::run_incast_model("tcp-incast", c);
      if (!r.ok()) { // never a silent zero: the job reports it (Simulation::incast_error)
        if (error_.empty())
          error_ = "the tcp-incast model refused " + std::to_string(n) + " senders of " + std::to_string(size) +
                   " bytes through a " + std::to_string(buffer) + "-byte port: " + r.error().message();
        break;
      }
      for (int i = 0; i < n && i < int(r->per_sender.size()); ++i)
        excess[size_t(i)] += std::max(0.0, r->per_sender[size_t(i)].completion - ideal) / runs;
    }
    it = cache_.emplace(key, std::move(excess)).first;
  }
  const double extra = it->second[size_t(k)];
  buffer_min_ = buffer_min_ == 0 ? buffer : std::min(buffer_min_, buffer);
  buffer_max_ = std::max(buffer_max_, buffer);
  if (extra > 0) {
    windows_.push_back({now, now + extra, process, peer});
    ++charged_;
  }
  return extra;
}

} // namespace tp::sim
