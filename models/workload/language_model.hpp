// The LSTM language model of Jozefowicz et al. 2016 as its first author's TensorFlow code builds it: the exact
// variable list (embedding and softmax matrices sharded by rows, one LSTM cell with projection per layer) and each
// layer's forward FLOPs per token, for a synthetic training job whose gradient list must follow a real model.
// The derivation of each shape is in language_model.cpp. Tests: tests/models/language_model_test.cpp.
#pragma once

#include "core/common/result.hpp"
#include "models/workload/architectures.hpp"

#include <string>
#include <vector>

namespace tp::models {

struct LstmLmConfig {
  int64_t vocab = 793470;   ///< words (softmax classes and embedding rows)
  int64_t emb = 512;        ///< embedding size (the LSTM's input)
  int64_t state = 2048;     ///< LSTM cell size
  int64_t projection = 512; ///< LSTM output projection (the softmax's input)
  int layers = 1;           ///< LSTM layers
  int shards = 8;           ///< row shards of the embedding and softmax matrices
  int64_t sampled = 8192;   ///< sampled-softmax classes per step (0: full softmax), for FLOPs only
};

/// The variable list of that model, in forward order: layer "emb" (shards emb_0..), "lstm_i" (LSTMCell W, B, W_P),
/// "softmax" (shards softmax_w_0.., softmax_b). Error for a non-positive size.
Result<Architecture> lstm_language_model(const std::string& name, const LstmLmConfig& c);

/// Named configurations: "lm1b-lstm-2048-512" (the paper's LSTM-2048-512, the code's default hyper-parameters) and
/// "baidu-lm-300m" (the same shapes with the vocabulary that gives the ~300 M parameters of Baidu's ring-allreduce
/// blog). Error listing the names for anything else.
Result<Architecture> language_model(const std::string& name);
std::vector<std::string> language_model_names();

} // namespace tp::models
