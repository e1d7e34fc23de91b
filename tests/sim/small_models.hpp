// Small training models for the simulator's tests (a few layers with round numbers: quick to simulate, independent of
// the shipped workloads).
#pragma once

#include "core/training/training_model.hpp"

#include <cstdint>

namespace tp::test {

/// A conv layer (2 MiB of weights and a bias) and a fully connected one of `fc_weight_bytes` (with a 4000-byte bias
/// where `fc_bias`); batch 8.
inline training::TrainingModel conv_fc_model(uint64_t fc_weight_bytes, bool fc_bias)
{
  training::TrainingModel m;
  m.name = "small";
  m.batch = 8;
  m.layers = {{"conv", 1e-3, 2e-3, {{"conv/w", 2 << 20, true}, {"conv/b", 512, true}}},
              {"fc", 5e-4, 1e-3, {{"fc/w", fc_weight_bytes, true}}}};
  if (fc_bias) m.layers.back().variables.push_back({"fc/b", 4000, true});
  return m;
}

/// conv_fc_model(4 MiB, with its bias) with a batch-norm layer between (two 256-byte variables).
inline training::TrainingModel conv_bn_fc_model()
{
  training::TrainingModel m = conv_fc_model(4 << 20, true);
  m.layers.insert(m.layers.begin() + 1, {"bn", 2e-4, 4e-4, {{"bn/gamma", 256, true}, {"bn/beta", 256, true}}});
  return m;
}

} // namespace tp::test
