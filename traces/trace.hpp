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
#include <utility>
#include <vector>

namespace tp::traces {

struct TraceOp {
  std::string name;
  std::string device; ///< "/job:worker/replica:0/task:0/device:GPU:0", "rank 0", "cuda:0", ...
  double start = 0;   ///< seconds from the trace's origin
  double duration = 0;
  double issued = -1; ///< when the CPU issued it (a kernel's launch), where the trace links them; -1: not known
  int step = -1;      ///< index in Trace::steps (assign_steps)
  int rank = -1;      ///< the rank whose file it came from, in traces of several ranks merged; -1: one file
};

struct TraceTransfer {
  std::string tensor;
  std::string src_device, dst_device;
  uint64_t bytes = 0;
  double start = 0, duration = 0;
  int step = -1;
  int rank = -1;
  bool bytes_known = true; ///< false: the trace does not say (bytes is 0; a warning says why)
};

struct TraceCollective {
  std::string name; ///< tensor or call name
  std::string kind; ///< allreduce, allgather, broadcast, reduce_scatter, alltoall, ...
  /// The communication library that ran it where the trace says so other than by the name: "nccl" or "mpi" from a
  /// Horovod operation's NCCL_* / MPI_* phase; empty: not said (a Kineto or Chakra name says it itself).
  std::string library;
  uint64_t bytes = 0;
  bool bytes_known = true;      ///< false: the trace does not say (bytes is 0; a warning says why)
  int ranks = 0;                ///< 0: not recorded
  std::string group;            ///< the process group's name, where the trace names it
  std::vector<int> group_ranks; ///< the group's global ranks, where the trace lists them
  /// A send's or recv's peer, a global rank (Kineto's "Dst Rank" / "Src Rank", which newer PyTorch releases' comms
  /// metadata gives a send and a recv); -1: not recorded.
  int peer = -1;
  double start = 0, duration = 0;
  double issued = -1; ///< when the CPU called it, where the trace says; -1: not known
  int step = -1;
  int rank = -1;
};

/// One iteration of the recorded job: a window marked in the trace (Kineto's ProfilerStep#N, the time from one
/// Horovod CYCLE_START to the next, a TF step id's events), or what lies before the first or after the last mark.
struct TraceStep {
  std::string name;          ///< "ProfilerStep#551", "cycle 3", "step 12", "before ProfilerStep#551"
  double start = 0, end = 0; ///< the window, seconds (the marker's own span where a marker gives one)
  bool partial = false;      ///< cut by the trace's start or end: left out of step summaries
  std::string why;           ///< when partial: why
};

struct Trace {
  std::string format; ///< tf_timeline, horovod_timeline, kineto, chakra (JSON or protobuf)
  std::string file;
  std::vector<TraceOp> ops;
  std::vector<TraceTransfer> transfers;
  std::vector<TraceCollective> collectives;
  int world_size = 0;          ///< 0: not recorded (Kineto: distributedInfo.world_size)
  std::string world_size_from; ///< where world_size came from ("distributedInfo.world_size", ...)
  int rank = -1;               ///< the recording rank; -1: not recorded (Kineto: distributedInfo.rank)
  /// The iterations, in time order, once assign_steps has run (parse_trace runs it): every event's `step` indexes
  /// this list. The readers fill the marked windows; assign_steps adds the partial ones before and after them.
  std::vector<TraceStep> steps;
  std::string steps_from; ///< how the steps were found ("ProfilerStep# annotations", ...; "no step marks: ...")
  /// What the reader accepted but could not read in full, each naming the event and the field (an unknown dtype, a
  /// collective of unknown size, a kernel not linked to its launch); a few of each kind, then a count.
  std::vector<std::string> warnings;
  double span() const; ///< first start to last end over every event, seconds
  /// The first start and the last end over every event, seconds ({inf, -inf} with none).
  std::pair<double, double> extent() const;
  std::vector<std::string> devices() const;
};

/// Give every event the step whose window holds it (by when it was issued, else its start; an event between two
/// windows goes to the earlier one), adding a partial step for what lies before the first window and after the last;
/// with no windows, the whole trace is one step. Run by parse_trace.
void assign_steps(Trace& trace);

/// The job's shape as the trace gives it: how many ranks, and how many share a node (0: not known).
struct JobShape {
  int ranks = 0;
  std::string ranks_from; ///< where the count came from; empty when not known
  int ranks_per_node = 0;
  std::string per_node_from;
};
JobShape infer_job(const Trace& trace);

/// Traces of several ranks of one job, one file each, as one trace: each file's rank from its own metadata, checked
/// to be distinct and to agree on the format and the world size (an Error naming the file when not). Devices become
/// "rank R: device"; events keep their rank; steps of the same name are one step.
Result<Trace> merge_rank_traces(std::vector<Trace> traces);

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
