// PCIe link model: raw rate from generation and lanes, TLP/DLLP overheads after pcie-bench's pcie-model
// (Neugebauer et al., SIGCOMM'18), giving the goodput of device-initiated writes (MPS-sized posted TLPs,
// flowing device->root) and of read completions (flowing root->device). Profiles: models/hw/pcie/*.json.
#pragma once

#include <string>

namespace tp::models {

struct PcieProfile {
  std::string name;
  double transfer_rate = 8e9; ///< per lane, transfers/s (Gen3: 8 GT/s)
  double encoding_efficiency = 128.0 / 130.0;
  int lanes = 16;
  double max_payload_size = 256;       ///< bytes (negotiated MPS)
  double write_tlp_overhead = 24;      ///< bytes per posted-write TLP (64-bit address header + framing + LCRC)
  double completion_tlp_overhead = 20; ///< bytes per completion-with-data TLP
  double dllp_overhead = 0.0;          ///< fraction of link bandwidth taken by ACK/FC DLLPs and SKIP sets
  double link_latency = 0;             ///< one-way traversal latency of the link, seconds

  /// Raw data bandwidth per direction after line encoding, bytes/s.
  double raw_bandwidth() const { return transfer_rate * lanes * encoding_efficiency / 8.0; }
  /// Bandwidth left for TLPs after DLLPs, bytes/s.
  double tlp_bandwidth() const { return raw_bandwidth() * (1.0 - dllp_overhead); }
  /// Payload goodput of a stream of MPS-sized posted writes (device DMA write), bytes/s.
  double posted_write_bandwidth() const
  {
    return tlp_bandwidth() * max_payload_size / (max_payload_size + write_tlp_overhead);
  }
  /// Payload goodput of read completions of `completion_size` bytes (device DMA read), bytes/s.
  double read_completion_bandwidth(double completion_size) const
  {
    return tlp_bandwidth() * completion_size / (completion_size + completion_tlp_overhead);
  }
};

} // namespace tp::models
