// TF contrib MPI rendezvous (grpc+mpi; docs/protocols.md, mpi) over a model of an MPI library on the RDMA fabric:
// tagged point-to-point messages (tag 1010 request, 2020 response, 3030 raw tensor bytes) with MPI matching
// (per source and tag, unexpected-message queue), the library's eager/rendezvous protocols and registration
// cache (rdma/messenger), and the transport's single MPI thread that performs every MPI call in turn (a serial
// worker with a per-call cost) and blocks in the data Recv. Default path: the full tensor proto (a copy, GPU
// tensors through the host) in the 2020 response; MPI_OPTIMAL_PATH: metadata in 2020, the POD payload
// >= 1 KiB sent from the tensor's own buffer on 3030. Tests: tests/sim/transport_suite_test.cpp.
#pragma once

#include "core/transports/rdma/messenger.hpp"
#include "core/transports/transport.hpp"

namespace tp::transports {

/// MPI_OPTIMAL_PATH sends POD payloads from this size on as raw bytes (tag 3030); smaller ones go as a TensorProto.
constexpr uint64_t MPI_OPTIMAL_MIN_BYTES = 1024;

/// The mpi transport's own options; the defaults are TF grpc+mpi's.
struct MpiOptions {
  bool optimal_path = false; ///< MPI_OPTIMAL_PATH=1 (zero-copy data message for POD >= 1 KiB)
  /// Post data receives as MPI_Irecv (the MPI thread serves other requests while data lands), as Baidu's ring
  /// allreduce does; false: TF grpc+mpi's blocking MPI_Recv on its single MPI thread.
  bool nonblocking_recv = false;
  /// Message counts in elements of the tensor's datatype (Baidu's and Horovod's rings pass MPI_FLOAT counts);
  /// false: TF grpc+mpi's byte counts with MPI_CHAR. Either count is a C int: larger tensors are refused.
  bool typed_counts = false;
};

std::unique_ptr<Transport> make_mpi_transport(const TaskContext& ctx);
/// The registry entry: name, description, factory, failure behaviour, option knobs (core/transports/registry.cpp).
TransportInfo mpi_transport_info();
/// MpiOptions' switches users set: `tensorpath train --mpi-optimal-path --mpi-nonblocking-recv`, and a scenario
/// training job's mpi_optimal_path, mpi_nonblocking_recv and mpi_typed_counts.
std::vector<OptionKnob> mpi_option_knobs();
/// The MPI library model's messaging options (eager limit, intra-node copies, pipelined host staging of GPU
/// payloads): the data path the fabric modes time ring messages on (sim/fabric_modes.hpp).
MessengerOptions mpi_messenger_options();

} // namespace tp::transports
