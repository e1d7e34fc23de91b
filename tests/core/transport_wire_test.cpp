// The transports' wire decoders (verbs v1/v2 headers, the Messenger prefix, AR-gRPC and MPI messages, GDR
// descriptors, the RecvTensor header): round trips, and malformed or inconsistent input from a peer is an Error.
// Regression cases for what fuzzing (tests/fuzz/, docs/fuzzing.md) and the review that came with it found.
#include "core/transports/ar_grpc/ar_grpc_wire.hpp"
#include "core/transports/gdr/gdr_wire.hpp"
#include "core/transports/grpc/grpc.hpp"
#include "core/transports/mpi/mpi_wire.hpp"
#include "core/transports/rdma/messenger_wire.hpp"
#include "core/transports/rdma/rdma_channels.hpp"
#include "core/transports/verbs_v1/verbs_v1_wire.hpp"
#include "core/transports/verbs_v2/verbs_v2_wire.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace tp;
using namespace tp::transports;

namespace {

TensorMeta floats(std::vector<int64_t> dims)
{
  TensorMeta m;
  m.dtype = DataType::FLOAT;
  m.shape.dims = std::move(dims);
  return m;
}

} // namespace

TEST_CASE("verbs v1 headers round-trip, truncations and bad fields are errors", "[quick][wire]")
{
  using namespace verbs_v1_wire;
  Msg m;
  m.type = MsgType::BUFFER_REQUEST;
  m.name = "a;b;c";
  m.step = 7;
  m.buffer_size = HEADER + 4096;
  m.meta = floats({32, 32});
  const auto bytes = encode(m);
  auto d = decode(bytes.data(), bytes.size());
  REQUIRE(d.ok());
  CHECK(d->name == "a;b;c");
  CHECK(d->buffer_size == HEADER + 4096);
  CHECK(d->meta.same(m.meta));
  for (size_t n = 0; n < bytes.size(); ++n)
    CHECK_FALSE(decode(bytes.data(), n).ok());
  // A buffer request below the header or beyond 1 TiB.
  for (uint64_t size : {uint64_t(0), HEADER - 1, MAX_BUFFER + 1}) {
    m.buffer_size = size;
    const auto b = encode(m);
    CHECK_FALSE(decode(b.data(), b.size()).ok());
  }
}

TEST_CASE("verbs v1: a tensor header announcing more bytes than its buffer holds is an error", "[quick][wire]")
{
  using namespace verbs_v1_wire;
  Msg m;
  m.type = MsgType::TENSOR_WRITE;
  m.meta = floats({1024}); // 4096 bytes
  CHECK(payload_bytes(m, HEADER + 4096).value() == 4096);
  CHECK_FALSE(payload_bytes(m, HEADER + 4095).ok()); // the consumer used to copy past its buffer
  CHECK_FALSE(payload_bytes(m, 100).ok());
  m.meta.is_dead = true;
  CHECK(payload_bytes(m, HEADER).value() == 0);
}

TEST_CASE("verbs v2 messages round-trip, reserved indices and truncations are errors", "[quick][wire]")
{
  using namespace verbs_v2_wire;
  Msg m;
  m.type = MsgType::META_DATA_UPDATE;
  m.name = "k";
  m.index = 12;
  m.meta = floats({3, 4});
  auto bytes = encode(m);
  auto d = decode(bytes.data(), bytes.size());
  REQUIRE(d.ok());
  CHECK(d->index == 12);
  for (size_t n = 0; n < bytes.size(); ++n)
    CHECK_FALSE(decode(bytes.data(), n).ok());
  for (uint32_t idx : {IMM_ACK, IMM_MESSAGE}) {
    m.index = idx;
    bytes = encode(m);
    CHECK_FALSE(decode(bytes.data(), bytes.size()).ok());
  }
}

TEST_CASE("Messenger prefixes: eager payloads must fit and have arrived, an RTS needs a chunk size", "[quick][wire]")
{
  using namespace messenger_wire;
  Arrival a{0, 1024, 16 << 10};
  const uint64_t region = prefix_region(a.max_header);
  Prefix p;
  p.type = EAGER;
  p.msg_id = 3;
  p.header = {1, 2, 3};
  p.payload_len = 100;
  auto bytes = encode(p);
  a.received = region + 100;
  auto d = decode(bytes.data(), bytes.size(), a);
  REQUIRE(d.ok());
  CHECK(d->header == std::vector<uint8_t>{1, 2, 3});
  a.received = region + 99; // fewer bytes arrived than the prefix claims
  CHECK_FALSE(decode(bytes.data(), bytes.size(), a).ok());
  p.payload_len = (16 << 10) + 1; // more than a bounce buffer holds
  bytes = encode(p);
  a.received = region + p.payload_len;
  CHECK_FALSE(decode(bytes.data(), bytes.size(), a).ok());
  // RTS: a zero chunk size used to divide by zero in the receiver; too many chunks truncated the count.
  p.type = RTS;
  p.payload_len = 1 << 20;
  p.chunk = 0;
  bytes = encode(p);
  CHECK_FALSE(decode(bytes.data(), bytes.size(), a).ok());
  p.chunk = 1;
  p.payload_len = MAX_PAYLOAD;
  bytes = encode(p);
  CHECK_FALSE(decode(bytes.data(), bytes.size(), a).ok());
  p.chunk = 1 << 20;
  p.payload_len = (1 << 20) + 1;
  bytes = encode(p);
  d = decode(bytes.data(), bytes.size(), a);
  REQUIRE(d.ok());
  CHECK(chunk_count(*d) == 2);
  p.payload_len = 0; // a rendezvous of nothing
  bytes = encode(p);
  CHECK_FALSE(decode(bytes.data(), bytes.size(), a).ok());
  // Unknown flags, and a header over the limit.
  p = Prefix{};
  p.type = FIN;
  p.flags = 2;
  bytes = encode(p);
  CHECK_FALSE(decode(bytes.data(), bytes.size(), a).ok());
  p.flags = 0;
  p.header.assign(1025, 0);
  bytes = encode(p);
  CHECK_FALSE(decode(bytes.data(), bytes.size(), a).ok());
  // A chunk train's FIN (MessengerOptions::read_train) carries how many chunks it acknowledges in `chunk`; the chunks
  // it names must have 32-bit indices.
  p.header.clear();
  p.fin_chunk = 8;
  p.chunk = 4;
  bytes = encode(p);
  d = decode(bytes.data(), bytes.size(), a);
  REQUIRE(d.ok());
  CHECK(d->fin_chunk == 8);
  CHECK(d->chunk == 4);
  p.chunk = uint64_t(1) << 32;
  bytes = encode(p);
  CHECK_FALSE(decode(bytes.data(), bytes.size(), a).ok());
  p.fin_chunk = UINT32_MAX - 2;
  p.chunk = 4;
  bytes = encode(p);
  CHECK_FALSE(decode(bytes.data(), bytes.size(), a).ok());
  p.chunk = 2;
  bytes = encode(p);
  CHECK(decode(bytes.data(), bytes.size(), a).ok());
}

TEST_CASE("AR-gRPC frames: the payload must be what the response's meta-data announces", "[quick][wire]")
{
  using namespace ar_grpc_wire;
  Frame req;
  req.type = REQUEST;
  req.id = 5;
  req.step = 2;
  req.key = "key";
  auto r = decode(encode(req), 0);
  REQUIRE(r.ok());
  CHECK(r->key == "key");
  CHECK_FALSE(decode(encode(req), 1).ok()); // a request carries no payload
  Frame resp;
  resp.type = RESPONSE;
  resp.id = 5;
  resp.meta = floats({256}); // 1024 bytes
  CHECK(decode(encode(resp), 1024).ok());
  // The consumer used to land any payload length into a destination of the meta-data's size.
  CHECK_FALSE(decode(encode(resp), 1025).ok());
  CHECK_FALSE(decode(encode(resp), 0).ok());
  auto trailing = encode(resp);
  trailing.push_back(0);
  CHECK_FALSE(decode(trailing, 1024).ok());
  auto bad_status = encode(resp);
  bad_status[9] = 7;
  CHECK_FALSE(decode(bad_status, 1024).ok());
  Frame err;
  err.type = RESPONSE;
  err.is_error = true;
  err.error_code = "Aborted";
  err.error_text = "restarted";
  auto e = decode(encode(err), 0);
  REQUIRE(e.ok());
  CHECK(e->error_code == "Aborted");
}

TEST_CASE("GDR descriptors and RecvTensor headers from a peer are checked", "[quick][wire]")
{
  auto response = [](const TensorMeta& meta, double producer_seconds) {
    rpc::Writer w;
    w.u8(gdr_wire::KIND_GDR);
    write_meta(w, meta);
    w.f64(producer_seconds);
    gdr_wire::write_remote_region(w, {0x1000, 7, 9, 0});
    return w.take();
  };
  auto read = [](const std::vector<uint8_t>& bytes) -> Result<gdr_wire::RemoteRegion> {
    rpc::Reader r(bytes);
    auto h = read_recv_tensor_header(r);
    if (!h.ok()) return h.error();
    return gdr_wire::read_remote_region(r, h->meta);
  };
  auto ok = read(response(floats({1024}), 1e-6));
  REQUIRE(ok.ok());
  CHECK(ok->bytes == 4096);
  CHECK(ok->key == 9);
  // A READ length that does not fit ibv_sge's 32 bits (4 GiB: rdma_post_read would wrap it to 0), nothing, a dead
  // tensor. Between 2 and 4 GiB the READ is posted: the NIC fails it with LOC_LEN_ERR, as it fails the original's.
  const auto wraps = read(response(floats({1 << 20, 1 << 10}), 0));
  REQUIRE_FALSE(wraps.ok());
  CHECK(wraps.error().code == "OutOfRange");
  CHECK(wraps.error().message().find("4294967296") != std::string::npos);
  CHECK(read(response(floats({(1 << 30) - 1}), 0)).ok()); // 4 GiB - 4 B: a 32-bit length
  CHECK(read(response(floats({3 << 28}), 0))->bytes == 3ull << 30);
  CHECK_FALSE(read(response(floats({0}), 0)).ok());
  TensorMeta dead = floats({4});
  dead.is_dead = true;
  CHECK_FALSE(read(response(dead, 0)).ok());
  // A producer time that is not a finite, non-negative number.
  CHECK_FALSE(read(response(floats({4}), std::nan(""))).ok());
  CHECK_FALSE(read(response(floats({4}), -1)).ok());
  CHECK_FALSE(read(response(floats({4}), std::numeric_limits<double>::infinity())).ok());
  auto trailing = response(floats({4}), 0);
  trailing.push_back(1);
  CHECK_FALSE(read(trailing).ok());
}

TEST_CASE("MPI messages: envelopes, requests and responses with the payload they announce", "[quick][wire]")
{
  using namespace mpi_wire;
  const Request q{3, "key", 11};
  const auto env = encode(Envelope{TAG_REQUEST, encode(q)});
  auto e = decode_envelope(env, 0);
  REQUIRE(e.ok());
  CHECK(decode_request(e->body)->request_id == 11);
  CHECK_FALSE(decode_envelope(env, 8).ok()); // a request with a payload
  CHECK_FALSE(decode_envelope(encode(Envelope{4040, {}}), 0).ok());
  CHECK_FALSE(decode_envelope(encode(Envelope{TAG_DATA, {1}}), 16).ok()); // data messages have no body
  auto trailing = encode(q);
  trailing.push_back(0);
  CHECK_FALSE(decode_request(trailing).ok());

  Response r{3, "key", Carried::IN_PAYLOAD, {}, {}, floats({256})}; // 1024 bytes
  CHECK(decode_response(encode(r), 1024).ok());
  CHECK_FALSE(decode_response(encode(r), 1023).ok()); // the payload must be what the meta-data says
  r.carried = Carried::DATA_FOLLOWS;
  CHECK(decode_response(encode(r), 0).ok());
  CHECK_FALSE(decode_response(encode(r), 1024).ok());
  auto bad_carried = encode(r);
  bad_carried[8 + 4 + 3] = 3; // step, key length, "key", then how the tensor is carried
  CHECK_FALSE(decode_response(bad_carried, 0).ok());
  // A long error text could make the response larger than the Messenger sends (1 KiB headers: the consumer waited
  // for ever); encode keeps 512 bytes.
  Response err{3, "key", Carried::ERROR, "Aborted", std::string(5000, 'x'), {}};
  auto d = decode_response(encode(err), 0);
  REQUIRE(d.ok());
  CHECK(d->error_text.size() == 512);
}

TEST_CASE("RDMA channel set-up messages: endpoint, buffer list and nothing after them", "[quick][wire]")
{
  auto hello = [](uint32_t qp_num, uint32_t count, size_t buffers) {
    rpc::Writer w;
    w.str("/job:worker/replica:0/task:0");
    verbs::QpEndpoint ep;
    ep.qp_num = qp_num;
    ep.psn = 0x1000;
    w.bytes(ep.encode());
    w.u32(count);
    for (size_t i = 0; i < buffers; ++i) {
      w.u64(0x1000 * (i + 1));
      w.u32(uint32_t(i));
      w.u64(720);
    }
    return w.take();
  };
  auto ok = decode_channel_hello(hello(0x123, 2, 2));
  REQUIRE(ok.ok());
  CHECK(ok->buffers.size() == 2);
  CHECK(ok->ep.qp_num == 0x123);
  CHECK_FALSE(decode_channel_hello(hello(0x123, 2, 1)).ok());     // a truncated buffer list
  CHECK_FALSE(decode_channel_hello(hello(0x123, 1, 2)).ok());     // trailing bytes
  CHECK_FALSE(decode_channel_hello(hello(0x1000000, 0, 0)).ok()); // a QP number beyond 24 bits
  CHECK_FALSE(decode_channel_hello(hello(0x123, 5000, 0)).ok());  // more than 1024 buffers
  auto bytes = hello(0x123, 0, 0);
  for (size_t n = 0; n < bytes.size(); ++n)
    CHECK_FALSE(decode_channel_hello(std::vector<uint8_t>(bytes.begin(), bytes.begin() + long(n))).ok());
}
