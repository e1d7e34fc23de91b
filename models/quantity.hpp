// Physical quantities in hardware profiles: every number in models/hw/*.json is written as
// {"value": 40, "unit": "Gb/s", "source": "..."} and converted here to SI (bytes, bytes/s, seconds).
// Tests: tests/models/quantity_test.cpp.
#pragma once

#include "core/common/result.hpp"

#include <string>

namespace tp::models {

enum class Dimension {
  BYTES,         ///< B, KB, KiB, MB, MiB, GB, GiB
  BYTE_RATE,     ///< B/s, MB/s, GB/s, GiB/s, and bit rates (b/s, Mb/s, Gb/s) converted to bytes/s
  TIME,          ///< s, ms, us, ns
  TRANSFER_RATE, ///< GT/s (PCIe signalling rate per lane), in transfers/s
  FREQUENCY,     ///< Hz, MHz, GHz
  FLOP_RATE,     ///< FLOP/s, GFLOP/s, TFLOP/s
  MESSAGE_RATE,  ///< msg/s, Mmsg/s
  IMAGE_RATE,    ///< img/s (training throughput)
  COUNT,         ///< unit "1" or "count"
  FRACTION,      ///< unit "fraction" (0..1) or "%"
};
const char* to_string(Dimension d);

/// Convert `value` given in `unit` to the SI base of `dim`; Error (expected/got) if the unit does not fit.
Result<double> to_si(double value, const std::string& unit, Dimension dim);

/// The SI unit a dimension is converted to ("B/s", "s", ...).
const char* si_unit(Dimension d);
/// The largest value of a dimension (SI) that can be right for any hardware a profile describes, far above any
/// real one: 1 PiB, 1 PB/s, an hour, 1 THz, 1 EFLOP/s, ... A larger number is a typo or a probe (1e308 Gb/s is
/// infinity in bytes/s), refused by the profile reader. docs/formats.md lists them.
double max_si(Dimension d);

} // namespace tp::models
