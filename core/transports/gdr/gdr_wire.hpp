// GDR's remote memory region descriptor: what follows the RecvTensor response header (kind 1, meta-data,
// producer time) when the producer answers with registered memory instead of the tensor's bytes. Encoding, and
// the reader applied to a peer's response. Apart from gdr.cpp so that tests and the fuzz target
// (tests/fuzz/fuzz_gdr.cpp) reach it: a malformed or inconsistent descriptor is an Error, never an RDMA READ of a
// length the peer made up.
#pragma once

#include "core/common/result.hpp"
#include "core/rpc/rpc.hpp"
#include "core/transports/wire_common.hpp"

#include <cstdint>

namespace tp::transports::gdr_wire {

constexpr uint8_t KIND_GDR = 1; ///< RecvTensor response kind: a remote region follows the meta-data

struct RemoteRegion {
  uint64_t addr = 0; ///< the producer's registered copy of the tensor
  uint32_t rkey = 0;
  uint32_t key = 0;   ///< releases the producer's copy (the immediate of a zero-length WRITE_WITH_IMM)
  uint64_t bytes = 0; ///< what the consumer reads: the meta-data's size
};

void write_remote_region(rpc::Writer& w, const RemoteRegion& region);
/// Read the descriptor that follows the response header of `meta`; the rest of the response must be empty. The
/// tensor must be live, of a POD dtype and of 1 B .. 2^31 B (one RDMA READ; ibverbs' largest message).
Result<RemoteRegion> read_remote_region(rpc::Reader& r, const TensorMeta& meta);

} // namespace tp::transports::gdr_wire
