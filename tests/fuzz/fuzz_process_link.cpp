// libFuzzer target: the bytes another OS process sends over the emulator's process link (emulator/process_wire.hpp),
// read as ProcessLink reads a connection: a hello, then frames (wire::read_frames) whose request / response bodies a
// real software device answers (SoftFabric::answer_request / take_response). The device has a registered region
// between PROT_NONE guard pages, an RC QP connected to lid 2 / qpn 77 with two receives posted, and the requester's
// arena mapped as a peer's (PeerArena: between guard pages too). A malformed frame or request must be refused or
// NAKed; an access just outside the region or the arena faults. Not reached: the sockets themselves, and responses
// that complete a WR (this QP never sends).
// Seeds (tests/fuzz/make_wire_seeds.py) use the addresses, key and QP number below, which setup checks.
#include "emulator/host_memory.hpp"
#include "emulator/loop_runtime.hpp"
#include "emulator/process_wire.hpp"
#include "emulator/shared_arena.hpp"
#include "emulator/soft_device.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace tp;
using namespace tp::emu;

namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kRegionAt = 0x700000000000ull; ///< a guard page, then the registered region, then a guard page
constexpr uint64_t kRegionBytes = 64 << 10;
constexpr uint64_t kRequesterBase = 0x500000000000ull; ///< where the "peer" sees its arena
constexpr uint64_t kRequesterBytes = 1 << 20;
constexpr uint32_t kRkey = 0x1100000; ///< the first key of lid 1's MR table (core/device/mr_table.cpp)
constexpr uint32_t kQpn = 0x100;      ///< the soft device's first QP number
constexpr uint16_t kPeerLid = 2;
constexpr uint32_t kPeerQpn = 77;

[[noreturn]] void die(const char* what)
{
  std::fprintf(stderr, "fuzz_process_link setup: %s\n", what);
  std::abort();
}

struct Responder {
  HostMemory memory;
  LoopRuntime rt{"fuzz", memory};
  SoftFabric fabric{1};
  SoftDevice device{fabric, rt};
  uint8_t* region = nullptr;
  verbs::MemoryRegion mr;
  std::unique_ptr<verbs::CompletionQueue> cq;
  std::unique_ptr<verbs::QueuePair> qp;
  std::unique_ptr<SharedArena> requester_memory;
  std::unique_ptr<PeerArena> requester;

  Responder()
  {
    void* p = ::mmap(reinterpret_cast<void*>(kRegionAt), kRegionBytes + 2 * kPage, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != reinterpret_cast<void*>(kRegionAt)) die("cannot map the registered region at its fixed address");
    region = static_cast<uint8_t*>(p) + kPage;
    if (::mprotect(region, kRegionBytes, PROT_READ | PROT_WRITE) != 0) die("mprotect");
    auto m = device.reg_mr(reinterpret_cast<uint64_t>(region), kRegionBytes,
                           verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_WRITE | verbs::Access::REMOTE_READ);
    if (!m.ok() || m->rkey != kRkey) die("the region's rkey is not the one the seeds use");
    mr = *m;
    cq = std::move(device.create_cq(1024).value());
    cq->set_handler([](const verbs::WorkCompletion&) {});
    verbs::QpInitAttr ia;
    ia.send_cq = cq.get();
    ia.recv_cq = cq.get();
    qp = std::move(device.create_qp(ia).value());
    if (qp->qp_num() != kQpn) die("the QP number is not the one the seeds use");
    auto a = SharedArena::create(kRequesterBytes, "fuzz-requester");
    if (!a.ok()) die("shared arena");
    requester_memory = std::move(a.value());
    auto peer = PeerArena::map(::dup(requester_memory->fd()), kRequesterBase, kRequesterBytes);
    if (!peer.ok()) die("mapping the requester's arena");
    requester = std::move(peer.value());
  }

  /// The QP as a fresh connection: reset, connected to the fuzzed peer, two 4 KiB receives in the region's upper half.
  void reset_qp()
  {
    verbs::QpAttr reset;
    reset.qp_state = verbs::QpState::RESET;
    if (!qp->modify(reset, verbs::QpAttrMask::STATE).ok()) die("QP reset");
    verbs::RcConnectOptions o;
    o.min_rnr_timer = 1;
    if (!verbs::bring_up_rc_qp(*qp, 1, {{kPeerLid, {}}, kPeerQpn, 1}, o).ok()) die("QP bring-up");
    for (uint64_t i = 0; i < 2; ++i) {
      verbs::RecvWr rw;
      rw.wr_id = i;
      rw.sg_list.push_back({reinterpret_cast<uint64_t>(region) + kRegionBytes / 2 + i * 4096, 4096, mr.lkey});
      if (!qp->post_recv(rw).ok()) die("post_recv");
    }
  }
};

Responder& responder()
{
  static Responder* r = new Responder; // never destroyed: libFuzzer exits from inside the run
  return *r;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  Responder& r = responder();
  r.reset_qp();
  size_t off = 0;
  // As the link reads a connection: the hello first (accept_loop: one fixed-size read), then frames (read_loop),
  // where a second hello, like any malformed frame, ends the connection.
  if (size > 0 && data[0] == wire::HELLO) {
    const size_t n = std::min(size, wire::FRAME_HEAD_BYTES + wire::HELLO_BODY_BYTES);
    if (auto h = wire::decode_hello(data, n))
      if (wire::encode_hello(*h) != std::vector<uint8_t>(data, data + n)) __builtin_trap(); // round trip
    off = n;
  }
  auto recv = [&](uint8_t* p, size_t n) {
    if (size - off < n) return false;
    std::memcpy(p, data + off, n);
    off += n;
    return true;
  };
  std::vector<uint8_t> body;
  wire::read_frames(recv, body, [&](uint8_t type, const std::vector<uint8_t>& b) {
    if (type == wire::REQUEST) {
      if (auto req = wire::decode_request(b.data(), b.size()))
        if (wire::encode_request(req->h, req->sges, req->inline_data, req->inline_len) != b) __builtin_trap();
      const auto answer = r.fabric.answer_request(b, *r.requester);
      const auto resp = wire::decode_response(answer.data(), answer.size());
      if (!resp || resp->verdict > uint8_t(ResponderVerdict::REM_OP)) __builtin_trap(); // always a valid answer
      return true;
    }
    if (type == wire::RESPONSE) {
      r.fabric.take_response(b);
      return true;
    }
    return false;
  });
  return 0;
}
