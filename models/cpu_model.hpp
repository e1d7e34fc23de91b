// CPU socket model: cores, cache sizes and single-thread memcpy bandwidth per working-set class
// (L2 / LLC / DRAM), root-complex DMA latencies, verbs posting overhead and protobuf-like (de)serialization
// rates. Cost functions in cpu_model.cpp. Profiles: models/hw/cpu/*.json.
#pragma once

#include <string>

namespace tp::models {

struct CpuProfile {
  std::string name;
  int cores = 1;
  double frequency = 0;             ///< Hz
  double l2_size = 0;               ///< per core, bytes
  double l3_size = 0;               ///< per socket, bytes
  double memcpy_l2_bandwidth = 0;   ///< single-thread memcpy, working set in L2, bytes/s
  double memcpy_llc_bandwidth = 0;  ///< working set in the last-level cache
  double memcpy_dram_bandwidth = 0; ///< working set beyond the LLC
  double memcpy_call_overhead = 0;  ///< fixed cost of one memcpy call, seconds
  double dma_read_latency = 0;      ///< PCIe device DMA read round trip to local memory, seconds
  double posted_write_latency = 0;  ///< device write to memory becoming visible, one way, seconds
  double mmio_write_latency = 0;    ///< CPU MMIO write (doorbell) reaching a device, seconds
  double read_completion_size = 64; ///< bytes per read completion TLP returned by the root complex
  double post_overhead = 0;         ///< CPU time to build a WQE and ring the doorbell, seconds
  double completion_overhead = 0;   ///< CPU time to poll one CQE and dispatch it, seconds
  double serialize_bandwidth = 0;   ///< protobuf-like encode, bytes/s
  double deserialize_bandwidth = 0; ///< protobuf-like decode, bytes/s
  double memory_bandwidth = 0;      ///< peak DRAM bandwidth of the socket (channels x rate); 0 = not given
  /// Handing a work item (copy, serialization, reduction) to a worker thread and being told it finished: two
  /// thread wake-ups, seconds. 0 in the hardware profiles (TF's executor runs most copies inline); measured for
  /// the emulator's host (emulator/host_calibration).
  double work_handoff_latency = 0;
  /// CPU time of one MPI library call (MPI_Iprobe / MPI_Isend / MPI_Test) made by the mpi transport's MPI thread,
  /// seconds. No measurement of TF's MPI thread was found; such a call on an InfiniBand MPI is of the order of a
  /// microsecond: an assumption, the default of every profile, which a profile may set ("mpi_call_overhead").
  double mpi_call_overhead = 1e-6;

  /// Single-thread memcpy bandwidth for a copy of `bytes` (working set = 2 x bytes: source + destination).
  double memcpy_bandwidth(double bytes) const;
  /// Time of a memcpy of `bytes` (call overhead included).
  double memcpy_time(double bytes) const;
  /// Time of an element-wise reduction dst += src over `bytes` (three streams instead of memcpy's two) on
  /// `threads` cores (0 = all of them, as TF's intra-op pool), capped by the socket's memory bandwidth.
  double reduce_time(double bytes, int threads = 1) const;
};

} // namespace tp::models
