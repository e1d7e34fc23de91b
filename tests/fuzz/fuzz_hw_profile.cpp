// libFuzzer target: hardware profiles of every kind (nic, pcie, cpu, gpu, socket_link, nvlink, switch, registration,
// tcp, host, cluster) through Catalog::check_text, the loaders' parsers on text. Profiles the input names resolve in
// the shipped catalog (models/hw); the input stands at models/hw/cluster/ so that a cluster's relative "network"
// path reaches models/hw/network/.
#include "models/catalog.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  static const tp::models::Catalog catalog;
  static const std::string file = catalog.root() + "/cluster/fuzz-input.json";
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)catalog.check_text(text, file);
  return 0;
}
