// Per-transfer records: where the time of one tensor transfer went (serialization, copies, registration,
// PCIe copies, wire, waiting) and how many copies and registrations it took. Each side (producer, consumer)
// writes its own record into its process's TransferLog; reports join them by (step, key).
// JSON and CSV output. Tests: tests/core/transfer_record_test.cpp.
#pragma once

#include "core/common/result.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tp::transports {

/// CPU: the transfer's messages waited for the threads that carry them (a process's gRPC threads busy, or their work
/// on the bytes slower than the wire: sim/sim_stream.cpp), beyond the wire time.
enum class Phase : uint8_t { SERIALIZE, COPY, REGISTRATION, PCIE, WIRE, CPU, COUNT };
const char* to_string(Phase p);

/// Which end of a transfer a record describes; written as "consumer" / "producer" in every output.
enum class Side : uint8_t { CONSUMER, PRODUCER };
const char* to_string(Side s);
/// "consumer" or "producer" (the names to_string writes); anything else is an error naming `field`.
Result<Side> parse_side(const std::string& text, const std::string& field = "side");

struct TransferRecord {
  std::string transport;
  Side side = Side::CONSUMER;
  int64_t step = 0;
  std::string key;
  std::string local_task, peer_task;
  uint64_t bytes = 0;
  std::string src_location, dst_location;
  bool is_dead = false;
  bool ok = true;
  std::string error;
  double t_start = 0, t_end = 0;
  std::array<double, size_t(Phase::COUNT)> seconds{};
  uint32_t copies = 0;
  uint32_t registrations = 0;

  double total() const { return t_end - t_start; }
  /// Time not attributed to a phase (waiting for the producer, control round trips, queueing).
  double wait() const;
  void add(Phase p, double s) { seconds[size_t(p)] += s; }
};

class TransferLog {
public:
  void add(TransferRecord r) { records_.push_back(std::move(r)); }
  const std::vector<TransferRecord>& records() const { return records_; }
  void clear() { records_.clear(); }
  std::string to_json() const;
  static std::string csv_header();
  std::string to_csv() const;

private:
  std::vector<TransferRecord> records_;
};

} // namespace tp::transports
