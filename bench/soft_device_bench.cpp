// The software verbs device against memcpy, measured in the same run: RDMA WRITE bandwidth for 1 MiB to 64 MiB
// (all posted back to back from the owner's loop, between two emulated processes) as a ratio of std::memcpy bandwidth
// for the same size (target >= 0.8), and the latency of a small WRITE (post to completion, median of 2000).
#include "emulator/emulation.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace tp;
using namespace tp::emu;
using clk = std::chrono::steady_clock;

int main()
{
  Emulation emu;
  auto& a = emu.add_process("a");
  auto& b = emu.add_process("b");
  const uint64_t max = 64ull << 20;
  auto ba = a.memory->allocate(max, AllocAttr::at(Location::host(0))).value();
  auto bb = b.memory->allocate(max, AllocAttr::at(Location::host(0))).value();
  std::memset(ba.data, 1, max);
  std::memset(bb.data, 2, max);
  const auto acc = verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_WRITE | verbs::Access::REMOTE_READ;
  auto ma = a.device->reg_mr(ba.addr, max, acc).value();
  auto mb = b.device->reg_mr(bb.addr, max, acc).value();
  auto cqa = std::move(a.device->create_cq(4096).value());
  auto cqb = std::move(b.device->create_cq(4096).value());
  std::atomic<uint64_t> completions{0};
  cqa->set_handler([&](const verbs::WorkCompletion&) { ++completions; });
  verbs::QpInitAttr ia;
  ia.send_cq = cqa.get();
  ia.recv_cq = cqa.get();
  auto qpa = std::move(a.device->create_qp(ia).value());
  ia.send_cq = cqb.get();
  ia.recv_cq = cqb.get();
  auto qpb = std::move(b.device->create_qp(ia).value());
  verbs::RcConnectOptions o;
  if (!verbs::bring_up_rc_qp(*qpa, 1, {b.device->port_address(), qpb->qp_num(), 2}, o).ok() ||
      !verbs::bring_up_rc_qp(*qpb, 2, {a.device->port_address(), qpa->qp_num(), 1}, o).ok()) {
    std::fprintf(stderr, "connect failed\n");
    return 1;
  }
  auto write = [&](uint64_t n, uint64_t off) {
    verbs::SendWr w;
    w.opcode = verbs::WrOpcode::RDMA_WRITE;
    w.sg_list = {{ba.addr + off, uint32_t(n), ma.lkey}};
    w.remote_addr = bb.addr + off;
    w.rkey = mb.rkey;
    emu.on(a, [&] { (void)qpa->post_send(w); });
  };
  std::printf("Software verbs device: RDMA WRITE bandwidth against memcpy (same sizes, same run)\n\n");
  std::printf("%10s %14s %14s %8s\n", "bytes", "WRITE GB/s", "memcpy GB/s", "ratio");
  std::vector<uint8_t> dst(max);
  for (uint64_t n = 1 << 20; n <= max; n *= 4) {
    const int iters = int(std::max<uint64_t>(8, (256ull << 20) / n));
    // memcpy reference: the same bytes, one thread
    auto t0 = clk::now();
    for (int i = 0; i < iters; ++i)
      std::memcpy(dst.data(), ba.data, n);
    const double mem = double(n) * iters / std::chrono::duration<double>(clk::now() - t0).count();
    completions = 0;
    t0 = clk::now();
    // Posted from the owner's loop in one go, as a protocol would (each post is a WQE on the send queue).
    emu.on(a, [&] {
      for (int i = 0; i < iters; ++i) {
        verbs::SendWr w;
        w.opcode = verbs::WrOpcode::RDMA_WRITE;
        w.sg_list = {{ba.addr, uint32_t(n), ma.lkey}};
        w.remote_addr = bb.addr;
        w.rkey = mb.rkey;
        (void)qpa->post_send(w);
      }
    });
    Emulation::wait_until([&] { return completions == uint64_t(iters); }, 60);
    const double wr = double(n) * iters / std::chrono::duration<double>(clk::now() - t0).count();
    std::printf("%10llu %14.2f %14.2f %8.3f\n", static_cast<unsigned long long>(n), wr * 1e-9, mem * 1e-9, wr / mem);
  }
  // Small-message latency: post one 8-byte WRITE, wait for its completion, 2000 times.
  std::vector<double> lat;
  for (int i = 0; i < 2000; ++i) {
    completions = 0;
    const auto t0 = clk::now();
    write(8, 0);
    while (completions == 0)
      std::this_thread::yield();
    lat.push_back(std::chrono::duration<double>(clk::now() - t0).count());
  }
  std::sort(lat.begin(), lat.end());
  std::printf("\n8-byte WRITE, post to completion seen by the poster: median %.1f us, p99 %.1f us\n",
              lat[lat.size() / 2] * 1e6, lat[lat.size() * 99 / 100] * 1e6);
  std::printf("(the post goes through the owner's event loop and the completion back through it: two thread hand-offs\n"
              "plus the wire thread's)\n");
  emu.on(a, [&] { qpa.reset(); });
  emu.on(b, [&] { qpb.reset(); });
  return 0;
}
