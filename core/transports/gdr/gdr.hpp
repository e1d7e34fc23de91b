// The GDR transport of TF contrib (grpc+gdr, HKUST; docs/protocols.md, gdr): gRPC carries the metadata, RDMA carries
// the bytes. For a live POD tensor above 1 KiB the producer answers RecvTensor with dtype, shape and a remote
// buffer descriptor {addr, rkey, key} of NIC-registered memory holding the tensor (GPUDirect for GPUs next to
// the NIC, else a registered host staging copy), and keeps it alive; the consumer pulls it with one RDMA READ
// into its (registered) destination, then releases it with a zero-length WRITE_WITH_IMM carrying the key.
// Smaller and dead tensors fall back to the gRPC encoding. Tests: tests/sim/transport_suite_test.cpp.
#pragma once

#include "core/transports/transport.hpp"

namespace tp::transports {

std::unique_ptr<Transport> make_gdr_transport(const TaskContext& ctx);

} // namespace tp::transports
