// Recorded training traces in one shape, whatever recorded them: compute ops (device, start, duration), point-to-
// point tensor transfers (TF's RecvTensor: bytes, source and destination devices) and collectives (Horovod
// allreduces, NCCL calls, Chakra communication nodes, JSON or protobuf: bytes and ranks). Parsers (one file per format)
// reject malformed input with the file, the position (byte offset, or line for concatenated objects) and the reason;
// what they accept but cannot read in full (an unknown dtype, a size the trace does not give) is a named warning.
// Re-simulating a trace's communication on another fabric builds on this. Tests: tests/traces/trace_parsers_test.cpp.
#pragma once

#include "core/common/result.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tp::traces {

struct TraceOp {
  std::string name;
  std::string device; ///< "/job:worker/replica:0/task:0/device:GPU:0", "rank 0", "cuda:0", ...
  double start = 0;   ///< seconds from the trace's origin
  double duration = 0;
};

struct TraceTransfer {
  std::string tensor;
  std::string src_device, dst_device;
  uint64_t bytes = 0;
  double start = 0, duration = 0;
  bool bytes_known = true; ///< false: the trace does not say (bytes is 0; a warning says why)
};

struct TraceCollective {
  std::string name; ///< tensor or call name
  std::string kind; ///< allreduce, allgather, broadcast, reduce_scatter, alltoall, ...
  uint64_t bytes = 0;
  bool bytes_known = true;      ///< false: the trace does not say (bytes is 0; a warning says why)
  int ranks = 0;                ///< 0: not recorded
  std::string group;            ///< the process group's name, where the trace names it
  std::vector<int> group_ranks; ///< the group's global ranks, where the trace lists them
  double start = 0, duration = 0;
};

struct Trace {
  std::string format; ///< tf_timeline, horovod_timeline, kineto, chakra (JSON or protobuf)
  std::string file;
  std::vector<TraceOp> ops;
  std::vector<TraceTransfer> transfers;
  std::vector<TraceCollective> collectives;
  int world_size = 0; ///< 0: not recorded (Kineto: distributedInfo.world_size)
  int rank = -1;      ///< the recording rank; -1: not recorded (Kineto: distributedInfo.rank)
  /// What the reader accepted but could not read in full, each naming the event and the field (an unknown dtype, a
  /// collective of unknown size, a kernel not linked to its launch); a few of each kind, then a count.
  std::vector<std::string> warnings;
  double span() const; ///< first start to last end over every event, seconds
  std::vector<std::string> devices() const;
};

/// Guess the format from the text and parse it (the text as read: read_trace inflates gzip'd files first).
Result<Trace> parse_trace(const std::string& text, const std::string& file);
/// Read a trace file, gzip'd or not (recognised by its first bytes), under the trace input cap, and parse it.
Result<Trace> read_trace(const std::string& path);

Result<Trace> parse_tf_timeline(const std::string& text, const std::string& file);
Result<Trace> parse_horovod_timeline(const std::string& text, const std::string& file);
Result<Trace> parse_kineto(const std::string& text, const std::string& file);
Result<Trace> parse_chakra(const std::string& text, const std::string& file);
/// Chakra's protobuf execution trace (`.et`): length-delimited GlobalMetadata, then Node messages.
Result<Trace> parse_chakra_et(const std::string& bytes, const std::string& file);
/// True when `bytes` start as a Chakra `.et` does: a length-delimited GlobalMetadata with only the schema's fields,
/// then a Node (or the end). What parse_trace uses to tell it from JSON (by content, not the file's name).
bool looks_like_chakra_et(const std::string& bytes);

/// Bytes per element of a dtype as traces write it ("float32", "Float", "torch.float16", "c10::Half", "int64",
/// "long int", "unsigned char", "HOROVOD_FLOAT32", ...); 0 when unknown.
size_t dtype_bytes(std::string dtype);

/// "4B", "1.5KB", "1.5KiB", "2.3MB", "1.2GB" -> bytes; false when it is not a size.
bool parse_human_bytes(const std::string& s, uint64_t& bytes);

} // namespace tp::traces
