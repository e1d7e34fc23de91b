// TensorFlow rendezvous keys: "<src_device>;<src_incarnation hex16>;<dst_device>;<edge_name>;<frame>:<iter>",
// device names "/job:<job>/replica:<r>/task:<t>/device:<CPU|GPU>:<id>". Parse errors are Errors (TF:
// InvalidArgument) that say which field is wrong. Tests: tests/core/rendezvous_test.cpp.
#pragma once

#include "core/common/result.hpp"

#include <cstdint>
#include <string>

namespace tp::rendezvous {

struct DeviceName {
  std::string job;
  int replica = 0;
  int task = 0;
  std::string type; ///< "CPU" or "GPU"
  int id = 0;

  /// "/job:worker/replica:0/task:1/device:GPU:0"
  std::string full() const;
  /// "/job:worker/replica:0/task:1": the address space (process) the device belongs to
  std::string task_name() const;
  bool same_address_space(const DeviceName& o) const { return job == o.job && replica == o.replica && task == o.task; }
};

Result<DeviceName> parse_device_name(const std::string& text);

struct ParsedKey {
  std::string full;
  DeviceName src;
  uint64_t src_incarnation = 0;
  DeviceName dst;
  std::string edge_name;
  uint32_t frame_id = 0;
  uint32_t iter_id = 0;
  /// The key without frame/iteration: "edge identity", used to name per-key buffers (TF verbs v1).
  std::string name_without_frame() const;
};

Result<ParsedKey> parse_key(const std::string& key);
std::string create_key(const std::string& src_device, uint64_t src_incarnation, const std::string& dst_device,
                       const std::string& edge_name, uint32_t frame_id = 0, uint32_t iter_id = 0);

} // namespace tp::rendezvous
