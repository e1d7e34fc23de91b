// Unit table for hardware profiles.
#include "models/quantity.hpp"

#include <cmath>
#include <map>
#include <utility>

namespace tp::models {

const char* to_string(Dimension d)
{
  switch (d) {
  case Dimension::BYTES:
    return "a size (B, KiB, MiB, GiB, KB, MB, GB)";
  case Dimension::BYTE_RATE:
    return "a rate (B/s, MB/s, GB/s, GiB/s, Mb/s, Gb/s)";
  case Dimension::TIME:
    return "a time (s, ms, us, ns)";
  case Dimension::TRANSFER_RATE:
    return "a signalling rate (GT/s)";
  case Dimension::FREQUENCY:
    return "a frequency (Hz, MHz, GHz)";
  case Dimension::FLOP_RATE:
    return "a compute rate (GFLOP/s, TFLOP/s)";
  case Dimension::MESSAGE_RATE:
    return "a message rate (msg/s, Mmsg/s)";
  case Dimension::IMAGE_RATE:
    return "an image rate (img/s)";
  case Dimension::COUNT:
    return "a count (unit \"1\")";
  case Dimension::FRACTION:
    return "a fraction (unit \"fraction\" or \"%\")";
  }
  return "?";
}

const char* si_unit(Dimension d)
{
  switch (d) {
  case Dimension::BYTES:
    return "B";
  case Dimension::BYTE_RATE:
    return "B/s";
  case Dimension::TIME:
    return "s";
  case Dimension::TRANSFER_RATE:
    return "T/s";
  case Dimension::FREQUENCY:
    return "Hz";
  case Dimension::FLOP_RATE:
    return "FLOP/s";
  case Dimension::MESSAGE_RATE:
    return "msg/s";
  case Dimension::IMAGE_RATE:
    return "img/s";
  case Dimension::COUNT:
  case Dimension::FRACTION:
    return "";
  }
  return "?";
}

double max_si(Dimension d)
{
  switch (d) {
  case Dimension::BYTES:
    return 1125899906842624.0; // 1 PiB: a sum of all memory of a large cluster, not one part
  case Dimension::BYTE_RATE:
    return 1e15; // 1 PB/s (8 Pb/s): 200x an HBM3 stack, 10,000x a 800 Gb/s NIC
  case Dimension::TIME:
    return 3600; // an hour: profiles hold latencies and per-call overheads (microseconds)
  case Dimension::TRANSFER_RATE:
    return 1e12; // 1000 GT/s per lane (PCIe 7.0 signals at 128 GT/s)
  case Dimension::FREQUENCY:
    return 1e12; // 1 THz
  case Dimension::FLOP_RATE:
    return 1e18; // 1 EFLOP/s for one device
  case Dimension::MESSAGE_RATE:
    return 1e12;
  case Dimension::IMAGE_RATE:
    return 1e9;
  case Dimension::COUNT:
    return 1e12;
  case Dimension::FRACTION:
    return 1;
  }
  return 0;
}

Result<double> to_si(double value, const std::string& unit, Dimension dim)
{
  static const std::map<std::string, std::pair<Dimension, double>> table = {
      {"B", {Dimension::BYTES, 1}},
      {"KB", {Dimension::BYTES, 1e3}},
      {"MB", {Dimension::BYTES, 1e6}},
      {"GB", {Dimension::BYTES, 1e9}},
      {"KiB", {Dimension::BYTES, 1024.0}},
      {"MiB", {Dimension::BYTES, 1024.0 * 1024}},
      {"GiB", {Dimension::BYTES, 1024.0 * 1024 * 1024}},
      {"B/s", {Dimension::BYTE_RATE, 1}},
      {"KB/s", {Dimension::BYTE_RATE, 1e3}},
      {"MB/s", {Dimension::BYTE_RATE, 1e6}},
      {"GB/s", {Dimension::BYTE_RATE, 1e9}},
      {"MiB/s", {Dimension::BYTE_RATE, 1024.0 * 1024}},
      {"GiB/s", {Dimension::BYTE_RATE, 1024.0 * 1024 * 1024}},
      {"b/s", {Dimension::BYTE_RATE, 1.0 / 8}},
      {"Kb/s", {Dimension::BYTE_RATE, 1e3 / 8}},
      {"Mb/s", {Dimension::BYTE_RATE, 1e6 / 8}},
      {"Gb/s", {Dimension::BYTE_RATE, 1e9 / 8}},
      {"s", {Dimension::TIME, 1}},
      {"ms", {Dimension::TIME, 1e-3}},
      {"us", {Dimension::TIME, 1e-6}},
      {"ns", {Dimension::TIME, 1e-9}},
      {"GT/s", {Dimension::TRANSFER_RATE, 1e9}},
      {"Hz", {Dimension::FREQUENCY, 1}},
      {"MHz", {Dimension::FREQUENCY, 1e6}},
      {"GHz", {Dimension::FREQUENCY, 1e9}},
      {"FLOP/s", {Dimension::FLOP_RATE, 1}},
      {"GFLOP/s", {Dimension::FLOP_RATE, 1e9}},
      {"TFLOP/s", {Dimension::FLOP_RATE, 1e12}},
      {"msg/s", {Dimension::MESSAGE_RATE, 1}},
      {"Mmsg/s", {Dimension::MESSAGE_RATE, 1e6}},
      {"img/s", {Dimension::IMAGE_RATE, 1}},
      {"1", {Dimension::COUNT, 1}},
      {"count", {Dimension::COUNT, 1}},
      {"fraction", {Dimension::FRACTION, 1}},
      {"%", {Dimension::FRACTION, 0.01}},
  };
  auto it = table.find(unit);
  if (it == table.end() || it->second.first != dim) return Error::at({}, {}, to_string(dim), "unit \"" + unit + "\"");
  if (!std::isfinite(value)) return Error::at({}, {}, "a finite number", "non-finite value");
  return value * it->second.second;
}

} // namespace tp::models
