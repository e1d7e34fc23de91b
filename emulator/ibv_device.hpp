// The libibverbs device: the engine's verbs interface on a real RDMA device (hardware, or rxe soft-RoCE), so the
// same transports run over real verbs. RC QPs, ibv_reg_mr, post_send/post_recv, completions polled by a progress
// thread and delivered on the owner's runtime; RoCE (Ethernet link layer) gets a GRH with the port's GID. Where
// the machine has no RDMA device (ibv_get_device_list returns none: this kernel has no RDMA) open() says so with
// an "Unavailable" error naming the cause, and callers skip. Tests: tests/emulator/ibv_device_test.cpp,
// tests/device/ibv_contract_test.cpp; validation/rxe (a soft-RoCE VM) runs it for real.
#pragma once

#include "core/device/device.hpp"
#include "core/runtime/runtime.hpp"

#include <memory>
#include <string>

namespace tp::emu {

class IbvDevice : public verbs::Device {
public:
  /// Open `name` (empty: the first device), port 1. Error code "Unavailable" when there is no device.
  static Result<std::unique_ptr<IbvDevice>> open(Runtime& rt, const std::string& name = {});
  /// Names of the RDMA devices of this machine (empty when none), or the reason there are none.
  static Result<std::vector<std::string>> list();
  ~IbvDevice() override = default;
};

} // namespace tp::emu
