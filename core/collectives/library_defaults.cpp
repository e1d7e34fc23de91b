// Allreduce libraries' defaults (see library_defaults.hpp). Every value is the library's own default, read from its
// code at the version named.
#include "core/collectives/library_defaults.hpp"

#include "core/common/suggest.hpp"

namespace tp::collectives {

EngineOptions library_defaults(AllreduceLibrary lib)
{
  EngineOptions o;
  switch (lib) {
  case AllreduceLibrary::HOROVOD:
    // horovod/common/operations.cc since v0.21.0 (PR #2468, "Changed default cycle time from 5ms to 1ms and fusion
    // threshold from 64MB to 128MB"): SetCycleTimeMs(1), SetTensorFusionThresholdBytes(128 * 1024 * 1024),
    // SetCacheEnabled(true) with global_state.h cache_capacity = 1024. Copies in and out of a GPU fusion buffer by
    // the batched D2D copy kernel since v0.21.0 (PR #2435; global_state.h batch_d2d_memcopies = true).
    o.coordinator = true;
    o.tick_seconds = 1e-3;
    o.fusion_threshold = 128ull << 20;
    o.response_cache = true;
    o.batched_copies = HOROVOD_BATCHED_D2D_CAPACITY;
    break;
  case AllreduceLibrary::HOROVOD_0_20:
    // horovod/common/operations.cc v0.16.2 .. v0.20.x: cycle_time_ms = 5 (SetCycleTimeMs(5) from v0.16.0), the
    // 64 MiB fusion threshold of every release since v0.9.3, response cache enabled from v0.16.2; one
    // cudaMemcpyAsync per tensor in and out of the fusion buffer (MemcpyInFusionBuffer / MemcpyOutFusionBuffer).
    o.coordinator = true;
    o.tick_seconds = 5e-3;
    o.fusion_threshold = 64ull << 20;
    o.response_cache = true;
    break;
  case AllreduceLibrary::BAIDU:
    // baidu-research/tensorflow-allreduce: the background loop sleeps 5 ms per tick; no fusion, no cache.
    o.coordinator = true;
    o.tick_seconds = 5e-3;
    o.fusion_threshold = 0;
    o.response_cache = false;
    break;
  case AllreduceLibrary::TF_CONTRIB_MPI:
    // tensorflow/contrib/mpi_collectives (TF 1.x): the same loop with a 1 ms sleep; no fusion, no cache.
    o.coordinator = true;
    o.tick_seconds = 1e-3;
    o.fusion_threshold = 0;
    o.response_cache = false;
    break;
  case AllreduceLibrary::MATEX:
    // MaTEx (Vishnu et al. 2017): TfReduce per gradient in graph order, blocking; no background coordinator.
    o.coordinator = false;
    o.tick_seconds = 1e-3;
    o.fusion_threshold = 0;
    o.response_cache = false;
    break;
  }
  return o;
}

const char* to_string(AllreduceLibrary lib)
{
  switch (lib) {
  case AllreduceLibrary::HOROVOD:
    return "horovod";
  case AllreduceLibrary::HOROVOD_0_20:
    return "horovod-0.20";
  case AllreduceLibrary::BAIDU:
    return "baidu";
  case AllreduceLibrary::TF_CONTRIB_MPI:
    return "tf-contrib-mpi";
  case AllreduceLibrary::MATEX:
    return "matex";
  }
  return "?";
}

std::vector<std::string> allreduce_library_names()
{
  std::vector<std::string> out;
  for (auto lib : {AllreduceLibrary::HOROVOD, AllreduceLibrary::HOROVOD_0_20, AllreduceLibrary::BAIDU,
                   AllreduceLibrary::TF_CONTRIB_MPI, AllreduceLibrary::MATEX})
    out.push_back(to_string(lib));
  return out;
}

Result<AllreduceLibrary> parse_allreduce_library(const std::string& name)
{
  for (auto lib : {AllreduceLibrary::HOROVOD, AllreduceLibrary::HOROVOD_0_20, AllreduceLibrary::BAIDU,
                   AllreduceLibrary::TF_CONTRIB_MPI, AllreduceLibrary::MATEX})
    if (name == to_string(lib)) return lib;
  return Error::at("", "allreduce library", one_of_names(name, allreduce_library_names()),
                   unknown_name(name, allreduce_library_names()));
}

std::string describe(AllreduceLibrary lib, const EngineOptions& o)
{
  std::string s = std::string(to_string(lib)) + ": ";
  if (!o.coordinator) return s + "no coordinator (graph order, blocking)";
  auto num = [](double v) {
    std::string t = std::to_string(v);
    t.erase(t.find_last_not_of('0') + 1);
    if (!t.empty() && t.back() == '.') t.pop_back();
    return t;
  };
  s += "coordinator tick " + num(o.tick_seconds * 1e3) + " ms, fusion ";
  if (o.fusion_threshold == 0)
    s += "off";
  else if (o.fusion_threshold % (1ull << 20) == 0)
    s += std::to_string(o.fusion_threshold >> 20) + " MiB";
  else
    s += std::to_string(o.fusion_threshold) + " B";
  if (o.fusion_threshold > 0)
    s += o.batched_copies > 0 ? " (GPU copies batched, " + std::to_string(o.batched_copies) + " per kernel)"
                              : " (a GPU copy per tensor)";
  s += std::string(", response cache ") + (o.response_cache ? "on" : "off");
  return s;
}

} // namespace tp::collectives
