// Memory estimates and the up-front check (see resource_estimate.hpp).
#include "core/common/resource_estimate.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace tp {

namespace {

// Measured on this project's simulator (docs/faults.md, "Resource bounds"): peak RSS of `tensorpath train` (GNU
// time's %M, the simulating child included) against the step graph's size, ResNet-50 parameter-server jobs with 2
// to 16 workers (36-106 MB, 1.5-2.1 KB per op) and ring-allreduce jobs with 16 to 128 ranks (69-475 MB, 1.7-2.6 KB
// per op); the upper end is taken, so the estimate errs on the high side by up to ~25 %.
constexpr double BASE_BYTES = 30e6;         // SimGrid, the platform, the catalog, the binary
constexpr double BYTES_PER_OP = 2.6e3;      // a step-graph op: vertex, edges, names, executor and timing state
constexpr double BYTES_PER_PROCESS = 0.5e6; // runtime, memory space, transport, rendezvous, NIC model, streams
constexpr double MATERIALIZED_COPIES = 3;   // source, destination and one staging or bounce copy per tensor
// An emulated transfer: the peak RSS of `tensorpath emulate --size 256M` (5 steps, the default) is 11-12 tensor
// sizes with grpc (7 live at the heap's peak: the job's reference pattern, source, response message, its frame,
// the consumer's decoded body, gRPC's slices, destination; the rest is freed memory the allocator keeps), 5 with
// verbs_v1 and mpi, 4 with verbs_v2, 3 with gdr and ar_grpc (docs/faults.md, "Resource bounds"). The largest.
constexpr double EMULATED_TRANSFER_COPIES = 12;

std::string human(double bytes)
{
  char b[32];
  if (bytes >= 1e12)
    std::snprintf(b, sizeof b, "%.1f TB", bytes / 1e12);
  else if (bytes >= 1e9)
    std::snprintf(b, sizeof b, "%.1f GB", bytes / 1e9);
  else if (bytes >= 1e7)
    std::snprintf(b, sizeof b, "%.0f MB", bytes / 1e6);
  else if (bytes >= 1e5)
    std::snprintf(b, sizeof b, "%.1f MB", bytes / 1e6);
  else
    std::snprintf(b, sizeof b, "%.0f B", bytes);
  return b;
}

std::string count(uint64_t n)
{
  std::string s = std::to_string(n);
  for (int i = int(s.size()) - 3; i > 0; i -= 3)
    s.insert(size_t(i), ",");
  return s;
}

/// "123", "512M", "8G", "1.5G" -> bytes; 0 if unreadable.
uint64_t parse_bytes(const std::string& s)
{
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !(v > 0) || std::isinf(v)) return 0;
  double mult = 1;
  switch (std::toupper(static_cast<unsigned char>(*end))) {
  case 'K':
    mult = 1024.0;
    break;
  case 'M':
    mult = 1024.0 * 1024;
    break;
  case 'G':
    mult = 1024.0 * 1024 * 1024;
    break;
  case 'T':
    mult = 1024.0 * 1024 * 1024 * 1024;
    break;
  case '\0':
    break;
  default:
    return 0;
  }
  return uint64_t(std::min(v * mult, 1.8e19));
}

uint64_t read_number_file(const std::string& path)
{
  std::ifstream in(path);
  std::string s;
  if (!(in >> s) || s == "max") return 0;
  return parse_bytes(s);
}

} // namespace

MemoryEstimate estimate_training(uint64_t graph_ops, uint64_t processes)
{
  MemoryEstimate e;
  e.bytes = BASE_BYTES + BYTES_PER_OP * double(graph_ops) + BYTES_PER_PROCESS * double(processes);
  e.parts = count(graph_ops) + " step-graph ops x " + std::to_string(int(BYTES_PER_OP)) + " B + " + count(processes) +
            " simulated processes x " + human(BYTES_PER_PROCESS) + " + " + human(BASE_BYTES) + " for the simulator";
  return e;
}

MemoryEstimate estimate_transfer(uint64_t materialized_bytes, uint64_t tensors)
{
  MemoryEstimate e;
  e.bytes = BASE_BYTES + 2 * BYTES_PER_PROCESS + MATERIALIZED_COPIES * double(materialized_bytes);
  e.parts = count(tensors) + " materialized tensor(s) of " + human(double(materialized_bytes)) + " in all x " +
            std::to_string(int(MATERIALIZED_COPIES)) + " copies + " + human(BASE_BYTES + 2 * BYTES_PER_PROCESS) +
            " for the simulator";
  return e;
}

MemoryEstimate estimate_emulated_transfer(uint64_t bytes)
{
  MemoryEstimate e;
  e.bytes = BASE_BYTES + 2 * BYTES_PER_PROCESS + EMULATED_TRANSFER_COPIES * double(bytes);
  e.parts = human(double(bytes)) + " x " + std::to_string(int(EMULATED_TRANSFER_COPIES)) +
            " copies (the reference pattern, source, destination, the transport's buffers and what the allocator "
            "keeps) + " +
            human(BASE_BYTES + 2 * BYTES_PER_PROCESS) + " for the emulator";
  return e;
}

MemoryEstimate estimate_emulated_training(uint64_t model_bytes, uint64_t towers, uint64_t tasks)
{
  // Per tower: the pulled variables, the gradients, and a transport copy of each (staging, bounce or per-key
  // buffers); the PS copies and their updates; the same per-op bookkeeping as the simulator.
  MemoryEstimate e;
  const double copies = 4.0 * double(towers) + 2.0;
  e.bytes = BASE_BYTES + BYTES_PER_PROCESS * double(tasks) + copies * double(model_bytes);
  e.parts = human(double(model_bytes)) + " of variables x " + std::to_string(int(copies)) +
            " copies (pulled variables, gradients and transport buffers of " + count(towers) +
            " towers, the PS copy) + " + human(BASE_BYTES + BYTES_PER_PROCESS * double(tasks)) + " for the emulator";
  return e;
}

uint64_t available_memory()
{
  if (const char* env = std::getenv("TENSORPATH_MEMORY_LIMIT"); env && *env) return parse_bytes(env);
  uint64_t avail = 0;
  {
    std::ifstream in("/proc/meminfo");
    std::string key, unit;
    uint64_t kb = 0;
    while (in >> key >> kb) {
      std::getline(in, unit);
      if (key == "MemAvailable:") {
        avail = kb * 1024;
        break;
      }
    }
  }
  // A cgroup limit (containers, systemd slices): what is left under memory.max.
  if (const uint64_t max = read_number_file("/sys/fs/cgroup/memory.max"); max > 0) {
    const uint64_t used = read_number_file("/sys/fs/cgroup/memory.current");
    const uint64_t left = max > used ? max - used : 0;
    avail = avail ? std::min(avail, left) : left;
  }
  struct rlimit rl {};
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    avail = avail ? std::min<uint64_t>(avail, rl.rlim_cur) : rl.rlim_cur;
  return avail;
}

Status check_memory(const MemoryEstimate& need, const std::string& what, const std::string& advice)
{
  const uint64_t avail = available_memory();
  if (avail == 0 || need.bytes <= 0.9 * double(avail)) return ok_status();
  return Error::at("", what,
                   "a job that fits in the memory available (" + human(double(avail)) +
                       (std::getenv("TENSORPATH_MEMORY_LIMIT") ? ", TENSORPATH_MEMORY_LIMIT" : "") + ")",
                   "an estimated " + human(need.bytes) + " (" + need.parts + "); " + advice);
}

} // namespace tp
