// The default gRPC transport of TensorFlow (docs/protocols.md, grpc): RecvTensor request/response over the byte
// stream (TCP over Ethernet or IPoIB, from the host's tcp profile), HTTP/2 framing on the wire, the
// <= 1 KiB copy / > 1 KiB zero-copy encoding rule at the producer, the consumer's copy out of the slices,
// GPU tensors staged through pinned host memory. Tests: tests/sim/transport_suite_test.cpp.
#pragma once

#include "core/rpc/rpc.hpp"
#include "core/transports/transport.hpp"
#include "core/transports/wire_common.hpp"

#include <memory>

namespace tp::transports {

/// The gRPC transport's own options (GDR, built on it, reads them too). Not settable from the CLI or a scenario.
struct GrpcOptions {
  /// Payloads up to this are copied into the header slice, larger ones referenced (kLargeTensorBytes = 1024 in TF's
  /// grpc_tensor_coding.cc).
  uint64_t inline_bytes = 1024;
};

/// The gRPC transport; GDR extends it (metadata over RecvTensor, bytes by RDMA READ) through produce/consume.
class GrpcTransport : public Transport {
public:
  explicit GrpcTransport(const TaskContext& ctx, const char* name = "grpc");
  const char* name() const override { return name_; }
  void start(std::function<void(Status)> done) override;
  void shutdown() override;
  void recv_from_remote_async(int64_t step, const rendezvous::ParsedKey& key, const rendezvous::RecvArgs& args,
                              rendezvous::RecvCallback done) override;

protected:
  using Finish = std::function<void(Result<rendezvous::RecvOutcome>)>;
  /// Whether requests set dma_ok (a transport that can move the bytes out of band).
  virtual bool dma_ok() const { return false; }
  /// Producer: answer a RecvTensor once the local Send is there (default: gRPC encoding).
  virtual void produce(std::shared_ptr<TransferRecord> rec, rendezvous::RecvOutcome got, double t_arrived, bool dma_ok,
                       const std::string& consumer_task, rpc::Responder respond);
  /// Consumer: handle a response of `kind` (0 = tensor content) whose meta-data has been read from `r`.
  virtual void consume(uint8_t kind, const TensorMeta& meta, rpc::Reader& r, rpc::Payload resp,
                       std::shared_ptr<TransferRecord> rec, const rendezvous::RecvArgs& args,
                       const std::string& producer_process, Finish finish);
  /// gRPC encoding of a tensor (copies, GPU staging, serialization) and the reply.
  void encode(std::shared_ptr<TransferRecord> rec, rendezvous::RecvOutcome got, double t_arrived,
              rpc::Responder respond);
  /// gRPC decoding of tensor content into the destination.
  void receive_content(const TensorMeta& meta, rpc::Reader& r, rpc::Payload resp, std::shared_ptr<TransferRecord> rec,
                       const rendezvous::RecvArgs& args, Finish finish);
  rpc::Writer response_header(uint8_t kind, const TensorMeta& meta, double t_arrived);
  std::shared_ptr<TransferRecord> new_record(Side side, int64_t step, const std::string& key, const std::string& peer);
  void log_producer(const std::shared_ptr<TransferRecord>& rec, const std::string& error);

  TaskContext ctx_;
  rpc::RpcNode rpc_;

private:
  void serve(rpc::Payload req, rpc::Responder respond);
  const char* name_;
  uint64_t next_request_id_ = 1;
};

std::unique_ptr<Transport> make_grpc_transport(const TaskContext& ctx);
/// The registry entry: name, description, factory, failure behaviour, option knobs (core/transports/registry.cpp).
TransportInfo grpc_transport_info();

/// The start of every RecvTensor response: kind (0: tensor content follows; GDR's 1: a remote region follows),
/// meta-data, and the producer's time between the request's arrival and the response.
struct RecvTensorHeader {
  uint8_t kind = 0;
  TensorMeta meta;
  double producer_seconds = 0;
};
/// Read it from a peer's response (the producer time must be finite and >= 0): an Error when malformed.
Result<RecvTensorHeader> read_recv_tensor_header(rpc::Reader& r);

/// Bytes gRPC puts on the wire for a message of `n` bytes: 5-byte length prefix, 9-byte HTTP/2 frame header per
/// 16 KiB DATA frame, and the HEADERS/trailer frames of a unary call (`header_bytes`).
uint64_t grpc_wire_bytes(uint64_t n, uint64_t header_bytes);

/// The largest gRPC message TF allows: it sets the channels' and servers' maximum message size to INT32_MAX
/// (docs/protocols.md, grpc); gRPC's own length prefix is 32 bits.
constexpr uint64_t GRPC_MAX_MESSAGE = (1ull << 31) - 1;
/// gRPC's refusal of a longer message (RESOURCE_EXHAUSTED, "Sent message larger than max (N vs. M)"), naming the
/// tensor it carried.
Error grpc_message_too_large(uint64_t message_bytes, uint64_t tensor_bytes);

} // namespace tp::transports
