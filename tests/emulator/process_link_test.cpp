// The software device between OS processes: a forked child process is the responder; the parent's RDMA WRITE,
// READ and SEND move real bytes through the shared-memory arenas, a bad rkey is a remote access error that touches
// nothing, and a child killed with SIGKILL gives the parent an error completion within 5 s.
#include "emulator/host_memory.hpp"
#include "emulator/loop_runtime.hpp"
#include "emulator/soft_device.hpp"

#include "tests/test_time.hpp"

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

using namespace tp;
using namespace tp::emu;

namespace {

constexpr uint64_t REGION = 64 << 10;

/// What one process publishes about itself to the other (through a pipe, as a real job exchanges QP numbers).
struct Endpoint {
  uint16_t lid;
  uint32_t qpn;
  uint64_t addr;
  uint32_t rkey;
};

/// One emulated process whose software device is linked to the other OS process.
struct Side {
  HostMemory memory;
  LoopRuntime rt;
  SoftFabric fabric;
  SoftDevice device;
  Buffer buf;
  verbs::MemoryRegion mr;
  std::unique_ptr<verbs::CompletionQueue> cq;
  std::unique_ptr<verbs::QueuePair> qp;
  std::mutex mu;
  std::vector<verbs::WorkCompletion> wcs;

  Side(const std::string& dir, uint16_t first_lid, const std::string& name)
      : memory(1, 0, SharedArena::create(64ull << 20, name).value()), rt(name, memory), fabric(first_lid),
        device(fabric, rt, name)
  {
    REQUIRE(fabric.link_processes(dir, *memory.arena()).ok());
    buf = memory.allocate(REGION, AllocAttr::at(Location::host(0))).value();
    std::memset(buf.data, 0, REGION);
    mr = device
             .reg_mr(buf.addr, REGION,
                     verbs::Access::LOCAL_WRITE | verbs::Access::REMOTE_WRITE | verbs::Access::REMOTE_READ)
             .value();
    cq = std::move(device.create_cq(64).value());
    cq->set_handler([this](const verbs::WorkCompletion& wc) {
      std::lock_guard<std::mutex> lock(mu);
      wcs.push_back(wc);
    });
    verbs::QpInitAttr ia;
    ia.send_cq = cq.get();
    ia.recv_cq = cq.get();
    qp = std::move(device.create_qp(ia).value());
  }
  ~Side()
  {
    rt.stop();
    qp.reset();
  }
  Endpoint endpoint() const { return {device.port_address().lid, qp->qp_num(), buf.addr, mr.rkey}; }
  Status connect(const Endpoint& peer)
  {
    verbs::RcConnectOptions o;
    o.timeout = 10; // 4 ms ACK timeout: a dead peer is noticed in 8 x 4 ms
    return verbs::bring_up_rc_qp(*qp, 1, {{peer.lid, {}}, peer.qpn, 1}, o);
  }
  bool wait(size_t n, double seconds = 5)
  {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(tp::test::wall_seconds(seconds));
    while (std::chrono::steady_clock::now() < end) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (wcs.size() >= n) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }
  verbs::WorkCompletion at(size_t i)
  {
    std::lock_guard<std::mutex> lock(mu);
    return wcs.at(i);
  }
};

std::string temp_dir()
{
  char tmpl[] = "/tmp/tp-link-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  return tmpl;
}

template <class T> void put(int fd, const T& v)
{
  REQUIRE(::write(fd, &v, sizeof v) == ssize_t(sizeof v));
}
template <class T> bool get(int fd, T& v)
{
  return ::read(fd, &v, sizeof v) == ssize_t(sizeof v);
}

/// Fork a responder process: it publishes its endpoint, connects to ours, posts one receive and, when told,
/// reports whether its memory holds what the parent wrote (and nothing else). Returns its pid.
pid_t spawn_responder(const std::string& dir, int to_child[2], int to_parent[2])
{
  REQUIRE(::pipe(to_child) == 0);
  REQUIRE(::pipe(to_parent) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid != 0) return pid;
  // The child: no Catch2 macros from here on (they belong to the parent); results go back as a byte.
  uint8_t verdict = 'N';
  {
    Side s(dir, 101, "child");
    for (uint64_t i = 0; i < REGION; ++i)
      s.buf.data[i] = uint8_t(i * 7 + 1);
    std::memset(s.buf.data, 0, 8192); // [0, 8 KiB) is where the parent writes
    const Endpoint me = s.endpoint();
    Endpoint parent{};
    if (::write(to_parent[1], &me, sizeof me) == ssize_t(sizeof me) && get(to_child[0], parent) &&
        s.connect(parent).ok()) {
      verbs::RecvWr r;
      r.wr_id = 77;
      r.sg_list = {{s.buf.addr + 16384, 256, s.mr.lkey}};
      (void)s.qp->post_recv(r);
      uint8_t cmd = 0;
      if (::write(to_parent[1], "R", 1) == 1 && get(to_child[0], cmd)) {
        bool ok = s.wait(1, 5) && s.at(0).ok() && s.at(0).wr_id == 77 && s.at(0).byte_len == 100;
        for (uint64_t i = 0; ok && i < 4096; ++i)
          ok = s.buf.data[i] == uint8_t(i * 3 + 5);
        for (uint64_t i = 4096; ok && i < 8192; ++i) // the bad-rkey WRITE aimed here: untouched
          ok = s.buf.data[i] == 0;
        for (uint64_t i = 0; ok && i < 100; ++i)
          ok = s.buf.data[16384 + i] == uint8_t(200 - i);
        verdict = ok ? 'Y' : 'N';
      }
    }
  }
  (void)::write(to_parent[1], &verdict, 1);
  ::_exit(0);
}

verbs::SendWr write_wr(uint64_t id, const Side& s, uint64_t local_off, uint32_t len, const Endpoint& peer,
                       uint64_t remote_off, verbs::WrOpcode op = verbs::WrOpcode::RDMA_WRITE)
{
  verbs::SendWr w;
  w.wr_id = id;
  w.opcode = op;
  w.sg_list = {{s.buf.addr + local_off, len, s.mr.lkey}};
  w.remote_addr = peer.addr + remote_off;
  w.rkey = peer.rkey;
  return w;
}

} // namespace

TEST_CASE("software device across OS processes: WRITE, READ and SEND move bytes, a bad rkey touches nothing",
          "[emulator]")
{
  const std::string dir = temp_dir();
  int to_child[2], to_parent[2];
  const pid_t child = spawn_responder(dir, to_child, to_parent);
  {
    Side s(dir, 1, "parent");
    Endpoint peer{};
    REQUIRE(get(to_parent[0], peer));
    REQUIRE(peer.lid == 101);
    REQUIRE(s.connect(peer).ok());
    put(to_child[1], s.endpoint());
    char ready = 0;
    REQUIRE(get(to_parent[0], ready));
    for (uint64_t i = 0; i < 4096; ++i)
      s.buf.data[i] = uint8_t(i * 3 + 5);
    for (uint64_t i = 0; i < 100; ++i)
      s.buf.data[20000 + i] = uint8_t(200 - i);
    REQUIRE(s.qp->post_send(write_wr(1, s, 0, 4096, peer, 0)).ok());
    REQUIRE(s.qp->post_send(write_wr(2, s, 32768, 4096, peer, 40960, verbs::WrOpcode::RDMA_READ)).ok());
    verbs::SendWr send = write_wr(3, s, 20000, 100, peer, 0, verbs::WrOpcode::SEND);
    REQUIRE(s.qp->post_send(send).ok());
    REQUIRE(s.wait(3));
    for (size_t i = 0; i < 3; ++i) {
      INFO(i);
      CHECK(s.at(i).status == verbs::WcStatus::SUCCESS);
    }
    bool read_ok = true; // the child's pattern at 40 KiB, read into ours at 32 KiB
    for (uint64_t i = 0; i < 4096; ++i)
      read_ok = read_ok && s.buf.data[32768 + i] == uint8_t((40960 + i) * 7 + 1);
    CHECK(read_ok);
    verbs::SendWr bad = write_wr(4, s, 0, 4096, peer, 4096);
    bad.rkey ^= 0x5a5a;
    REQUIRE(s.qp->post_send(bad).ok());
    REQUIRE(s.wait(4));
    CHECK(s.at(3).status == verbs::WcStatus::REM_ACCESS_ERR);
    put(to_child[1], uint8_t('C'));
    uint8_t verdict = 0;
    REQUIRE(get(to_parent[0], verdict));
    CHECK(verdict == 'Y');
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(WIFEXITED(status));
  std::filesystem::remove_all(dir);
}

TEST_CASE("software device across OS processes: a responder killed mid-job gives error completions within 5 s",
          "[emulator]")
{
  const std::string dir = temp_dir();
  int to_child[2], to_parent[2];
  const pid_t child = spawn_responder(dir, to_child, to_parent);
  Side s(dir, 1, "parent");
  Endpoint peer{};
  REQUIRE(get(to_parent[0], peer));
  REQUIRE(s.connect(peer).ok());
  put(to_child[1], s.endpoint());
  char ready = 0;
  REQUIRE(get(to_parent[0], ready));
  REQUIRE(s.qp->post_send(write_wr(1, s, 0, 4096, peer, 0)).ok()); // connects the link
  REQUIRE(s.wait(1));
  REQUIRE(s.at(0).ok());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(s.qp->post_send(write_wr(2, s, 0, 4096, peer, 0)).ok());
  REQUIRE(s.qp->post_send(write_wr(3, s, 0, 4096, peer, 0)).ok());
  REQUIRE(s.wait(3, 5));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(took < tp::test::wall_seconds(5));
  CHECK(s.at(1).status == verbs::WcStatus::RETRY_EXC_ERR);
  CHECK(s.at(2).status == verbs::WcStatus::WR_FLUSH_ERR);
  CHECK(s.qp->state() == verbs::QpState::ERR);
  std::filesystem::remove_all(dir);
}
