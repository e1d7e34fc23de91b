// Where a buffer lives: host memory of a NUMA node, or a GPU's memory. Every cost in tensorpath
// (which PCIe link, whether QPI/UPI is crossed, GPUDirect or not) is decided from Locations.
#pragma once

#include <cstdint>
#include <string>

namespace tp {

enum class LocationKind : uint8_t { HOST, GPU };

struct Location {
  LocationKind kind = LocationKind::HOST;
  int index = 0; ///< NUMA node for HOST, GPU ordinal for GPU

  static Location host(int numa_node) { return {LocationKind::HOST, numa_node}; }
  static Location gpu(int ordinal) { return {LocationKind::GPU, ordinal}; }
  bool is_gpu() const { return kind == LocationKind::GPU; }
  bool is_host() const { return kind == LocationKind::HOST; }
  friend bool operator==(const Location&, const Location&) = default;
  /// "host:0", "gpu:2"
  std::string to_string() const { return (is_gpu() ? "gpu:" : "host:") + std::to_string(index); }
};

} // namespace tp
