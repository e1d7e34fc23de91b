// Transport registry: names, descriptions and factories of the built-in transports.
#include "core/transports/ar_grpc/ar_grpc.hpp"
#include "core/transports/gdr/gdr.hpp"
#include "core/transports/grpc/grpc.hpp"
#include "core/transports/mpi/mpi.hpp"
#include "core/transports/transport.hpp"
#include "core/transports/verbs_v1/verbs_v1.hpp"
#include "core/transports/verbs_v2/verbs_v2.hpp"

#include <mutex>

namespace tp::transports {

namespace {
std::vector<TransportInfo>& table()
{
  static std::vector<TransportInfo> t;
  return t;
}
} // namespace

void register_transport(TransportInfo info)
{
  for (auto& t : table())
    if (t.name == info.name) {
      t = std::move(info);
      return;
    }
  table().push_back(std::move(info));
}

void register_builtin_transports()
{
  static std::once_flag once;
  std::call_once(once, [] {
    register_transport(
        {"grpc", "TensorFlow's default gRPC RecvTensor over TCP (Ethernet or IPoIB)", false, make_grpc_transport,
         "the RecvTensor RPC fails with UnavailableError (\"Socket closed\" / \"Connection reset by peer\" / "
         "deadline); the master aborts the step and session.run() raises it; the processes keep running. "
         "RecvTensor has no deadline by default: a peer that answers nothing (power loss) hangs the step"});
    register_transport(
        {"verbs_v1",
         "TF contrib verbs (Yahoo, r1.2-r1.5): pinned buffer per (peer, tensor), copy in and out, BUFFER_IDLE", true,
         make_verbs_v1_transport,
         "a work completion with an error status is a fatal CHECK in RdmaAdapter::Process_CQ: the process aborts "
         "(\"Check failed: wc_[i].status == IBV_WC_SUCCESS\"), its peers then see their gRPC channels fail"});
    register_transport(
        {"verbs_v2",
         "TF verbs with 0 copies: TENSOR_REQUEST with the destination, WRITE_WITH_IMM into it (Mellanox, TF >= 1.8)",
         true, make_verbs_v2_transport,
         "a work completion with an error status is a fatal CHECK (process abort); only producer-side errors "
         "(unknown tensor, restarted worker) travel back as ERROR_STATUS and fail the step with a status"});
    register_transport(
        {"gdr", "TF contrib GDR (HKUST): metadata over gRPC, one RDMA READ of NIC-registered (GPUDirect) memory", true,
         make_gdr_transport,
         "a READ completion error becomes Unavailable(<wc status>) for that RecvTensor and the step fails with "
         "UnavailableError; the metadata RPC fails like gRPC's"});
    register_transport(
        {"mpi",
         "TF contrib MPI rendezvous (grpc+mpi): tagged MPI messages from one MPI thread over an MPI library model",
         true, make_mpi_transport,
         "CHECKs only, no status propagation: with MPI_ERRORS_ARE_FATAL the MPI library aborts and mpirun kills "
         "every rank of the job"});
    register_transport(
        {"ar_grpc",
         "OSU AR-gRPC: gRPC over an RDMA endpoint, eager SEND (coalesced) or chunked RDMA READ rendezvous, auto-tuned",
         true, make_ar_grpc_transport,
         "not described by the AR-gRPC papers; assumed like gRPC: the RPC fails with UnavailableError and the step "
         "is aborted"});
  });
}

const TransportInfo* find_transport(const std::string& name)
{
  register_builtin_transports();
  for (const auto& t : table())
    if (t.name == name) return &t;
  return nullptr;
}

std::vector<std::string> transport_names()
{
  register_builtin_transports();
  std::vector<std::string> n;
  for (const auto& t : table())
    n.push_back(t.name);
  return n;
}

Location device_location(const rendezvous::DeviceName& d, int cpu_numa_node)
{
  return d.type == "GPU" ? Location::gpu(d.id) : Location::host(cpu_numa_node);
}

} // namespace tp::transports
