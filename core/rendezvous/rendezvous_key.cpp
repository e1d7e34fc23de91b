// Key and device-name parsing.
#include "core/rendezvous/rendezvous_key.hpp"

#include <cctype>
#include <cstdio>
#include <vector>

namespace tp::rendezvous {

namespace {

std::vector<std::string> split(const std::string& s, char sep)
{
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) return out;
    start = p + 1;
  }
}

bool parse_uint(const std::string& s, uint64_t& out, int base = 10)
{
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (std::isdigit(static_cast<unsigned char>(c)))
      d = c - '0';
    else if (base == 16 && std::isxdigit(static_cast<unsigned char>(c)))
      d = std::tolower(static_cast<unsigned char>(c)) - 'a' + 10;
    else
      return false;
    if (v > (UINT64_MAX - uint64_t(d)) / uint64_t(base)) return false;
    v = v * uint64_t(base) + uint64_t(d);
  }
  out = v;
  return true;
}

Error key_error(const std::string& what, const std::string& expected, const std::string& got)
{
  Error e = Error::at("", what, expected, "\"" + got + "\"");
  e.code = "InvalidArgument";
  return e;
}

const char* const DEVICE_FORM = "/job:<name>/replica:<n>/task:<n>/device:<CPU|GPU>:<n>";

} // namespace

std::string DeviceName::full() const
{
  return task_name() + "/device:" + type + ":" + std::to_string(id);
}

std::string DeviceName::task_name() const
{
  return "/job:" + job + "/replica:" + std::to_string(replica) + "/task:" + std::to_string(task);
}

Result<DeviceName> parse_device_name(const std::string& text)
{
  auto parts = split(text, '/');
  // "", "job:x", "replica:0", "task:1", "device:GPU:0"
  if (parts.size() != 5 || !parts[0].empty()) return key_error("device name", DEVICE_FORM, text);
  DeviceName d;
  auto field = [&](const std::string& p, const std::string& prefix, std::string& value) {
    if (p.rfind(prefix, 0) != 0) return false;
    value = p.substr(prefix.size());
    return !value.empty();
  };
  std::string replica, task, device;
  uint64_t n = 0;
  if (!field(parts[1], "job:", d.job)) return key_error("device name job", DEVICE_FORM, text);
  if (!field(parts[2], "replica:", replica) || !parse_uint(replica, n) || n > 1000000)
    return key_error("device name replica", DEVICE_FORM, text);
  d.replica = int(n);
  if (!field(parts[3], "task:", task) || !parse_uint(task, n) || n > 1000000)
    return key_error("device name task", DEVICE_FORM, text);
  d.task = int(n);
  if (!field(parts[4], "device:", device)) return key_error("device name device", DEVICE_FORM, text);
  auto dev = split(device, ':');
  if (dev.size() != 2 || (dev[0] != "CPU" && dev[0] != "GPU") || !parse_uint(dev[1], n) || n > 1000000)
    return key_error("device name device", DEVICE_FORM, text);
  d.type = dev[0];
  d.id = int(n);
  return d;
}

Result<ParsedKey> parse_key(const std::string& key)
{
  auto parts = split(key, ';');
  if (parts.size() != 5)
    return key_error("rendezvous key", "5 fields separated by ';' (src;incarnation;dst;edge;frame:iter)", key);
  ParsedKey k;
  k.full = key;
  auto src = parse_device_name(parts[0]);
  if (!src.ok()) return key_error("rendezvous key src_device", DEVICE_FORM, parts[0]);
  k.src = src.value();
  if (!parse_uint(parts[1], k.src_incarnation, 16) || parts[1].size() > 16)
    return key_error("rendezvous key src_incarnation", "up to 16 hex digits", parts[1]);
  auto dst = parse_device_name(parts[2]);
  if (!dst.ok()) return key_error("rendezvous key dst_device", DEVICE_FORM, parts[2]);
  k.dst = dst.value();
  if (parts[3].empty()) return key_error("rendezvous key edge_name", "a non-empty edge name", parts[3]);
  k.edge_name = parts[3];
  auto fi = split(parts[4], ':');
  uint64_t f = 0, i = 0;
  if (fi.size() != 2 || !parse_uint(fi[0], f) || !parse_uint(fi[1], i) || f > UINT32_MAX || i > UINT32_MAX)
    return key_error("rendezvous key frame_id:iter_id", "two integers separated by ':'", parts[4]);
  k.frame_id = uint32_t(f);
  k.iter_id = uint32_t(i);
  return k;
}

std::string ParsedKey::name_without_frame() const
{
  return src.full() + ";" + dst.full() + ";" + edge_name;
}

std::string create_key(const std::string& src_device, uint64_t src_incarnation, const std::string& dst_device,
                       const std::string& edge_name, uint32_t frame_id, uint32_t iter_id)
{
  char inc[17];
  std::snprintf(inc, sizeof inc, "%016llx", static_cast<unsigned long long>(src_incarnation));
  return src_device + ";" + inc + ";" + dst_device + ";" + edge_name + ";" + std::to_string(frame_id) + ":" +
         std::to_string(iter_id);
}

} // namespace tp::rendezvous
