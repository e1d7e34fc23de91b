// The device contract suite (tests/device/device_contract_cases.hpp) on the software device (emulator/soft_device)
// with both ends in threads of this OS process, on one SoftFabric.
#include "tests/device/emulation_pair.hpp"

namespace tp::test {

namespace {
Result<std::unique_ptr<DevicePair>> make_device_pair(const PairOptions& options)
{
  return EmulationPair::make(options, "soft", "the software device (threads)");
}
} // namespace

} // namespace tp::test

#define DEVICE_UNDER_TEST "software device (threads)"
#define DEVICE_TAGS "[emulator]"
#include "tests/device/device_contract_cases.hpp"
