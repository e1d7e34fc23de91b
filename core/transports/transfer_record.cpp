// Record formatting (hand-written JSON: core/ stays free of JSON libraries).
#include "core/transports/transfer_record.hpp"

#include <cstdio>

namespace tp::transports {

const char* to_string(Phase p)
{
  switch (p) {
  case Phase::SERIALIZE:
    return "serialize";
  case Phase::COPY:
    return "copy";
  case Phase::REGISTRATION:
    return "registration";
  case Phase::PCIE:
    return "pcie";
  case Phase::WIRE:
    return "wire";
  case Phase::CPU:
    return "cpu";
  case Phase::COUNT:
    break;
  }
  return "?";
}

const char* to_string(Side s)
{
  return s == Side::PRODUCER ? "producer" : "consumer";
}

Result<Side> parse_side(const std::string& text, const std::string& field)
{
  for (Side s : {Side::CONSUMER, Side::PRODUCER})
    if (text == to_string(s)) return s;
  return Error::at("", field, "consumer or producer", "\"" + text + "\"");
}

double TransferRecord::wait() const
{
  double attributed = 0;
  for (double s : seconds)
    attributed += s;
  const double w = total() - attributed;
  return w > 0 ? w : 0;
}

namespace {

std::string escape(const std::string& s)
{
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
      continue;
    }
    o += c;
  }
  return o;
}

std::string num(double v)
{
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

} // namespace

std::string TransferLog::to_json() const
{
  std::string o = "[";
  for (size_t i = 0; i < records_.size(); ++i) {
    const auto& r = records_[i];
    o += i ? ",\n " : "\n ";
    o += "{\"transport\": \"" + escape(r.transport) + "\", \"side\": \"" + to_string(r.side) +
         "\", \"step\": " + std::to_string(r.step) + ", \"key\": \"" + escape(r.key) + "\", \"local_task\": \"" +
         escape(r.local_task) + "\", \"peer_task\": \"" + escape(r.peer_task) +
         "\", \"bytes\": " + std::to_string(r.bytes) + ", \"src_location\": \"" + r.src_location +
         "\", \"dst_location\": \"" + r.dst_location + "\", \"is_dead\": " + (r.is_dead ? "true" : "false") +
         ", \"ok\": " + (r.ok ? "true" : "false") + ", \"error\": \"" + escape(r.error) +
         "\", \"t_start\": " + num(r.t_start) + ", \"t_end\": " + num(r.t_end) + ", \"seconds\": {";
    for (size_t p = 0; p < size_t(Phase::COUNT); ++p)
      o += std::string(p ? ", " : "") + "\"" + to_string(Phase(p)) + "\": " + num(r.seconds[p]);
    o += ", \"wait\": " + num(r.wait()) + "}, \"copies\": " + std::to_string(r.copies) +
         ", \"registrations\": " + std::to_string(r.registrations) + "}";
  }
  return o + "\n]\n";
}

std::string TransferLog::csv_header()
{
  return "transport,side,step,key,local_task,peer_task,bytes,src_location,dst_location,is_dead,ok,t_start,t_end,"
         "serialize_s,copy_s,registration_s,pcie_s,wire_s,cpu_s,wait_s,copies,registrations,error\n";
}

namespace {

/// A CSV field in double quotes, inner quotes doubled (RFC 4180).
std::string csv_quoted(const std::string& v)
{
  std::string o = "\"";
  for (char c : v)
    o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

} // namespace

std::string TransferLog::to_csv() const
{
  std::string o;
  for (const auto& r : records_) {
    o += r.transport + "," + to_string(r.side) + "," + std::to_string(r.step) + "," + csv_quoted(r.key) + "," +
         r.local_task + "," + r.peer_task + "," + std::to_string(r.bytes) + "," + r.src_location + "," +
         r.dst_location + "," + (r.is_dead ? "1" : "0") + "," + (r.ok ? "1" : "0") + "," + num(r.t_start) + "," +
         num(r.t_end);
    for (double s : r.seconds)
      o += "," + num(s);
    o += "," + num(r.wait()) + "," + std::to_string(r.copies) + "," + std::to_string(r.registrations) + "," +
         csv_quoted(r.error) + "\n";
  }
  return o;
}

} // namespace tp::transports
