// TF verbs "with 0 copies" (tensorflow/networking verbs; docs/protocols.md, verbs_v2): the consumer pre-allocates the
// result and sends its address in TENSOR_REQUEST; the producer RDMA-WRITEs (with immediate = request index)
// straight from the source tensor into it. A consumer-side meta-data cache per tensor name supplies dtype and
// shape; a stale or missing entry costs a META_DATA_UPDATE from the producer (after a clone of the tensor)
// and a TENSOR_RE_REQUEST. GPU memory that is not GPUDirect-capable goes through a pinned host proxy. Control
// messages ride one message buffer per direction with stop-and-wait flow control (zero-length ACK writes).
// Errors from the producer arrive as ERROR_STATUS; a failed channel fails its pending receives.
// Tests: tests/sim/transport_suite_test.cpp.
#pragma once

#include "core/transports/transport.hpp"

namespace tp::transports {

/// The verbs_v2 transport's own options. Not settable from the CLI or a scenario.
struct VerbsV2Options {
  uint32_t queue_depth = 1024; ///< QP depth (RDMA_QP_QUEUE_DEPTH in TF verbs' rdma.h)
};

std::unique_ptr<Transport> make_verbs_v2_transport(const TaskContext& ctx);
/// The registry entry: name, description, factory, failure behaviour, option knobs (core/transports/registry.cpp).
TransportInfo verbs_v2_transport_info();

} // namespace tp::transports
