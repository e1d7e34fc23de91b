// The device contract suite (tests/device/device_contract_cases.hpp) on the software device across OS processes:
// end A is this process, end B a forked child process; each has its own fabric, linked through a directory
// (emulator/process_link) and shared-memory arenas (emulator/shared_arena), as `tensorpath emulate --processes`
// runs. B's arena is made before the fork, so this process reads B's buffer in place; B's completions come back
// through a shared block, and what a case asks of B goes to the child as a command on a pipe. Also here: a child
// killed mid-job gives A error completions within 5 s (what only separate processes can show).
#include "tests/device/emulated_end.hpp"

#include <catch2/catch.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <thread>

namespace tp::test {
namespace {

constexpr uint32_t MAX_COMPLETIONS = 4096;
constexpr uint32_t MAX_SGES = 4;

enum class Op : uint8_t { POST_RECV, POST_RECV_AFTER, MODIFY, STATE, BRING_UP, REG_MR, DEREG_MR, WATCH, QUIT };

/// Memory shared by the two processes (mapped before the fork): B's description, B's completions, one command and
/// its answer. Everything in it is trivially copyable.
struct SharedBlock {
  // B, once it is open
  uint64_t b_addr, b_size;
  verbs::MemoryRegion b_mr;
  verbs::QpEndpoint b_endpoint;
  // B's completions (written by the child's loop, count last)
  std::atomic<uint32_t> count;
  verbs::WorkCompletion wcs[MAX_COMPLETIONS];
  double times[MAX_COMPLETIONS];
  uint64_t hashes[MAX_COMPLETIONS];
  std::atomic<uint64_t> hash_off, hash_len; ///< hash_at_completion(B, ...): len 0 = none
  std::atomic<int64_t> watch_fired_ns;      ///< -1: not fired
  // the command
  Op op;
  uint64_t wr_id;
  uint32_t sges;
  verbs::Sge sge[MAX_SGES];
  double delay;
  verbs::QpAttr attr;
  verbs::QpAttrMask mask;
  verbs::RcConnectOptions rc;
  verbs::QpEndpoint remote;
  verbs::MemoryRegion mr_arg;
  uint64_t addr_arg, len_arg;
  verbs::Access access_arg;
  // its answer
  bool ok;
  char message[512];
  verbs::QpState state;
  verbs::MemoryRegion mr_out;

  void answer(const Status& st)
  {
    ok = st.ok();
    std::snprintf(message, sizeof message, "%s", st.ok() ? "" : st.error().message().c_str());
  }
  verbs::RecvWr recv_wr() const
  {
    verbs::RecvWr r;
    r.wr_id = wr_id;
    r.sg_list.assign(sge, sge + sges);
    return r;
  }
};

/// The child: B's process. Opens B, says so ('R', or 'E' with the reason in message), then carries out commands
/// until QUIT or until the parent goes away.
void serve_b(SharedBlock& s, std::unique_ptr<emu::SharedArena> arena, const std::string& dir, const PairOptions& o,
             std::chrono::steady_clock::time_point t0, int cmd_fd, int reply_fd)
{
  auto proc = emu::make_os_process("b", 1, dir, std::move(arena));
  EmulatedEnd b;
  Status st = proc.ok() ? ok_status() : Status(proc.error());
  if (st.ok()) {
    st = b.open(*proc.value(), o.buffer_bytes, o.loc_b, o.access_b, [&s, &b, t0](const verbs::WorkCompletion& wc) {
      const uint32_t n = s.count.load();
      if (n >= MAX_COMPLETIONS) return;
      s.wcs[n] = wc;
      s.times[n] = seconds_since(t0);
      const uint64_t len = s.hash_len.load();
      s.hashes[n] = len ? DevicePair::hash(b.buf.data + s.hash_off.load(), len) : 0;
      s.count.store(n + 1);
    });
  }
  if (st.ok()) {
    s.b_addr = b.buf.addr;
    s.b_size = b.buf.size;
    s.b_mr = b.mr;
    s.b_endpoint = b.endpoint(200);
  }
  s.answer(st);
  uint8_t op = st.ok() ? 'R' : 'E';
  if (::write(reply_fd, &op, 1) != 1 || !st.ok()) return;
  while (::read(cmd_fd, &op, 1) == 1 && Op(op) != Op::QUIT) {
    switch (Op(op)) {
    case Op::POST_RECV:
      s.answer(b.post_recv(s.recv_wr()));
      break;
    case Op::POST_RECV_AFTER:
      s.answer(b.post_recv_after(s.delay, s.recv_wr()));
      break;
    case Op::MODIFY:
      s.answer(b.modify(s.attr, s.mask));
      break;
    case Op::STATE:
      s.state = b.state();
      s.answer(ok_status());
      break;
    case Op::BRING_UP:
      s.answer(b.bring_up(200, s.remote, s.rc));
      break;
    case Op::REG_MR: {
      auto r = b.reg_mr(s.addr_arg, s.len_arg, s.access_arg);
      if (r.ok()) s.mr_out = r.value();
      s.answer(r.ok() ? ok_status() : Status(r.error()));
      break;
    }
    case Op::DEREG_MR:
      s.answer(b.dereg_mr(s.mr_arg));
      break;
    case Op::WATCH:
      s.answer(b.watch_memory(s.addr_arg, s.len_arg,
                              [&s, t0] { s.watch_fired_ns.store(int64_t(seconds_since(t0) * 1e9)); }));
      break;
    default:
      s.answer(Error::msg("unknown command"));
      break;
    }
    if (::write(reply_fd, &op, 1) != 1) break;
  }
  b.close();
}

class ProcessPair final : public DevicePair {
public:
  static Result<std::unique_ptr<DevicePair>> make(const PairOptions& o)
  {
    auto p = std::unique_ptr<ProcessPair>(new ProcessPair());
    if (auto st = p->open(o); !st.ok()) return st.error();
    return std::unique_ptr<DevicePair>(std::move(p));
  }
  ~ProcessPair() override
  {
    if (child_ > 0) {
      const uint8_t quit = uint8_t(Op::QUIT);
      (void)::write(cmd_[1], &quit, 1);
      ::waitpid(child_, nullptr, 0);
    }
    a_.close();
    proc_a_.reset();
    for (int fd : {cmd_[0], cmd_[1], reply_[0], reply_[1]})
      if (fd >= 0) ::close(fd);
    if (s_) ::munmap(s_, sizeof(SharedBlock));
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  Status post_send(End e, const verbs::SendWr& wr) override
  {
    if (e == End::B) return Error::msg("the suite posts sends from A only");
    return a_.post_send(wr);
  }
  Status post_recv(End e, const verbs::RecvWr& wr) override
  {
    if (e == End::A) return a_.post_recv(wr);
    return recv_command(Op::POST_RECV, wr, 0);
  }
  Status post_recv_after(End e, double seconds, const verbs::RecvWr& wr) override
  {
    if (e == End::A) return a_.post_recv_after(seconds, wr);
    return recv_command(Op::POST_RECV_AFTER, wr, seconds);
  }
  Status modify(End e, const verbs::QpAttr& attr, verbs::QpAttrMask mask) override
  {
    if (e == End::A) return a_.modify(attr, mask);
    s_->attr = attr;
    s_->mask = mask;
    return call(Op::MODIFY);
  }
  verbs::QpState state(End e) override
  {
    if (e == End::A) return a_.state();
    REQUIRE(call(Op::STATE).ok());
    return s_->state;
  }
  Status bring_up(End e, const verbs::RcConnectOptions& rc) override
  {
    if (e == End::A) return a_.bring_up(100, s_->b_endpoint, rc);
    s_->remote = a_.endpoint(100);
    s_->rc = rc;
    return call(Op::BRING_UP);
  }
  Result<verbs::MemoryRegion> reg_mr(End e, uint64_t a, uint64_t len, verbs::Access access) override
  {
    if (e == End::A) return a_.reg_mr(a, len, access);
    s_->addr_arg = a;
    s_->len_arg = len;
    s_->access_arg = access;
    if (auto st = call(Op::REG_MR); !st.ok()) return st.error();
    return s_->mr_out;
  }
  Status dereg_mr(End e, const verbs::MemoryRegion& m) override
  {
    if (e == End::A) return a_.dereg_mr(m);
    s_->mr_arg = m;
    return call(Op::DEREG_MR);
  }
  Status watch_memory(End e, uint64_t a, uint64_t len) override
  {
    if (e == End::A)
      return a_.watch_memory(a, len, [this] { s_->watch_fired_ns.store(int64_t(seconds_since(t0_) * 1e9)); });
    s_->addr_arg = a;
    s_->len_arg = len;
    return call(Op::WATCH);
  }
  double watch_fired_at() override
  {
    const int64_t ns = s_->watch_fired_ns.load();
    return ns < 0 ? -1 : double(ns) * 1e-9;
  }
  void hash_at_completion(End e, uint64_t off, uint64_t len) override
  {
    if (e == End::A) {
      std::lock_guard<std::mutex> lock(log_a_.mu);
      log_a_.hash_from = data[0] + off;
      log_a_.hash_len = len;
      return;
    }
    s_->hash_off.store(off);
    s_->hash_len.store(len);
  }
  void run(size_t a, size_t b) override
  {
    emu::Emulation::wait_until([&] { return log_a_.count() >= a && s_->count.load() >= b; }, completion_deadline());
    std::this_thread::sleep_for(std::chrono::duration<double>(quiet_time()));
    {
      std::lock_guard<std::mutex> lock(log_a_.mu);
      wca = log_a_.wcs;
      ta = log_a_.times;
    }
    const uint32_t n = s_->count.load();
    wcb.assign(s_->wcs, s_->wcs + n);
    tb.assign(s_->times, s_->times + n);
    hb.assign(s_->hashes, s_->hashes + n);
  }
  const char* lacks(Need need) const override
  {
    if (need == Need::ALLOCATION_BOUNDS) return SOFT_DEVICE_NO_ALLOCATION_BOUNDS;
    return need == Need::SIMULATED_CLOCK ? "times are wall-clock times: only lower bounds on them hold" : nullptr;
  }

  /// SIGKILL B's process (the child).
  void kill_b()
  {
    ::kill(child_, SIGKILL);
    ::waitpid(child_, nullptr, 0);
    child_ = -1;
  }

private:
  ProcessPair() { backend = "the software device (OS processes)"; }

  Status open(const PairOptions& o)
  {
    char tmpl[] = "/tmp/tp-contract-XXXXXX";
    if (!::mkdtemp(tmpl)) return Error::msg("mkdtemp failed");
    dir_ = tmpl;
    void* m = ::mmap(nullptr, sizeof(SharedBlock), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return Error::msg("mmap of the shared block failed");
    s_ = new (m) SharedBlock();
    s_->watch_fired_ns.store(-1);
    const uint64_t arena_bytes = o.buffer_bytes + (8 << 20);
    auto arena_b = emu::SharedArena::create(arena_bytes, "b");
    if (!arena_b.ok()) return arena_b.error();
    arena_b_ = std::move(arena_b.value()); // kept mapped here: B's buffer is read in place
    if (::pipe(cmd_) != 0 || ::pipe(reply_) != 0) return Error::msg("pipe failed");
    // No thread runs in this process yet: fork() is safe.
    child_ = ::fork();
    if (child_ < 0) return Error::msg("fork failed");
    if (child_ == 0) {
      ::close(cmd_[1]); // so that a parent gone for good reads as end of file
      ::close(reply_[0]);
      serve_b(*s_, std::move(arena_b_), dir_, o, t0_, cmd_[0], reply_[1]);
      ::_exit(0); // no Catch2, no destructors of the parent's objects
    }
    ::close(cmd_[0]); // so that a child gone for good reads as end of file
    ::close(reply_[1]);
    cmd_[0] = reply_[1] = -1;
    auto pa = emu::make_os_process("a", 0, dir_, arena_bytes);
    if (!pa.ok()) return pa.error();
    proc_a_ = std::move(pa.value());
    using verbs::Access;
    auto st = a_.open(*proc_a_, o.buffer_bytes, Location::host(0),
                      Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ,
                      [this](const verbs::WorkCompletion& wc) { log_a_.add(wc, seconds_since(t0_)); });
    if (!st.ok()) return st;
    if (auto ready = reply(); !ready.ok()) return ready;
    data[0] = a_.buf.data;
    addr[0] = a_.buf.addr;
    mr[0] = a_.mr;
    data[1] = reinterpret_cast<uint8_t*>(s_->b_addr); // B's arena is mapped here at the same address
    addr[1] = s_->b_addr;
    size = s_->b_size;
    mr[1] = s_->b_mr;
    if (!o.connect) return ok_status();
    if (auto up = bring_up(End::A, o.rc); !up.ok()) return up;
    return bring_up(End::B, o.rc);
  }
  Status recv_command(Op op, const verbs::RecvWr& wr, double delay)
  {
    if (wr.sg_list.size() > MAX_SGES) return Error::msg("too many SGEs for the command block");
    s_->wr_id = wr.wr_id;
    s_->sges = uint32_t(wr.sg_list.size());
    std::copy(wr.sg_list.begin(), wr.sg_list.end(), s_->sge);
    s_->delay = delay;
    return call(op);
  }
  /// Send a command to B's process and wait (with a deadline) for its answer.
  Status call(Op op)
  {
    if (child_ <= 0) return Error::msg("B's process is gone");
    const uint8_t b = uint8_t(op);
    if (::write(cmd_[1], &b, 1) != 1) return Error::msg("B's process does not take commands");
    return reply();
  }
  Status reply()
  {
    pollfd pfd{reply_[0], POLLIN, 0};
    uint8_t r = 0;
    if (::poll(&pfd, 1, int(completion_deadline() * 1000)) != 1 || ::read(reply_[0], &r, 1) != 1)
      return Error::msg("B's process did not answer");
    if (!s_->ok) return Error::msg(s_->message);
    return ok_status();
  }

  const std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  std::string dir_;
  SharedBlock* s_ = nullptr;
  int cmd_[2] = {-1, -1}, reply_[2] = {-1, -1};
  pid_t child_ = -1;
  std::unique_ptr<emu::SharedArena> arena_b_;
  std::unique_ptr<emu::EmuProcess> proc_a_;
  CompletionLog log_a_;
  EmulatedEnd a_;
};

Result<std::unique_ptr<DevicePair>> make_device_pair(const PairOptions& options)
{
  return ProcessPair::make(options);
}
} // namespace

} // namespace tp::test

#define DEVICE_UNDER_TEST "software device (OS processes)"
#define DEVICE_TAGS "[emulator][processes]"
#include "tests/device/device_contract_cases.hpp"

TEST_CASE("software device across OS processes: a responder killed mid-job gives error completions within 5 s",
          "[emulator][processes]")
{
  using namespace tp;
  using tp::test::End;
  tp::test::PairOptions o;
  o.rc.timeout = 10; // 4 ms ACK timeout: a dead peer is noticed in 8 x 4 ms
  auto made = tp::test::ProcessPair::make(o);
  REQUIRE(made.ok());
  auto& p = static_cast<tp::test::ProcessPair&>(*made.value());
  REQUIRE(p.post_send(End::A, p.write(1, 0, 0, 4096)).ok()); // connects the link
  p.run(1, 0);
  REQUIRE(p.wca.size() == 1);
  REQUIRE(p.wca[0].ok());
  p.kill_b();
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(p.post_send(End::A, p.write(2, 0, 0, 4096)).ok());
  REQUIRE(p.post_send(End::A, p.write(3, 0, 0, 4096)).ok());
  p.run(3, 0);
  CHECK(tp::test::seconds_since(t0) < tp::test::wall_seconds(5));
  REQUIRE(p.wca.size() == 3);
  CHECK(p.wca[1].status == verbs::WcStatus::RETRY_EXC_ERR);
  CHECK(p.wca[2].status == verbs::WcStatus::WR_FLUSH_ERR);
  CHECK(p.state(End::A) == verbs::QpState::ERR);
}
