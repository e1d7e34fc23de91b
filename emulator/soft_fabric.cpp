// The software device's fabric (soft_device.hpp): the wire thread that runs queued work in order and after its
// delay, the devices attached to it by LID, and the process link that carries requests and responses to devices in
// other OS processes.
#include "emulator/core_pinning.hpp"
#include "emulator/process_wire.hpp"
#include "emulator/soft_qp.hpp"

#include <optional>
#include <stdexcept>

namespace tp::emu {

using namespace verbs;

// ---------------------------------------------------------------- fabric (the wire thread)

SoftFabric::SoftFabric(uint16_t first_lid) : next_lid_(first_lid)
{
  thread_ = std::thread([this, core = reserve_core()] {
    pin_this_thread_to(core);
    run();
  });
}

SoftFabric::~SoftFabric()
{
  link_.reset();
  {
    std::lock_guard<std::mutex> lock(q_mu_);
    stop_ = true;
  }
  q_cv_.notify_all();
  thread_.join();
}

uint16_t SoftFabric::attach(SoftDevice* dev)
{
  std::lock_guard<std::mutex> lock(state_mu_);
  const uint16_t lid = next_lid_++;
  if (link_ && !link_->owns(lid))
    throw std::logic_error("software fabric: more than " + std::to_string(ProcessLink::LIDS_PER_PROCESS) +
                           " devices in one linked process");
  devices_[lid] = dev;
  return lid;
}

void SoftFabric::detach(uint16_t lid)
{
  std::lock_guard<std::mutex> lock(state_mu_);
  devices_.erase(lid);
}

SoftDevice* SoftFabric::device(uint16_t lid) const
{
  auto it = devices_.find(lid);
  return it == devices_.end() ? nullptr : it->second;
}

void SoftFabric::submit(std::function<void()> op, double delay)
{
  {
    std::lock_guard<std::mutex> lock(q_mu_);
    if (delay <= 0)
      ready_.push_back(std::move(op));
    else
      delayed_.emplace(std::chrono::steady_clock::now() +
                           std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(delay)),
                       std::move(op));
  }
  q_cv_.notify_one();
}

void SoftFabric::run()
{
  std::unique_lock<std::mutex> lock(q_mu_);
  while (!stop_) {
    const auto now = std::chrono::steady_clock::now();
    while (!delayed_.empty() && delayed_.begin()->first <= now) {
      ready_.push_back(std::move(delayed_.begin()->second));
      delayed_.erase(delayed_.begin());
    }
    if (!ready_.empty()) {
      auto op = std::move(ready_.front());
      ready_.pop_front();
      lock.unlock();
      op();
      lock.lock();
      continue;
    }
    if (!delayed_.empty())
      q_cv_.wait_until(lock, delayed_.begin()->first);
    else
      q_cv_.wait(lock);
  }
}

// ---------------------------------------------------------------- between processes (the process link)

bool SoftFabric::reaches(uint16_t lid)
{
  return link_ && !link_->owns(lid) && link_->reaches(lid);
}

bool SoftFabric::send_request(const QpCore& q, const PendingSend& p, uint64_t len)
{
  if (!link_) return false;
  wire::RequestHeader h;
  h.seq = p.seq;
  h.remote_addr = p.wr.remote_addr;
  h.len = len;
  h.src_lid = q.dev.port_address().lid;
  h.dst_lid = q.attr.dest.lid;
  h.src_qpn = q.qpn;
  h.dst_qpn = q.attr.dest_qp_num;
  h.imm_data = p.wr.imm_data;
  h.rkey = p.wr.rkey;
  h.opcode = p.wr.opcode;
  std::vector<wire::Sge> sges;
  if (!p.wr.inline_data)
    for (const auto& s : p.wr.sg_list)
      sges.push_back({s.addr, s.length});
  return link_->send_request(h.dst_lid, wire::encode_request(h, sges, p.inline_bytes.data(),
                                                             p.wr.inline_data ? uint32_t(p.inline_bytes.size()) : 0));
}

std::vector<uint8_t> SoftFabric::answer_request(const std::vector<uint8_t>& body, const PeerArena& requester)
{
  wire::Response out;
  ResponderVerdict v = ResponderVerdict::REM_INV_REQ;
  uint8_t rnr = 0;
  // The whole request, or when it does not decode, its header at least: whom to answer.
  const auto req = wire::decode_request(body.data(), body.size());
  if (const auto h = req ? std::optional(req->h) : wire::decode_request_header(body.data(), body.size())) {
    out.seq = h->seq;
    out.qpn = h->src_qpn;
    out.lid = h->src_lid;
  }
  if (req) {
    std::vector<Span> payload;
    bool mapped = true;
    if (req->inline_len > 0) payload.push_back({reinterpret_cast<uint64_t>(req->inline_data), req->inline_len});
    for (const auto& sg : req->sges) {
      uint8_t* local = requester.translate(sg.addr, sg.length);
      if (!local && sg.length > 0) mapped = false; // the requester's memory is not in its shared arena
      payload.push_back({reinterpret_cast<uint64_t>(local), sg.length});
    }
    const wire::RequestHeader& r = req->h;
    std::lock_guard<std::mutex> lock(state_mu_);
    SoftDevice* pdev = device(r.dst_lid);
    QpCore* peer = pdev ? pdev->qp(r.dst_qpn) : nullptr;
    // An RC QP hears only from the QP it is connected to; anything else gets no answer a requester could act on.
    if (!peer || peer->attr.dest.lid != r.src_lid || peer->attr.dest_qp_num != r.src_qpn)
      v = ResponderVerdict::NOT_READY;
    else if (!mapped)
      v = ResponderVerdict::REM_OP;
    else
      v = respond(pdev, peer, ResponderRequest{r.opcode, r.len, r.rkey, r.remote_addr, r.imm_data}, payload, payload,
                  rnr);
  }
  out.verdict = uint8_t(v);
  out.rnr_timer = rnr;
  return wire::encode_response(out);
}

void SoftFabric::take_response(const std::vector<uint8_t>& body)
{
  auto r = wire::decode_response(body.data(), body.size());
  if (!r || r->verdict > uint8_t(ResponderVerdict::REM_OP)) return;
  std::lock_guard<std::mutex> lock(state_mu_);
  SoftDevice* d = device(r->lid);
  QpCore* q = d ? d->qp(r->qpn) : nullptr;
  if (q) q->response(r->seq, ResponderVerdict(r->verdict), r->rnr_timer);
}

Status SoftFabric::link_processes(const std::string& dir, SharedArena& arena)
{
  std::lock_guard<std::mutex> lock(state_mu_);
  if (link_) return Error::at("", "link_processes", "a fabric not linked yet", "linked");
  ProcessLink::Handlers h;
  h.on_request = [this](const std::vector<uint8_t>& body, const PeerArena& requester) {
    return answer_request(body, requester);
  };
  h.on_response = [this](const std::vector<uint8_t>& body) { take_response(body); };
  h.on_peer_lost = [this](uint16_t first_lid) {
    std::lock_guard<std::mutex> lock(state_mu_);
    for (auto& [lid, d] : devices_)
      d->for_each_qp([&](QpCore& q) { q.peer_lost(first_lid, ProcessLink::LIDS_PER_PROCESS); });
  };
  const uint16_t first = devices_.empty() ? next_lid_ : devices_.begin()->first;
  auto l = ProcessLink::open(dir, ProcessLink::owner_of(first), arena, std::move(h));
  if (!l.ok()) return l.error();
  link_ = std::move(l.value());
  return ok_status();
}

} // namespace tp::emu
