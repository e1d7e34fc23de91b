// The switch buffer's dynamic-threshold arithmetic (models/switch_model.hpp).
#include "models/switch_model.hpp"

#include <cmath>

namespace tp::models {

uint64_t dynamic_threshold_share(uint64_t shared, double alpha, int congested)
{
  if (!(alpha > 0) || congested < 1) return 0;
  return uint64_t(std::floor(alpha * double(shared) / (1.0 + double(congested) * alpha)));
}

std::optional<SwitchBuffer::PfcRow> pfc_row(const std::vector<SwitchBuffer::PfcRow>& rows, double rate)
{
  const SwitchBuffer::PfcRow *best = nullptr, *fastest = nullptr;
  for (const auto& row : rows) {
    if (row.rate >= rate * (1 - 1e-6) && (!best || row.rate < best->rate)) best = &row;
    if (!fastest || row.rate > fastest->rate) fastest = &row;
  }
  if (best) return *best;
  if (!fastest) return std::nullopt;
  const uint64_t k = uint64_t(std::ceil(rate / fastest->rate * (1 - 1e-9)));
  return SwitchBuffer::PfcRow{fastest->rate * double(k), fastest->xoff * k, fastest->xon * k};
}

Result<uint64_t> lossy_port_buffer(const SwitchProfile& sw, int congested)
{
  if (!sw.buffer || sw.buffer->lossy_pool == 0 || !(sw.buffer->lossy_alpha > 0))
    return Error::at(sw.name, "buffer",
                     "a switch profile with a buffer (a lossy pool and its alpha; docs/formats.md), or the "
                     "port's bytes given directly",
                     "switch \"" + sw.name + "\" gives no buffer");
  return dynamic_threshold_share(sw.buffer->lossy_pool, sw.buffer->lossy_alpha, congested);
}

} // namespace tp::models
