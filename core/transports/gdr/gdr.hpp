// The GDR transport of TF contrib (grpc+gdr, HKUST; docs/protocols.md, gdr): gRPC carries the metadata, RDMA carries
// the bytes. For a live POD tensor above 1 KiB the producer answers RecvTensor with dtype, shape and a remote
// buffer descriptor {addr, rkey, key} of NIC-registered memory holding the tensor (GPUDirect for GPUs next to
// the NIC, else a registered host staging copy), and keeps it alive; the consumer pulls it with one RDMA READ
// into its (registered) destination, then releases it with a zero-length WRITE_WITH_IMM carrying the key.
// Smaller and dead tensors fall back to the gRPC encoding. Tests: tests/sim/transport_suite_test.cpp.
#pragma once

#include "core/transports/transport.hpp"

namespace tp::transports {

/// The GDR transport's own options. Not settable from the CLI or a scenario.
struct GdrOptions {
  /// Live POD tensors above this go by RDMA READ, the rest inline in the RPC (TF contrib gdr's rule, as
  /// docs/protocols.md, gdr draws it).
  uint64_t min_bytes = 1024;
  uint32_t queue_depth = 1024; ///< QP depth, and zero-length receives posted per connection (RDMA_QP_QUEUE_DEPTH)
};

std::unique_ptr<Transport> make_gdr_transport(const TaskContext& ctx);
/// The registry entry: name, description, factory, failure behaviour, option knobs (core/transports/registry.cpp).
TransportInfo gdr_transport_info();

} // namespace tp::transports
