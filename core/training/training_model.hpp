// What the training engine needs to know about a model, independent of where the numbers came from
// (models/workload builds it from architectures, profiles and throughput tables; a replayed trace could too):
// layers in forward order with one GPU's forward/backward seconds and the variables each owns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tp::training {

struct ModelVariable {
  std::string name;      ///< "conv1/kernel"
  uint64_t bytes = 0;    ///< fp32 bytes
  bool trainable = true; ///< non-trainable (batch-norm statistics) are still read and updated every step
};

struct ModelLayer {
  std::string name;
  double forward_seconds = 0;
  double backward_seconds = 0;
  std::vector<ModelVariable> variables;
};

struct TrainingModel {
  std::string name;
  int batch = 0; ///< images per GPU per step
  std::vector<ModelLayer> layers;

  uint64_t bytes() const
  {
    uint64_t b = 0;
    for (const auto& l : layers)
      for (const auto& v : l.variables)
        b += v.bytes;
    return b;
  }
  double compute_seconds() const
  {
    double s = 0;
    for (const auto& l : layers)
      s += l.forward_seconds + l.backward_seconds;
    return s;
  }
};

} // namespace tp::training
