// The allreduce libraries whose coordinator defaults tensorpath knows, and those defaults: what a user gets who
// runs the library without tuning it (tick or cycle time, tensor fusion threshold, response cache, coordinator).
// A training job names its library; every option it sets itself overrides the library's default. Sources are in
// library_defaults.cpp and docs/model.md#allreduce-libraries. Tests: tests/core/library_defaults_test.cpp.
#pragma once

#include "core/collectives/engine.hpp"
#include "core/common/result.hpp"

#include <string>
#include <vector>

namespace tp::collectives {

enum class AllreduceLibrary {
  HOROVOD,        ///< Horovod >= 0.21 (2020 to today): 1 ms cycle, 128 MiB fusion, response cache
  HOROVOD_0_20,   ///< Horovod 0.16.2 .. 0.20: 5 ms cycle, 64 MiB fusion, response cache
  BAIDU,          ///< baidu-research/tensorflow-allreduce: 5 ms tick, no fusion, no cache
  TF_CONTRIB_MPI, ///< tf.contrib.mpi_collectives (TF 1.x): 1 ms tick, no fusion, no cache
  MATEX,          ///< MaTEx: no coordinator, one blocking allreduce per gradient in graph order
};

/// Horovod's batched D2D copy kernel: tensors per launch (horovod/common/ops/cuda/cuda_kernels.h BATCHED_D2D_CAPACITY),
/// what HOROVOD_BATCH_D2D_MEMCOPIES=1 (the default since v0.21.0) gives.
inline constexpr uint32_t HOROVOD_BATCHED_D2D_CAPACITY = 160;

/// The options a library runs with by default.
EngineOptions library_defaults(AllreduceLibrary lib);
/// "horovod", "horovod-0.20", "baidu", "tf-contrib-mpi", "matex".
const char* to_string(AllreduceLibrary lib);
std::vector<std::string> allreduce_library_names();
/// A name from allreduce_library_names(); an error lists them.
Result<AllreduceLibrary> parse_allreduce_library(const std::string& name);
/// One line: the defaults that apply ("horovod: cycle 1 ms, fusion 128 MiB, response cache on").
std::string describe(AllreduceLibrary lib, const EngineOptions& options);

} // namespace tp::collectives
