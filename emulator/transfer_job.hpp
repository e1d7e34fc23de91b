// One tensor (or a size sweep) between two emulated processes through a chosen transport and memory strategy,
// moving real bytes: the emulator's counterpart of sim/transfer_job. Every received tensor is checked byte for
// byte; latencies are wall time. The engine of `tensorpath emulate`. Tests: tests/emulator/emulation_test.cpp.
#pragma once

#include "core/memory/tensor_memory.hpp"
#include "core/transports/transfer_record.hpp"
#include "core/transports/transport.hpp"

#include <string>
#include <vector>

namespace tp::emu {

struct EmuTransferJob {
  std::string transport = "grpc";
  memory::StrategyKind strategy = memory::StrategyKind::POOL_VISITOR;
  transports::TransportOptions options;
  std::vector<uint64_t> sizes{1 << 20};
  int steps = 5; ///< per size; the first is first use, the median of the rest is the steady state
  Location src = Location::host(0);
  Location dst = Location::host(0);
  double timeout = 30;         ///< seconds per step before the job fails (a stalled protocol)
  std::string device = "soft"; ///< "soft" or "ibv[:NAME]" (see Emulation::Options)
  /// Producer and consumer as two OS processes (forked; software device over shared memory, TCP streams) instead
  /// of two emulated processes in this one.
  bool os_processes = false;
};

struct EmuTransferPoint {
  uint64_t bytes = 0;
  double first_latency = 0;  ///< seconds
  double steady_latency = 0; ///< median of the steps after the first
  double bandwidth = 0;      ///< bytes / steady latency
  bool bytes_ok = true;      ///< every received tensor equal to what was sent
};

struct EmuTransferResult {
  std::string transport;
  std::vector<EmuTransferPoint> points;
  transports::TransferLog records;
};

Result<EmuTransferResult> run_emulated_transfer(const EmuTransferJob& job);

} // namespace tp::emu
