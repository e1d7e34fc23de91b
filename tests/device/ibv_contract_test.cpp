// The device contract suite (tests/device/device_contract_cases.hpp) on the libibverbs device (emulator/ibv_device):
// both ends open this machine's first RDMA device, one QP each, looped back. Where the machine has none (this
// kernel has no RDMA) every case says "skipped: " and why; validation/rxe/run.sh runs these cases ("[ibv-contract]") on
// real soft-RoCE in a VM and reports them: where rxe differs from the contract (IBTA, mlx5) it prints what rxe
// returned.
#include "tests/device/emulation_pair.hpp"

namespace tp::test {

namespace {
Result<std::unique_ptr<DevicePair>> make_device_pair(const PairOptions& options)
{
  return EmulationPair::make(options, "ibv", "the libibverbs device");
}
} // namespace

} // namespace tp::test

#define DEVICE_UNDER_TEST "libibverbs device"
#define DEVICE_TAGS "[ibv-contract]"
#include "tests/device/device_contract_cases.hpp"
