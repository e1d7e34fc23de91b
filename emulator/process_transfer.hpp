// The emulated transfer job across OS processes: a producer and a consumer process forked from the caller, each
// with its own event loop, shared-memory arena, software device (linked through emulator/process_link) and TCP
// streams, driven step by step over a control socket: the parent posts the Recv and the Send together and reads
// back the timestamps (CLOCK_MONOTONIC is one clock for the whole host), the byte check and the records.
// ProcessPair is the handle a test uses to kill a peer mid-transfer. It stays apart from the transfer driver
// (core/jobs/transfer_driver.hpp): its processes live in other address spaces, where the driver's work cannot be
// posted as closures, only as the fixed commands of the control socket. Tests:
// tests/emulator/process_transfer_test.cpp.
#pragma once

#include "emulator/transfer_job.hpp"

#include <sys/types.h>

#include <memory>
#include <string>

namespace tp::emu {

class ProcessPair {
public:
  /// Fork the producer and the consumer (call before this process starts any thread). Their directory is a fresh
  /// temporary one, removed by the destructor, which also ends both children.
  static Result<std::unique_ptr<ProcessPair>> spawn(const EmuTransferJob& job);
  ~ProcessPair();
  /// Both create their task and start the transport.
  Status start();
  /// The producer makes the step's tensor and fills it with the step's pattern.
  Status prepare(int64_t step, uint64_t bytes);
  /// The consumer posts the Recv (and reports when it completes), the producer the Send, at once.
  Status go(int64_t step, uint64_t bytes, bool consumer, bool producer);
  struct Received {
    double t_recv = 0, t_end = 0; ///< steady-clock seconds
    bool bytes_ok = false;
  };
  /// The consumer's report for the step posted with go(): an Error when its receive failed or it did not answer.
  Result<Received> consumer_result(double timeout);
  Result<double> producer_result(double timeout); ///< when the producer's Send was posted
  Status cleanup(int64_t step);
  Result<transports::TransferLog> records();
  void kill_producer(); ///< SIGKILL, as a crashed process
  /// What a child that aborted on a fatal failure (TaskContext::on_fatal) wrote before exiting; empty otherwise.
  std::string fatal_note() const;
  pid_t producer_pid() const { return pid_[0]; }

private:
  ProcessPair() = default;
  Status call(int who, const std::vector<uint8_t>& cmd, std::vector<uint8_t>* reply, double timeout);
  Status send_cmd(int who, const std::vector<uint8_t>& cmd);
  Status read_reply(int who, std::vector<uint8_t>& reply, double timeout);
  std::string dir_;
  pid_t pid_[2] = {-1, -1};
  int ctl_[2] = {-1, -1};
  double timeout_ = 30;
};

/// run_emulated_transfer() for job.os_processes: the same points, measured across two OS processes.
Result<EmuTransferResult> run_process_transfer(const EmuTransferJob& job);

} // namespace tp::emu
