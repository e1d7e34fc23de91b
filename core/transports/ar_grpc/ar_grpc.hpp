// AR-gRPC (Biswas, Lu, Panda, HiPC'18; docs/protocols.md, ar_grpc): gRPC with its socket endpoint replaced by an RDMA
// endpoint, so RecvTensor runs entirely over RDMA (no TCP side channel). Small iovecs are coalesced into one
// eager message (SEND into pre-pinned buffers, up to T_eager); a large payload goes by rendezvous (RTS, chunked
// RDMA READ of C_chunk pieces with several in flight, FIN per chunk), zero-copy when the tensor comes from the
// registered pool. TensorFlow above it is unchanged: GPU tensors are still copied to the host by TF's gRPC
// code, and a GPU destination is filled from the host.
// Auto-tuning (T_eager = C_chunk = 0 in ArGrpcOptions), per peer at the first call: T_eager is the largest
// power of two whose two eager copies cost no more than one extra round trip (RTT x copy bandwidth / 2, within
// 2-64 KiB); C_chunk the smallest power of two that keeps the READ pipeline busy (2 x RTT x link rate, within
// 64 KiB-4 MiB). RTT is measured with an empty message, the copy bandwidth with a 64 KiB memcpy, the link rate
// read from the device. Tests: tests/sim/transport_suite_test.cpp, tests/core/ar_grpc_tuning_test.cpp.
#pragma once

#include "core/transports/transport.hpp"

namespace tp::transports {

/// The AR-gRPC transport's own options (0: auto-tuned per peer, as above; the two sizes are not settable from the CLI
/// or a scenario).
struct ArGrpcOptions {
  uint64_t eager_threshold = 0; ///< largest eagerly sent message, <= 64 KiB (T_eager)
  uint64_t chunk_bytes = 0;     ///< rendezvous chunk size (C_chunk)
  /// Chunk trains, a simulation shortcut (docs/model.md "Chunk trains"): half an in-flight window of chunks (4) per
  /// RDMA READ and FIN, two such READs in flight, so the same bytes stay outstanding per payload. On by default, and
  /// only on a device that charges such a READ as the chunks it stands for (verbs::Device::charges_stand_ins: the
  /// simulator); elsewhere, and with false (`--ar-chunk-by-chunk`, scenario field `"ar_chunk_trains": false`), a READ
  /// and a FIN per chunk, as published.
  bool chunk_trains = true;
};
/// Chunks per READ under chunk trains: half of the 8 READs AR-gRPC keeps in flight.
constexpr uint32_t AR_GRPC_TRAIN_CHUNKS = 4;
/// Chunks one READ reads (MessengerOptions::read_train): AR_GRPC_TRAIN_CHUNKS where trains are asked for and `device`
/// charges a train as its chunks (verbs::Device::charges_stand_ins), else 1.
uint32_t ar_grpc_read_train(const ArGrpcOptions& options, const verbs::Device* device);

std::unique_ptr<Transport> make_ar_grpc_transport(const TaskContext& ctx);
/// The registry entry: name, description, factory, failure behaviour, option knobs (core/transports/registry.cpp).
TransportInfo ar_grpc_transport_info();

struct ArGrpcTuning {
  uint64_t eager_threshold = 0;
  uint64_t chunk_bytes = 0;
};
/// The tuning rule above, from a measured round trip (s), copy bandwidth and link rate (bytes/s).
ArGrpcTuning tune_ar_grpc(double rtt, double copy_bandwidth, double link_bandwidth);

} // namespace tp::transports
