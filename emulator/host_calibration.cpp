// Run-time calibration of the software device's host (see host_calibration.hpp).
#include "emulator/host_calibration.hpp"
#include "emulator/core_pinning.hpp"

#include "core/rpc/rpc.hpp"
#include "emulator/host_memory.hpp"
#include "emulator/local_stream.hpp"
#include "emulator/loop_runtime.hpp"
#include "emulator/soft_device.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <future>

namespace tp::emu {

namespace {

using clk = std::chrono::steady_clock;
/// WRITEs per burst when timing the wire thread's operations (measure_device_write).
constexpr int WIRE_BURST = 32;

double seconds_since(clk::time_point t0)
{
  return std::chrono::duration<double>(clk::now() - t0).count();
}

double median(std::vector<double> v)
{
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Cache size of a level from sysfs (cpu0), else sysconf, else 0.
double cache_size(int level)
{
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream lv(dir + "level"), ty(dir + "type"), sz(dir + "size");
    int l = 0;
    std::string type, size;
    if (!(lv >> l) || !(ty >> type) || !(sz >> size)) continue;
    if (l != level || type == "Instruction") continue;
    double v = std::atof(size.c_str());
    if (!size.empty() && size.back() == 'K') v *= 1024;
    if (!size.empty() && size.back() == 'M') v *= 1024 * 1024;
    return v;
  }
#ifdef _SC_LEVEL2_CACHE_SIZE
  const long v = sysconf(level == 2 ? _SC_LEVEL2_CACHE_SIZE : _SC_LEVEL3_CACHE_SIZE);
  if (v > 0) return double(v);
#endif
  return 0;
}

/// Median time of one memcpy of `n` bytes: batches of copies long enough to time, the median batch.
double time_memcpy(uint8_t* dst, const uint8_t* src, uint64_t n, double budget)
{
  int per_batch = 1;
  for (;;) {
    const auto t0 = clk::now();
    for (int i = 0; i < per_batch; ++i)
      std::memcpy(dst, src, n);
    if (seconds_since(t0) > 50e-6 || per_batch >= (1 << 16)) break;
    per_batch *= 2;
  }
  std::vector<double> batches;
  const auto start = clk::now();
  while (batches.size() < 3 || (seconds_since(start) < budget && batches.size() < 15)) {
    const auto t0 = clk::now();
    for (int i = 0; i < per_batch; ++i)
      std::memcpy(dst, src, n);
    batches.push_back(seconds_since(t0) / per_batch);
  }
  return median(batches);
}

/// Run `fn` on `rt`'s loop; `fn` calls the completion it is given when it has finished (possibly later).
void on_loop(LoopRuntime& rt, const std::function<void(std::function<void()>)>& fn)
{
  std::promise<void> p;
  auto f = p.get_future();
  rt.post([&] { fn([&p] { p.set_value(); }); });
  f.wait();
}

/// memcpy against size, one thread, warm buffers (as a tensor just written by its producer); the bandwidth
/// of each cache level and of DRAM.
void measure_memcpy(SoftHostCalibration& c, bool quick)
{
  const double budget = quick ? 0.002 : 0.03; // seconds per memcpy size
  const uint64_t max = quick ? (16ull << 20) : (256ull << 20);
  std::vector<uint8_t> src(max, 1), dst(max, 2);
  for (uint64_t n = 4096; n <= max; n *= 4)
    c.memcpy_samples.push_back({n, time_memcpy(dst.data(), src.data(), n, budget)});
  c.memcpy_call_overhead = time_memcpy(dst.data(), src.data(), 64, budget);
  auto bandwidth_where = [&](auto pred, double fallback) {
    double best = 0;
    for (const auto& s : c.memcpy_samples)
      if (pred(2.0 * double(s.bytes))) best = double(s.bytes) / std::max(1e-12, s.seconds - c.memcpy_call_overhead);
    return best > 0 ? best : fallback;
  };
  const auto& last = c.memcpy_samples.back();
  c.memcpy_dram_bandwidth = double(last.bytes) / last.seconds;
  const double l2 = c.l2_size > 0 ? c.l2_size : 256 * 1024.0;
  const double l3 = c.l3_size > 0 ? c.l3_size : 8 * 1024 * 1024.0;
  c.l2_size = l2;
  c.l3_size = l3;
  // The largest sample whose working set (source + destination) fits half of the level: away from its edge.
  c.memcpy_l2_bandwidth = bandwidth_where([&](double ws) { return ws <= l2 / 2; }, c.memcpy_dram_bandwidth);
  c.memcpy_llc_bandwidth =
      bandwidth_where([&](double ws) { return ws > 2 * l2 && ws <= l3 / 2; }, c.memcpy_l2_bandwidth);
}

/// The device's latency as perftest measures a NIC's: an 8-byte RDMA WRITE posted from the owner's loop, to its
/// completion there. The post wakes the wire thread, the completion wakes the loop: two hand-offs.
Status measure_device_write(SoftHostCalibration& c, HostMemory& mem, LoopRuntime& a, LoopRuntime& b, int pings)
{
  SoftFabric fabric;
  SoftDevice da(fabric, a, "calibrate-a"), db(fabric, b, "calibrate-b");
  auto ba = mem.allocate(4096, AllocAttr::at(Location::host(0)));
  auto bb = mem.allocate(4096, AllocAttr::at(Location::host(0)));
  if (!ba.ok() || !bb.ok()) return Error::msg("calibration: cannot allocate 4 KiB");
  const auto acc = verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_WRITE;
  auto ma = da.reg_mr(ba->addr, 4096, acc);
  auto mb = db.reg_mr(bb->addr, 4096, acc);
  auto cqa = da.create_cq(2 * WIRE_BURST);
  auto cqb = db.create_cq(16);
  if (!ma.ok() || !mb.ok() || !cqa.ok() || !cqb.ok()) return Error::msg("calibration: software device set-up failed");
  verbs::QpInitAttr ia;
  ia.send_cq = cqa->get();
  ia.recv_cq = cqa->get();
  auto qa = da.create_qp(ia);
  ia.send_cq = cqb->get();
  ia.recv_cq = cqb->get();
  auto qb = db.create_qp(ia);
  if (!qa.ok() || !qb.ok()) return Error::msg("calibration: software device set-up failed");
  verbs::RcConnectOptions co;
  if (!verbs::bring_up_rc_qp(*qa.value(), 1, {db.port_address(), qb.value()->qp_num(), 2}, co).ok() ||
      !verbs::bring_up_rc_qp(*qb.value(), 2, {da.port_address(), qa.value()->qp_num(), 1}, co).ok())
    return Error::msg("calibration: software device QPs did not connect");
  std::vector<double> lat;
  bool failed = false; // a refused post or an error completion: the measurements below are not of a working device
  std::function<void()> finished_all;
  clk::time_point t0;
  // One 8-byte RDMA WRITE from a's buffer to b's; false if the QP refused it.
  auto post_write = [&] {
    verbs::SendWr w;
    w.opcode = verbs::WrOpcode::RDMA_WRITE;
    w.sg_list = {{ba->addr, 8, ma->lkey}};
    w.remote_addr = bb->addr;
    w.rkey = mb->rkey;
    return qa.value()->post_send(w).ok();
  };
  auto post = [&] {
    t0 = clk::now();
    if (!post_write()) { // nothing will complete: stop here
      failed = true;
      finished_all();
    }
  };
  cqa.value()->set_handler([&](const verbs::WorkCompletion& wc) {
    if (!wc.ok()) { // one WRITE outstanding at a time: nothing else will complete
      failed = true;
      finished_all();
      return;
    }
    lat.push_back(seconds_since(t0));
    if (int(lat.size()) == pings)
      finished_all();
    else
      post();
  });
  on_loop(a, [&](std::function<void()> finished) {
    finished_all = finished;
    post();
  });
  c.write_latency = lat.empty() ? std::nan("") : median(lat);
  c.handoff = c.write_latency / 2;
  // A WRITE's time in a burst: bursts of WIRE_BURST 8-byte WRITEs posted back to back, each timed from the
  // first post to the last completion, per WRITE (the first WRITE's latency spread over the burst). A refused post
  // counts as done, so that a burst always ends; it, or an error completion, makes the calibration an error.
  std::vector<double> per_op;
  int done_in_burst = 0;
  auto burst = [&] {
    done_in_burst = 0;
    t0 = clk::now();
    for (int k = 0; k < WIRE_BURST; ++k)
      if (!post_write()) {
        failed = true;
        ++done_in_burst;
      }
    if (done_in_burst == WIRE_BURST) finished_all(); // nothing posted: no completion will come
  };
  const int bursts = std::max(5, pings / WIRE_BURST);
  cqa.value()->set_handler([&](const verbs::WorkCompletion& wc) {
    if (!wc.ok()) failed = true;
    if (++done_in_burst < WIRE_BURST) return;
    per_op.push_back(seconds_since(t0) / WIRE_BURST);
    if (int(per_op.size()) == bursts || failed)
      finished_all();
    else
      burst();
  });
  if (!failed)
    on_loop(a, [&](std::function<void()> finished) {
      finished_all = finished;
      burst();
    });
  c.wire_op_time = per_op.empty() ? std::nan("") : median(per_op);
  on_loop(a, [&](std::function<void()> finished) {
    qa.value().reset();
    finished();
  });
  on_loop(b, [&](std::function<void()> finished) {
    qb.value().reset();
    finished();
  });
  mem.free(ba.value());
  mem.free(bb.value());
  if (failed)
    return Error::msg("calibration: the software device refused or failed an 8-byte WRITE (a device fault, not a "
                      "busy machine)");
  return ok_status();
}

/// The round trip of an empty work item through a loop.
void measure_work_round_trip(SoftHostCalibration& c, LoopRuntime& a, int pings)
{
  std::vector<double> rt;
  for (int i = 0; i < pings / 2; ++i)
    on_loop(a, [&](std::function<void()> finished) {
      const auto t0 = clk::now();
      a.execute(Work::cpu(0, 0), [&, t0, finished](Status) {
        rt.push_back(seconds_since(t0));
        finished();
      });
    });
  c.work_round_trip = median(rt);
}

/// What a timer of 1 us on a loop really takes (the loop's wake-up after a timed wait).
void measure_timer(SoftHostCalibration& c, LoopRuntime& a, int pings)
{
  std::vector<double> t;
  for (int i = 0; i < pings / 4; ++i)
    on_loop(a, [&](std::function<void()> finished) {
      const auto t0 = clk::now();
      a.after(1e-6, [&, t0, finished] {
        t.push_back(seconds_since(t0));
        finished();
      });
    });
  c.timer_1us = median(t);
}

/// The serialization pass, through a work item (its round trip taken off).
Status measure_serialization(SoftHostCalibration& c, HostMemory& mem, LoopRuntime& a, bool quick)
{
  const uint64_t n = quick ? (8ull << 20) : (64ull << 20);
  auto buf = mem.allocate(n, AllocAttr::at(Location::host(0)));
  if (!buf.ok()) return buf.error();
  std::vector<double> t;
  for (int i = 0; i < 5; ++i)
    on_loop(a, [&](std::function<void()> finished) {
      const auto t0 = clk::now();
      a.execute(Work::serialize(buf.value(), n), [&, t0, finished](Status) {
        t.push_back(seconds_since(t0));
        finished();
      });
    });
  c.serialize_bandwidth = double(n) / std::max(1e-9, median(t) - c.work_round_trip);
  mem.free(buf.value());
  return ok_status();
}

/// Registration on the software device: one page, and a large region.
Status measure_registration(SoftHostCalibration& c, HostMemory& mem, LoopRuntime& a, bool quick)
{
  SoftFabric fabric;
  SoftDevice dev(fabric, a, "calibrate");
  const uint64_t big = quick ? (4ull << 20) : (64ull << 20);
  auto buf = mem.allocate(big, AllocAttr::at(Location::host(0)));
  if (!buf.ok()) return buf.error();
  auto reg = [&](uint64_t n) {
    std::vector<double> t;
    for (int i = 0; i < 50; ++i) {
      const auto t0 = clk::now();
      auto mr = dev.reg_mr(buf->addr, n, verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_WRITE);
      if (mr.ok()) (void)dev.dereg_mr(mr.value());
      t.push_back(seconds_since(t0));
    }
    return median(t);
  };
  const double small = reg(4096), large = reg(big);
  c.register_fixed = small;
  c.register_per_page = std::max(0.0, (large - small) / (double(big) / 4096 - 1));
  mem.free(buf.value());
  return ok_status();
}

/// An RPC over an in-process stream whose caller copies the payload in and whose callee copies it out (a
/// socket's two copies): the emulated "TCP" a gRPC-like transport sees.
Status measure_stream(SoftHostCalibration& c, LoopRuntime& a, LoopRuntime& b, bool quick, int pings)
{
  LocalStreamHub hub;
  LocalStreamNetwork na(hub, "calibrate-a", a), nb(hub, "calibrate-b", b);
  rpc::RpcNode server(b, nb, 7), client(a, na, 7);
  const uint64_t n = quick ? (4ull << 20) : (32ull << 20);
  std::vector<uint8_t> in(n, 3), out(n, 0);
  std::atomic<double> t_out{0};
  const auto t_base = clk::now();
  server.add_method("calibrate", [&](rpc::Payload p, rpc::Responder respond) {
    std::memcpy(out.data(), p.bytes.data(), std::min<size_t>(n, p.bytes.size()));
    t_out = seconds_since(t_base);
    respond(rpc::Payload{});
  });
  Status st = ok_status();
  on_loop(b, [&](std::function<void()> finished) {
    st = server.start();
    finished();
  });
  if (!st.ok()) return st.error();
  std::vector<double> one_way;
  for (int i = 0; i < 6; ++i) {
    double t_in = 0;
    on_loop(a, [&](std::function<void()> finished) {
      t_in = seconds_since(t_base);
      rpc::Payload p;
      p.bytes.resize(n);
      std::memcpy(p.bytes.data(), in.data(), n);
      client.call("calibrate-b", "calibrate", std::move(p), [finished](Result<rpc::Payload>) { finished(); });
    });
    if (i > 0) one_way.push_back(t_out - t_in); // the first includes connecting
  }
  // Small RPCs: the round trip is two deliveries, each the stream's one-way latency.
  std::vector<double> rtt;
  for (int i = 0; i < pings / 4; ++i)
    on_loop(a, [&](std::function<void()> finished) {
      const auto t0 = clk::now();
      rpc::Payload p;
      p.bytes.assign(64, 1);
      client.call("calibrate-b", "calibrate", std::move(p), [&, t0, finished](Result<rpc::Payload>) {
        rtt.push_back(seconds_since(t0));
        finished();
      });
    });
  on_loop(a, [&](std::function<void()> finished) {
    client.shutdown();
    finished();
  });
  on_loop(b, [&](std::function<void()> finished) {
    server.shutdown();
    finished();
  });
  c.stream_latency = median(rtt) / 2;
  c.stream_bandwidth = double(n) / std::max(1e-9, median(one_way) - c.stream_latency);
  return ok_status();
}

/// How much slower than DRAM an LLC-resident copy may measure before the calibration counts it as disturbed: 10 %,
/// the spread of repeated memcpy timings on a quiet machine (the quick calibration's largest size may itself sit in
/// a large LLC, so the two rates can be equal).
constexpr double LLC_NOISE = 0.9;

/// The two invariants other work on the machine breaks: the LLC copy no slower than DRAM (within LLC_NOISE) and the
/// device latency the same twice (within a factor of 2). The error names the figure and says what to do.
Status check_undisturbed(const SoftHostCalibration& c)
{
  const char* busy = " (other work on this machine disturbed the measurement: run it on a quiet machine, or again)";
  if (c.memcpy_llc_bandwidth < LLC_NOISE * c.memcpy_dram_bandwidth)
    return Error::at("host calibration", "memcpy_llc_bandwidth",
                     "at least 90 % of memcpy_dram_bandwidth (" + std::to_string(c.memcpy_dram_bandwidth * 1e-9) +
                         " GB/s): a copy within the last-level cache is not slower than one from DRAM",
                     std::to_string(c.memcpy_llc_bandwidth * 1e-9) + " GB/s" + busy);
  const double lo = std::min(c.write_latency, c.write_latency_repeat);
  const double hi = std::max(c.write_latency, c.write_latency_repeat);
  if (hi > 2 * lo)
    return Error::at("host calibration", "write_latency", "the same device latency twice, within a factor of 2",
                     std::to_string(c.write_latency * 1e6) + " us, then " +
                         std::to_string(c.write_latency_repeat * 1e6) + " us" + busy);
  return ok_status();
}

/// The memcpy sweep and the device latency, measured again while they break check_undisturbed (a busy machine), up
/// to three times.
Status measure_memcpy_and_latency(SoftHostCalibration& c, HostMemory& mem, LoopRuntime& a, LoopRuntime& b, bool quick,
                                  int pings)
{
  Status st = ok_status();
  for (int attempt = 0; attempt < 3; ++attempt) {
    c.memcpy_samples.clear();
    measure_memcpy(c, quick);
    st = measure_device_write(c, mem, a, b, pings);
    if (!st.ok()) return st;
    const double first = c.write_latency, first_burst = c.wire_op_time;
    st = measure_device_write(c, mem, a, b, pings);
    if (!st.ok()) return st;
    c.write_latency_repeat = c.write_latency;
    c.write_latency = first;
    c.wire_op_time = first_burst; // the same run as write_latency, printed beside it
    c.handoff = first / 2;
    if (check_undisturbed(c).ok()) break;
  }
  return st;
}

} // namespace

Status check_calibration(const SoftHostCalibration& c)
{
  const std::pair<const char*, double> positive[] = {
      {"memcpy_l2_bandwidth", c.memcpy_l2_bandwidth},
      {"memcpy_llc_bandwidth", c.memcpy_llc_bandwidth},
      {"memcpy_dram_bandwidth", c.memcpy_dram_bandwidth},
      {"memcpy_call_overhead", c.memcpy_call_overhead},
      {"write_latency", c.write_latency},
      {"write_latency_repeat", c.write_latency_repeat},
      {"wire_op_time", c.wire_op_time},
      {"work_round_trip", c.work_round_trip},
      {"timer_1us", c.timer_1us},
      {"serialize_bandwidth", c.serialize_bandwidth},
      {"register_fixed", c.register_fixed},
      {"stream_latency", c.stream_latency},
      {"stream_bandwidth", c.stream_bandwidth},
  };
  for (const auto& [name, v] : positive)
    if (!(v > 0) || !std::isfinite(v))
      return Error::at("host calibration", name, "a positive, finite measurement", std::to_string(v));
  if (!(c.register_per_page >= 0) || !std::isfinite(c.register_per_page))
    return Error::at("host calibration", "register_per_page", "a finite cost >= 0",
                     std::to_string(c.register_per_page));
  return check_undisturbed(c);
}

Result<SoftHostCalibration> measure_soft_host(bool quick)
{
  // With pinning on (emulator/core_pinning.hpp) the measuring thread takes the first core and the threads below
  // the next ones, as an emulated transfer's do; the caller gets its cores back at the end.
  ScopedPin pin;
  const auto t_begin = clk::now();
  SoftHostCalibration c;
  c.l2_size = cache_size(2);
  c.l3_size = cache_size(3);
  // Hand-offs between the emulator's threads.
  HostMemory mem(1, 0);
  LoopRuntime a("calibrate-a", mem), b("calibrate-b", mem);
  const int pings = quick ? 200 : 2000;
  Status st = measure_memcpy_and_latency(c, mem, a, b, quick, pings);
  if (st.ok()) {
    measure_work_round_trip(c, a, pings);
    measure_timer(c, a, pings);
    st = measure_serialization(c, mem, a, quick);
  }
  if (st.ok()) st = measure_registration(c, mem, a, quick);
  if (st.ok()) st = measure_stream(c, a, b, quick, pings);
  a.stop();
  b.stop();
  if (!st.ok()) return st.error();
  c.seconds_spent = seconds_since(t_begin);
  return c;
}

models::HostProfile soft_host_profile(const SoftHostCalibration& c)
{
  models::HostProfile h;
  h.name = "soft-device-this-host";
  models::CpuProfile cpu;
  cpu.name = "this-host (calibrated)";
  cpu.cores = int(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  cpu.l2_size = c.l2_size;
  cpu.l3_size = c.l3_size;
  cpu.memcpy_l2_bandwidth = c.memcpy_l2_bandwidth;
  cpu.memcpy_llc_bandwidth = c.memcpy_llc_bandwidth;
  cpu.memcpy_dram_bandwidth = c.memcpy_dram_bandwidth;
  cpu.memcpy_call_overhead = c.memcpy_call_overhead;
  // A "device" here is a thread: a doorbell wakes the wire thread, a completion or a landed write wakes the
  // owner's loop. Nothing crosses PCIe, so DMA round trips cost nothing.
  cpu.mmio_write_latency = c.handoff;
  cpu.completion_overhead = c.handoff;
  cpu.dma_read_latency = 0;
  cpu.posted_write_latency = 0;
  cpu.read_completion_size = 4096;
  cpu.post_overhead = 0;
  cpu.serialize_bandwidth = c.serialize_bandwidth;
  cpu.deserialize_bandwidth = c.serialize_bandwidth;
  cpu.work_handoff_latency = c.work_round_trip;
  // The emulated MPI thread waits a 1 us timer per call (the default CpuProfile's cost, emu_job_backend.cpp): on this
  // host such a timer takes what was measured.
  cpu.mpi_call_overhead = std::max(1e-6, c.timer_1us);
  h.sockets.push_back({cpu, 16e9});
  h.socket_link.name = "none";
  h.socket_link.bandwidth = c.memcpy_dram_bandwidth;
  // No PCIe: a link far faster than memory so that it never limits, without latency.
  models::PcieProfile pcie;
  pcie.name = "none (software device)";
  pcie.transfer_rate = 1e12;
  pcie.lanes = 16;
  pcie.link_latency = 0;
  models::NicProfile nic;
  nic.name = "soft-device";
  nic.description = "tensorpath's software verbs device: a wire thread that memcpys between registered regions";
  nic.link_layer = models::LinkLayerKind::INFINIBAND;
  nic.line_rate = c.memcpy_dram_bandwidth; // the wire thread's memcpy of a payload beyond the caches
  nic.mtu = 4096;
  nic.packet_overhead = 0;
  nic.rdma_header_bytes = 0;
  nic.imm_header_bytes = 0;
  nic.ack_packet_bytes = 0;
  nic.pcie = pcie.name;
  h.nics.push_back({nic, 0, pcie});
  h.registration.name = "soft-device reg_mr";
  h.registration.register_fixed = c.register_fixed / 2;
  h.registration.deregister_fixed = c.register_fixed / 2;
  h.registration.register_per_page = c.register_per_page / 2;
  h.registration.deregister_per_page = c.register_per_page / 2;
  h.tcp.name = "in-process stream";
  h.tcp.mss = 1 << 20;
  h.tcp.segment_overhead = 0;
  h.tcp.stack_latency = c.stream_latency;
  h.tcp.rpc_connection_bandwidth = c.stream_bandwidth;
  return h;
}

models::ClusterProfile soft_host_cluster(const SoftHostCalibration& c)
{
  models::SwitchProfile sw;
  sw.name = "none (one host)";
  sw.latency = 0;
  return models::make_cluster(soft_host_profile(c), 2, sw, "emu");
}

} // namespace tp::emu
