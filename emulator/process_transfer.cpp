// The emulated transfer job across OS processes (see process_transfer.hpp).
// Control frames: u32 length + body (rpc::Writer). Commands: u8 op, i64 step, u64 bytes, u8 flags. Replies: u8 ok
// (0: str error), then the op's fields.
#include "emulator/process_transfer.hpp"
#include "emulator/socket_io.hpp"

#include "core/rendezvous/rendezvous_key.hpp"
#include "core/rpc/rpc.hpp"
#include "core/transports/task_runtime.hpp"
#include "emulator/emu_job_backend.hpp"
#include "emulator/emulation.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

namespace tp::emu {

namespace {

enum Op : uint8_t { START = 1, PREPARE, GO, CLEANUP, RECORDS, EXIT };
const char* const PRODUCER = "/job:ps/replica:0/task:0";
const char* const CONSUMER = "/job:worker/replica:0/task:0";

double steady_seconds()
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string device_of(Location l)
{
  return l.is_gpu() ? "GPU:" + std::to_string(l.index) : "CPU:0";
}

uint8_t pattern_byte(uint64_t i, int64_t step)
{
  return uint8_t(i * 7 + uint64_t(step) * 13);
}

bool send_frame(int fd, const std::vector<uint8_t>& body)
{
  const uint32_t n = uint32_t(body.size());
  return send_all(fd, &n, 4) && send_all(fd, body.data(), body.size());
}

bool read_frame(int fd, std::vector<uint8_t>& body)
{
  uint32_t n = 0;
  if (!recv_all(fd, &n, 4) || n > (256u << 20)) return false;
  body.resize(n);
  return recv_all(fd, body.data(), n);
}

std::vector<uint8_t> error_reply(const std::string& e)
{
  rpc::Writer w;
  w.u8(0);
  w.str(e);
  return w.take();
}

void put_record(rpc::Writer& w, const transports::TransferRecord& r)
{
  w.str(r.transport);
  w.str(transports::to_string(r.side));
  for (const std::string* s : {&r.key, &r.local_task, &r.peer_task, &r.src_location, &r.dst_location, &r.error})
    w.str(*s);
  w.u64(uint64_t(r.step));
  w.u64(r.bytes);
  w.u8(r.is_dead);
  w.u8(r.ok);
  w.f64(r.t_start);
  w.f64(r.t_end);
  for (double s : r.seconds)
    w.f64(s);
  w.u32(r.copies);
  w.u32(r.registrations);
}

bool get_record(rpc::Reader& r, transports::TransferRecord& t)
{
  uint64_t step = 0;
  uint8_t dead = 0, ok = 0;
  std::string side;
  for (std::string* s :
       {&t.transport, &side, &t.key, &t.local_task, &t.peer_task, &t.src_location, &t.dst_location, &t.error})
    if (!r.str(*s)) return false;
  auto parsed_side = transports::parse_side(side);
  if (!parsed_side.ok()) return false;
  t.side = parsed_side.value();
  if (!r.u64(step) || !r.u64(t.bytes) || !r.u8(dead) || !r.u8(ok) || !r.f64(t.t_start) || !r.f64(t.t_end)) return false;
  for (double& s : t.seconds)
    if (!r.f64(s)) return false;
  t.step = int64_t(step);
  t.is_dead = dead;
  t.ok = ok;
  return r.u32(t.copies) && r.u32(t.registrations);
}

/// START in a child: create the task's runtime and start its transport (the producer's fatal failures kill this
/// process, as the original's abort would). Returns the error, or "" when the transport started.
std::string start_child_task(EmuProcess& proc, bool producer, const EmuTransferJob& job, const std::string& dir,
                             std::unique_ptr<transports::TaskRuntime>& task)
{
  // What the start reports, owned by its callback too: a start that completes after the timeout below writes into it,
  // not into this frame. Null while the task has not been created.
  struct Started {
    std::atomic<bool> reported{false};
    std::string err;
  };
  std::shared_ptr<Started> started;
  std::string create_err;
  Emulation::on(proc, [&] {
    transports::ClusterSpec cluster{{PRODUCER, "producer"}, {CONSUMER, "consumer"}};
    transports::TaskSpec spec;
    spec.task = producer ? PRODUCER : CONSUMER;
    spec.transport = job.transport;
    spec.memory.kind = job.strategy;
    spec.options = job.options;
    complete_task_spec(spec);
    auto t = transports::TaskRuntime::create(spec, proc.name, *proc.runtime, proc.device.get(), *proc.streams, cluster);
    if (!t.ok()) {
      create_err = t.error().message();
      return;
    }
    task = std::move(t.value());
    // A failure the original treats as fatal in the producer (e.g. LOC_LEN_ERR on its write): this process
    // aborts as the original's would, leaving the reason where the parent finds it; the consumer sees the
    // connection close and fails its receive. (The consumer's own fatal failures fail its receive anyway.)
    if (producer) {
      const std::string note = dir + "/fatal-" + proc.name;
      task->set_fatal_handler([note](const Error& e) {
        if (FILE* f = std::fopen(note.c_str(), "w")) {
          std::fputs(e.message().c_str(), f);
          std::fclose(f);
        }
        // Die at once, as the original's abort does: no exit handlers, no joins of the threads still running
        // (an _exit would run the sanitizers' exit checks, which rightly call those threads leaked).
        ::kill(::getpid(), SIGKILL);
        ::_exit(3); // not reached
      });
    }
    started = std::make_shared<Started>();
    task->transport().start([s = started](Status st) {
      if (!st.ok()) s->err = st.error().message();
      s->reported = true;
    });
  });
  if (!create_err.empty()) return create_err;
  if (!started || !Emulation::wait_until([&] { return started->reported.load(); }, job.timeout))
    return "the transport did not start";
  return started->err;
}

/// GO in the consumer: receive the step's tensor and check every byte against the pattern the producer wrote.
/// Returns the error, or "" when the receive completed (`same` says whether the bytes matched).
std::string receive_and_check(EmuProcess& proc, transports::TaskRuntime& task, const EmuTransferJob& job,
                              const rendezvous::ParsedKey& parsed, int64_t step, uint64_t bytes, double& t_recv,
                              double& t_end, bool& same)
{
  // Owned by the callback too: a receive that completes after the timeout below writes into it, not into this frame.
  struct Outcome {
    std::atomic<bool> done{false};
    std::string err;
    double t_end = 0;
    bool same = false;
  };
  auto out = std::make_shared<Outcome>();
  Emulation::on(proc, [&] {
    t_recv = steady_seconds();
    rendezvous::RecvArgs args;
    args.dst_location = job.dst;
    args.alloc_attrs.nic_compatible = true;
    task.rendezvous().recv_async(step, parsed, args, [out, bytes, step](Result<rendezvous::RecvOutcome> res) {
      out->t_end = steady_seconds();
      if (!res.ok()) {
        out->err = res.error().message();
      } else {
        const Tensor& t = res->tensor;
        bool same = t.buffer() && t.total_bytes() == (bytes / 4 + (bytes % 4 != 0)) * 4;
        for (uint64_t i = 0; same && i < t.total_bytes(); ++i)
          same = t.buffer()->data[i] == pattern_byte(i, step);
        out->same = same;
      }
      out->done = true;
    });
  });
  if (!Emulation::wait_until([&] { return out->done.load(); }, job.timeout))
    return "the receive did not complete in " + std::to_string(job.timeout) + " s";
  t_end = out->t_end;
  same = out->same;
  return out->err;
}

/// One child: the producer (index 0) or the consumer (index 1), serving the parent's commands until EXIT or EOF.
[[noreturn]] void child_main(int ctl, int index, const EmuTransferJob& job, const std::string& dir)
{
  ::prctl(PR_SET_PDEATHSIG, SIGKILL); // a child never outlives the job
  const bool producer = index == 0;
  auto made = make_os_process(producer ? "producer" : "consumer", index, dir, 16ull << 30);
  std::unique_ptr<EmuProcess> proc = made.ok() ? std::move(made.value()) : nullptr;
  std::unique_ptr<transports::TaskRuntime> task;
  std::optional<Tensor> tensor;
  std::vector<uint8_t> cmd;
  while (read_frame(ctl, cmd)) {
    rpc::Reader r(cmd.data(), cmd.size());
    uint8_t op = 0, flags = 0;
    uint64_t step_u = 0, bytes = 0;
    if (!r.u8(op) || !r.u64(step_u) || !r.u64(bytes) || !r.u8(flags)) break;
    const int64_t step = int64_t(step_u);
    if (op == EXIT) break;
    if (!proc) {
      send_frame(ctl, error_reply(made.error().message()));
      continue;
    }
    rpc::Writer w;
    std::string err;
    const std::string key = rendezvous::create_key(std::string(PRODUCER) + "/device:" + device_of(job.src), 1,
                                                   std::string(CONSUMER) + "/device:" + device_of(job.dst), "tensor");
    const auto parsed = rendezvous::parse_key(key).value();
    switch (op) {
    case START:
      err = start_child_task(*proc, producer, job, dir, task);
      break;
    case PREPARE:
      Emulation::on(*proc, [&] {
        const int64_t elems = int64_t(bytes / 4 + (bytes % 4 != 0)); // bytes <= MAX_EMULATED_BYTES
        auto t = task ? task->make_tensor(DataType::FLOAT, TensorShape{{elems}}, job.src,
                                          AllocatorAttributes{false, false, true})
                      : Result<Tensor>(Error::msg("no task"));
        if (!t.ok()) {
          err = t.error().message();
          return;
        }
        uint8_t* d = t->buffer()->data;
        for (uint64_t i = 0; i < uint64_t(elems) * 4; ++i)
          d[i] = pattern_byte(i, step);
        tensor = t.value();
      });
      break;
    case GO:
      if (producer) {
        double t_send = 0;
        Emulation::on(*proc, [&] {
          t_send = steady_seconds();
          if (!tensor) {
            err = "no tensor prepared";
            return;
          }
          if (auto st = task->rendezvous().send(step, parsed, *tensor, false); !st.ok()) err = st.error().message();
          tensor.reset();
        });
        w.u8(1);
        w.f64(t_send);
      } else {
        double t_recv = 0, t_end = 0;
        bool same = false;
        err = task ? receive_and_check(*proc, *task, job, parsed, step, bytes, t_recv, t_end, same) : "no task started";
        w.u8(1);
        w.f64(t_recv);
        w.f64(t_end);
        w.u8(same);
      }
      break;
    case CLEANUP:
      Emulation::on(*proc, [&] {
        if (task) task->rendezvous().cleanup(step);
      });
      break;
    case RECORDS:
      Emulation::on(*proc, [&] {
        const auto& recs = task ? task->log().records() : std::vector<transports::TransferRecord>{};
        w.u8(1);
        w.u32(uint32_t(recs.size()));
        for (const auto& rec : recs)
          put_record(w, rec);
      });
      break;
    default:
      err = "unknown command";
    }
    send_frame(ctl, err.empty() ? (op == GO || op == RECORDS ? w.take() : std::vector<uint8_t>{1}) : error_reply(err));
  }
  if (proc && task)
    Emulation::on(*proc, [&] {
      task->transport().shutdown();
      task.reset();
    });
  proc.reset();
  ::_exit(0);
}

} // namespace

Result<std::unique_ptr<ProcessPair>> ProcessPair::spawn(const EmuTransferJob& job)
{
  std::unique_ptr<ProcessPair> p(new ProcessPair());
  p->timeout_ = job.timeout;
  char tmpl[] = "/tmp/tensorpath-emu-XXXXXX";
  if (!::mkdtemp(tmpl)) return Error::msg(std::string("mkdtemp: ") + std::strerror(errno));
  p->dir_ = tmpl;
  for (int i = 0; i < 2; ++i) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      return Error::msg(std::string("socketpair: ") + std::strerror(errno));
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) return Error::msg(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      ::close(sv[0]);
      if (i == 1) ::close(p->ctl_[0]);
      child_main(sv[1], i, job, p->dir_);
    }
    ::close(sv[1]);
    p->pid_[i] = pid;
    p->ctl_[i] = sv[0];
  }
  return p;
}

ProcessPair::~ProcessPair()
{
  for (int i = 0; i < 2; ++i) {
    if (ctl_[i] >= 0) {
      rpc::Writer w;
      w.u8(EXIT);
      w.u64(0);
      w.u64(0);
      w.u8(0);
      send_frame(ctl_[i], w.take());
    }
  }
  for (int i = 0; i < 2; ++i) {
    if (pid_[i] <= 0) continue;
    // A child that does not finish within the job's timeout is killed.
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_);
    int status = 0;
    while (::waitpid(pid_[i], &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > end) {
        ::kill(pid_[i], SIGKILL);
        ::waitpid(pid_[i], &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (ctl_[i] >= 0) ::close(ctl_[i]);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

Status ProcessPair::send_cmd(int who, const std::vector<uint8_t>& cmd)
{
  if (!send_frame(ctl_[who], cmd))
    return Error::status("Unavailable", std::string(who == 0 ? "producer" : "consumer") + " process is gone");
  return ok_status();
}

Status ProcessPair::read_reply(int who, std::vector<uint8_t>& reply, double timeout)
{
  const char* name = who == 0 ? "producer" : "consumer";
  pollfd pf{ctl_[who], POLLIN, 0};
  const int pr = ::poll(&pf, 1, int(timeout * 1000));
  if (pr == 0) return Error::status("DeadlineExceeded", std::string(name) + " process did not answer in time");
  if (!read_frame(ctl_[who], reply)) return Error::status("Unavailable", std::string(name) + " process is gone");
  if (!reply.empty() && reply[0] == 0) {
    rpc::Reader r(reply.data() + 1, reply.size() - 1);
    std::string e;
    r.str(e);
    return Error::msg(std::string(name) + ": " + e);
  }
  return ok_status();
}

Status ProcessPair::call(int who, const std::vector<uint8_t>& cmd, std::vector<uint8_t>* reply, double timeout)
{
  TP_TRY(send_cmd(who, cmd));
  std::vector<uint8_t> r;
  TP_TRY(read_reply(who, r, timeout));
  if (reply) *reply = std::move(r);
  return ok_status();
}

namespace {
std::vector<uint8_t> command(Op op, int64_t step = 0, uint64_t bytes = 0)
{
  rpc::Writer w;
  w.u8(op);
  w.u64(uint64_t(step));
  w.u64(bytes);
  w.u8(0);
  return w.take();
}
} // namespace

Status ProcessPair::start()
{
  // Both at once: each side's transport may wait for the other's listener.
  TP_TRY(send_cmd(0, command(START)));
  TP_TRY(send_cmd(1, command(START)));
  std::vector<uint8_t> r;
  TP_TRY(read_reply(0, r, timeout_));
  return read_reply(1, r, timeout_);
}

Status ProcessPair::prepare(int64_t step, uint64_t bytes)
{
  return call(0, command(PREPARE, step, bytes), nullptr, timeout_);
}

Status ProcessPair::go(int64_t step, uint64_t bytes, bool consumer, bool producer)
{
  if (consumer) TP_TRY(send_cmd(1, command(GO, step, bytes)));
  if (producer) TP_TRY(send_cmd(0, command(GO, step, bytes)));
  return ok_status();
}

Result<ProcessPair::Received> ProcessPair::consumer_result(double timeout)
{
  std::vector<uint8_t> reply;
  TP_TRY(read_reply(1, reply, timeout));
  rpc::Reader r(reply.data(), reply.size());
  uint8_t ok = 0, same = 0;
  Received out;
  if (!r.u8(ok) || !r.f64(out.t_recv) || !r.f64(out.t_end) || !r.u8(same))
    return Error::msg("consumer: malformed reply");
  out.bytes_ok = same;
  return out;
}

Result<double> ProcessPair::producer_result(double timeout)
{
  std::vector<uint8_t> reply;
  TP_TRY(read_reply(0, reply, timeout));
  rpc::Reader r(reply.data(), reply.size());
  uint8_t ok = 0;
  double t = 0;
  if (!r.u8(ok) || !r.f64(t)) return Error::msg("producer: malformed reply");
  return t;
}

Status ProcessPair::cleanup(int64_t step)
{
  TP_TRY(call(0, command(CLEANUP, step), nullptr, timeout_));
  return call(1, command(CLEANUP, step), nullptr, timeout_);
}

Result<transports::TransferLog> ProcessPair::records()
{
  transports::TransferLog log;
  for (int who = 0; who < 2; ++who) {
    std::vector<uint8_t> reply;
    TP_TRY(call(who, command(RECORDS), &reply, timeout_));
    rpc::Reader r(reply.data(), reply.size());
    uint8_t ok = 0;
    uint32_t n = 0;
    if (!r.u8(ok) || !r.u32(n)) return Error::msg("malformed records reply");
    for (uint32_t i = 0; i < n; ++i) {
      transports::TransferRecord rec;
      if (!get_record(r, rec)) return Error::msg("malformed records reply");
      log.add(rec);
    }
  }
  return log;
}

std::string ProcessPair::fatal_note() const
{
  for (const char* who : {"producer", "consumer"}) {
    std::ifstream in(dir_ + "/fatal-" + who);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!text.empty()) return std::string(who) + ": " + text;
  }
  return {};
}

void ProcessPair::kill_producer()
{
  if (pid_[0] > 0) ::kill(pid_[0], SIGKILL);
}

Result<EmuTransferResult> run_process_transfer(const EmuTransferJob& job)
{
  transports::register_builtin_transports();
  if (!transports::find_transport(job.transport))
    return Error::at("", "transport", "a registered transport", "\"" + job.transport + "\"");
  if (job.device != "soft")
    return Error::at("", "device", "soft (OS processes use the software device over shared memory)", job.device);
  auto pair = ProcessPair::spawn(job);
  if (!pair.ok()) return pair.error();
  ProcessPair& pp = *pair.value();
  TP_TRY(pp.start());
  EmuTransferResult out;
  out.transport = job.transport;
  int64_t step = 0;
  for (uint64_t bytes : job.sizes) {
    EmuTransferPoint pt;
    pt.bytes = bytes;
    std::vector<double> latencies;
    for (int s = 0; s < job.steps; ++s) {
      ++step;
      TP_TRY(pp.prepare(step, bytes));
      TP_TRY(pp.go(step, bytes, true, true));
      auto sent = pp.producer_result(job.timeout);
      if (!sent.ok()) {
        if (auto why = pp.fatal_note(); !why.empty()) return Error::msg(job.transport + ": " + why);
        return sent.error();
      }
      auto got = pp.consumer_result(job.timeout);
      if (!got.ok()) {
        // A child that aborted (a failure the original treats as fatal) left its reason: that is the job's error.
        if (auto why = pp.fatal_note(); !why.empty()) return Error::msg(job.transport + ": " + why);
        return Error::msg(job.transport + ": " + got.error().message());
      }
      const double lat = got->t_end - std::min(got->t_recv, sent.value());
      pt.bytes_ok = pt.bytes_ok && got->bytes_ok;
      latencies.push_back(lat);
      TP_TRY(pp.cleanup(step));
    }
    jobs::finish_point(pt, latencies, jobs::TransferDriverJob::Steady::MEDIAN_AFTER_FIRST, 1);
    out.points.push_back(pt);
  }
  auto recs = pp.records();
  if (!recs.ok()) return recs.error();
  out.records = recs.value();
  return out;
}

} // namespace tp::emu
