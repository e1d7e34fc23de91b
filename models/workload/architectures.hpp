// Model architectures as TensorFlow would build them: the exact list of variables (name, shape, trainable)
// per layer, in forward order, and each layer's forward FLOPs per image where the spatial sizes are tracked.
// A C++ port of the tensor-list generator in the hardware reference (appendix to B9), which follows
// tensorflow/benchmarks tf_cnn_benchmarks' model files and the Keras applications.
// Tests: tests/models/workload_test.cpp (totals against the Keras Applications table).
#pragma once

#include "core/common/result.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tp::models {

struct VariableSpec {
  std::string name;           ///< "conv1/kernel"
  std::vector<int64_t> shape; ///< TF shape, e.g. {3, 3, 64, 128}
  bool trainable = true;      ///< false for batch-norm moving mean/variance
  int64_t elements() const;
  uint64_t bytes() const { return uint64_t(elements()) * 4; } ///< fp32
};

struct ArchitectureLayer {
  std::string name;
  double forward_flops = 0; ///< per image (multiply-add = 2 FLOPs); 0 where not tracked
  std::vector<VariableSpec> variables;
};

struct Architecture {
  std::string name;
  std::string description; ///< variant and source
  std::vector<ArchitectureLayer> layers;

  int64_t parameters(bool trainable_only = false) const;
  uint64_t bytes(bool trainable_only = false) const { return uint64_t(parameters(trainable_only)) * 4; }
  size_t variable_count() const;
  double forward_flops() const;
};

/// Built-in architectures: vgg16, alexnet (tf_cnn_benchmarks), resnet50, resnet101, resnet152 (tf_cnn_benchmarks:
/// no conv bias, 1001 classes), resnet50-keras, resnet101-keras, resnet152-keras, inception3 (Keras), googlenet
/// (tf_cnn_benchmarks). Error listing the names for anything else.
Result<Architecture> architecture(const std::string& name);
std::vector<std::string> architecture_names();

} // namespace tp::models
