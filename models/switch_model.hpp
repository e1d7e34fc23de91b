// Network switch model: port-to-port (cut-through) latency, and the packet memory that the congestion models'
// ports hold (tcp-incast's drop-tail port, the roce model's PFC accounting). The fabric is otherwise non-blocking.
// Profiles: models/hw/switch/*.json; docs/formats.md lists the fields and docs/network-models.md how the
// congestion models use the buffer.
#pragma once

#include "core/common/result.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tp::models {

/// A shared-memory switch's packet buffer: the pools its classes draw from and the dynamic thresholds that share a
/// pool among its queues (Choudhury and Hahne, "Dynamic queue length thresholds for shared-memory packet switches",
/// IEEE/ACM ToN 6(2), 1998; the "alpha" of Broadcom's and Mellanox's ASICs and of SONiC's buffer profiles,
/// alpha = 2^dynamic_th): a queue takes a packet while its length is below alpha x its pool's free bytes.
struct SwitchBuffer {
  uint64_t memory = 0;        ///< the chip's packet memory, bytes (what the pools are carved from; 0: not given)
  uint64_t lossy_pool = 0;    ///< bytes of the pool a lossy (drop-tail) class's egress queues share
  double lossy_alpha = 0;     ///< dynamic threshold of a lossy egress queue
  uint64_t lossless_pool = 0; ///< bytes of the pool a lossless class's ingress priority groups share, beyond their
                              ///< headroom (0: not given; the roce model keeps its own)
  double lossless_alpha = 0;  ///< dynamic threshold of a lossless ingress priority group: PFC pauses above it
  /// A lossless priority group's PFC figures by port speed (SAI's buffer profile: XOFF_TH, the headroom that takes
  /// what arrives after the PAUSE; XON_TH, below which RESUME goes out whatever the threshold), for the cable the
  /// source assumes; XON_OFFSET_TH (RESUME below the threshold minus it), one for every speed. Empty: not given.
  struct PfcRow {
    double rate = 0; ///< port speed, bits/s
    uint64_t xoff = 0, xon = 0;
  };
  std::vector<PfcRow> pfc;
  uint64_t xon_offset = 0;
  std::string pfc_cable; ///< the cable the rows assume, as the source says ("5m")
};

/// The PFC figures for a port of `rate` bits/s: the row of that speed, else of the next faster speed listed (a port
/// between two speeds takes the larger headroom); a port faster than every row is k parallel ports of the fastest
/// (an aggregate uplink), k = ceil(rate / its speed), with k times its XOFF_TH and XON_TH. nullopt without rows.
std::optional<SwitchBuffer::PfcRow> pfc_row(const std::vector<SwitchBuffer::PfcRow>& rows, double rate);

struct SwitchProfile {
  std::string name;
  double latency = 0;                 ///< port-to-port latency, seconds
  std::optional<SwitchBuffer> buffer; ///< none: the profile does not give the switch's memory
};

/// What each of `congested` queues holds when they fill together under a dynamic threshold `alpha` over `shared`
/// bytes: the fixed point of q = alpha (shared - n q), q = alpha shared / (1 + n alpha) (Choudhury and Hahne 1998).
/// One congested queue holds alpha / (1 + alpha) of the memory: 8/9 of it at alpha 8, 1/9 at alpha 1/8.
uint64_t dynamic_threshold_share(uint64_t shared, double alpha, int congested);

/// The bytes a lossy egress port toward a receiver holds when `congested` such ports fill at once: the switch's
/// dynamic-threshold share; an error naming the profile when it gives no buffer.
Result<uint64_t> lossy_port_buffer(const SwitchProfile& sw, int congested);

} // namespace tp::models
