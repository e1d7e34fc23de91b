// Transport registry: the built-in transports, each described by its own folder (<name>_transport_info(): name,
// description, factory, failure behaviour, option knobs). A new transport adds its line here
// (docs/adding-a-transport.md); tests/core/transport_registration_test.cpp checks the rest of its steps.
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
    register_transport(grpc_transport_info());
    register_transport(verbs_v1_transport_info());
    register_transport(verbs_v2_transport_info());
    register_transport(gdr_transport_info());
    register_transport(mpi_transport_info());
    register_transport(ar_grpc_transport_info());
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

std::vector<const OptionKnob*> option_knobs()
{
  register_builtin_transports();
  std::vector<const OptionKnob*> out;
  for (const auto& t : table())
    for (const auto& k : t.options)
      out.push_back(&k);
  return out;
}

std::string knob_transport(const OptionKnob* knob)
{
  register_builtin_transports();
  for (const auto& t : table())
    for (const auto& k : t.options)
      if (&k == knob) return t.name;
  return "";
}

Location device_location(const rendezvous::DeviceName& d, int cpu_numa_node)
{
  return d.type == "GPU" ? Location::gpu(d.id) : Location::host(cpu_numa_node);
}

} // namespace tp::transports
