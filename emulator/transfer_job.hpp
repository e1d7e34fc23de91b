// One tensor (or a size sweep) between two emulated processes through a chosen transport and memory strategy,
// moving real bytes: the emulator's counterpart of sim/transfer_job. Every received tensor is checked byte for
// byte; latencies are wall time. The engine of `tensorpath emulate`: the emulator's side of the transfer driver
// (core/jobs/transfer_driver.hpp), with its time limits, byte check and median of steps. Tests:
// tests/emulator/emulation_test.cpp.
#pragma once

#include "core/jobs/transfer_driver.hpp"
#include "core/memory/tensor_memory.hpp"
#include "core/transports/transfer_record.hpp"
#include "core/transports/transport.hpp"

#include <string>
#include <vector>

namespace tp::emu {

/// tensors_per_step and gpudirect_gpus are not used: one tensor per step, GPUDirect from GPU 0.
struct EmuTransferJob : jobs::TransferSpec {
  EmuTransferJob() { steps = 5; } ///< the first is first use, the median of the rest is the steady state
  double timeout = 30;            ///< seconds per step before the job fails (a stalled protocol)
  std::string device = "soft";    ///< "soft" or "ibv[:NAME]" (see Emulation::Options)
  /// Producer and consumer as two OS processes (forked; software device over shared memory, TCP streams) instead
  /// of two emulated processes in this one.
  bool os_processes = false;
};

/// Latencies (first use; steady: the median of the steps after the first), bandwidth and the byte check of one size
/// (the driver's point: core/jobs/transfer_driver.hpp).
using EmuTransferPoint = jobs::TransferPoint;

struct EmuTransferResult {
  std::string transport;
  std::vector<EmuTransferPoint> points;
  transports::TransferLog records;
};

/// Whether an emulated transfer of `bytes` can run on this machine: at most MAX_EMULATED_BYTES (a float32 tensor of
/// 2^50 elements, the most a tensor's meta-data carries), and its real copies (estimate_emulated_transfer) within the
/// memory available. The error names `option` (e.g. "--size"), the size and the limit.
Status check_emulated_size(uint64_t bytes, const std::string& option);
constexpr uint64_t MAX_EMULATED_BYTES = 4 * uint64_t(MAX_TENSOR_ELEMENTS);

/// Every size is checked first (check_emulated_size, option "size"): nothing runs when one is refused.
Result<EmuTransferResult> run_emulated_transfer(const EmuTransferJob& job);

} // namespace tp::emu
