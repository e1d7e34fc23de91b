// Training workloads: a model's layers in forward order, each with its forward and backward compute time on
// one GPU at a batch size, and the variables (parameters) it owns. Built from three inputs:
//   - the architecture (exact TF variable list, models/workload/architectures.hpp),
//   - a measured per-layer profile (PipeDream, models/workloads/pipedream/) for the split across layers,
//   - measured single-GPU training throughput (models/workloads/throughput/*.json) for the total per GPU.
// How a total is derived when a (GPU, model, batch) was not measured is spelled out in `provenance` and in
// docs/model.md (training compute). Tests: tests/models/workload_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "core/training/training_model.hpp"
#include "models/catalog.hpp"
#include "models/workload/architectures.hpp"

#include <string>
#include <vector>

namespace tp::models {

struct WorkloadLayer {
  std::string name;
  double forward_seconds = 0;
  double backward_seconds = 0;
  std::vector<VariableSpec> variables; ///< owned by this layer; their gradients are ready when its backward ends
};

struct Workload {
  std::string model;
  std::string gpu;
  int batch = 0;
  std::vector<WorkloadLayer> layers; ///< forward order
  std::string provenance;            ///< how the total compute and its split were obtained

  double forward_seconds() const;
  double backward_seconds() const;
  double compute_seconds() const { return forward_seconds() + backward_seconds(); }
  uint64_t parameter_bytes(bool trainable_only = false) const;
  size_t variable_count() const;
};

/// The precisions a throughput is measured at (ThroughputEntry::precision), in words for errors: "fp32, tf32 or amp".
extern const char* const PRECISIONS;
/// Whether `word` is one of them.
bool known_precision(const std::string& word);

/// One measured single-GPU throughput.
struct ThroughputEntry {
  std::string gpu;   ///< GPU profile name
  std::string model; ///< architecture family (vgg16, resnet50, ...)
  /// The arithmetic of the measurement: "fp32" (the default; FP32 math), "tf32" (FP32 storage, TF32 tensor-core math:
  /// PyTorch's default for convolutions on Ampere and later) or "amp" (automatic mixed precision: FP16/BF16 math, FP32
  /// master weights and gradients). Gradients are FP32 in all three, so the bytes a step moves do not change.
  std::string precision = "fp32";
  int batch = 0;
  double images_per_second = 0;
  std::string source;
  std::string table; ///< the "name" of the file it came from ("tf-cnn-benchmarks-2017", ...)
};

/// Directory with pipedream/ and throughput/ (models/workloads of the source tree, or TENSORPATH_WORKLOADS_DIR).
std::string default_workloads_dir();

class WorkloadLibrary {
public:
  /// Loads the throughput tables; errors (bad file, unknown GPU) surface on first use through make().
  explicit WorkloadLibrary(std::string dir = default_workloads_dir(), Catalog catalog = Catalog());

  /// The workload of `model` (architecture name) on GPU profile `gpu` at `batch` images per GPU, with the compute
  /// measured at `precision` (ThroughputEntry::precision).
  Result<Workload> make(const std::string& model, const std::string& gpu, int batch,
                        const std::string& precision = "fp32") const;
  /// Forward + backward seconds of one step on one GPU, and how it was derived. A precision other than fp32 must
  /// have been measured on that GPU (FP32 peaks do not scale tensor-core math); an error lists what was measured.
  Result<double> step_compute_seconds(const std::string& model, const std::string& gpu, int batch,
                                      std::string* provenance = nullptr, const std::string& precision = "fp32") const;
  const std::vector<ThroughputEntry>& throughput() const { return entries_; }

private:
  Result<double> measured_seconds(const std::string& family, const std::string& gpu, int batch, std::string* how,
                                  const std::string& precision) const;
  Result<double> profile_or_flops_cost(const std::string& model, bool* from_profile) const;

  std::string dir_;
  Catalog catalog_;
  std::vector<ThroughputEntry> entries_;
  Status load_status_ = ok_status();
};

/// The engine's view of a workload (layers, seconds, variables).
training::TrainingModel to_training_model(const Workload& w);

/// Architecture family used for throughput tables and profiles ("resnet50-keras" -> "resnet50").
std::string workload_family(const std::string& model);

} // namespace tp::models
