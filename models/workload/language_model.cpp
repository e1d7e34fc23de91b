// The LSTM language model of Jozefowicz et al. 2016 (see language_model.hpp): variable shapes and FLOPs.
//
// Source of the shapes: R. Jozefowicz, O. Vinyals, M. Schuster, N. Shazeer, Y. Wu, "Exploring the Limits of
// Language Modeling", arXiv:1602.02410 (2016), whose baseline model LSTM-2048-512 (one LSTM layer of 2048 cells
// with a projection to 512, 512-wide word embeddings, a softmax over the One Billion Word vocabulary, trained with
// importance sampling over 8192 classes) is the default configuration of the first author's public TensorFlow code,
// github.com/rafaljozefowicz/lm (language_model.py `get_default_hparams`: vocab_size 793470, emb_size 512,
// state_size 2048, projected_size 512, num_layers 1, num_shards 8, num_sampled 8192). The code builds:
//   emb_0 .. emb_{S-1}             [ceil(V/S), E]       sharded_variable("emb", [V, E], S): rows rounded up
//   lstm_i/LSTMCell/W              [E + P, 4 H]         the four gates over [input, previous projected output]
//                                                        (layer i > 0: its input is the previous layer's P-wide
//                                                        output; the code passes E, so E = P is required there)
//   lstm_i/LSTMCell/B              [4 H]
//   lstm_i/LSTMCell/W_P            [H, P]               the output projection
//   softmax_w_0 .. softmax_w_{S-1} [ceil(V/S), P]
//   softmax_b                      [V]
// For LSTM-2048-512 that is 2 x 793472 x 512 + 793470 + 1024 x 8192 + 8192 + 2048 x 512 = 822.8 M parameters, of
// which 98.9 % sit in the two vocabulary-sized matrices (the total follows from the code's shapes; the paper's
// Table 1 sizes were not re-read for it).
//
// Baidu's model ("baidu-lm-300m"). A. Gibiansky, "Bringing HPC Techniques to Deep Learning" (Baidu Research blog,
// 2017): "consider a language model similar to the one in [Jozefowicz et al.], but with approximately 300 million
// learnable parameters (and thus with a total gradient size of 1.2 gigabytes)". The blog gives no other shape.
// Derivation (an assumption, stated as such in validation/cases/v1_baidu_ring.json): keep the published layer
// shapes (E = P = 512, H = 2048, one layer, 8 shards) and take the vocabulary as the dimension that differs, since
// it holds almost all of the parameters and depends on the data set, not on the architecture:
//   params(V) = 2 x 512 x V + V + (1024 x 8192 + 8192 + 2048 x 512) = 1025 V + 9,445,376 = 300 M
//   => V = (300,000,000 - 9,445,376) / 1025 = 283,468 words
// which gives 20 gradient tensors: 16 shards of [35434, 512] (72.6 MB each), softmax_b [283468], LSTM W [1024, 8192]
// (33.6 MB), B [8192], W_P [2048, 512]; 300.0 M parameters in all. The vocabulary was fixed by the parameter count
// the blog states, before the case was run; nothing here was chosen by a simulated result.
//
// FLOPs per token (multiply-add = 2): LSTM layer 2 (E + P) 4H + 2 H P; sampled softmax 2 (sampled + 1) P (the
// true class's logit besides the samples); the embedding lookup copies a row and is counted as 0.
#include "models/workload/language_model.hpp"
#include "core/common/suggest.hpp"

namespace tp::models {

Result<Architecture> lstm_language_model(const std::string& name, const LstmLmConfig& c)
{
  if (c.vocab < 1 || c.emb < 1 || c.state < 1 || c.projection < 1 || c.layers < 1 || c.shards < 1 || c.sampled < 0)
    return Error::at("", "language model " + name, "positive sizes, layers and shards", "a non-positive one");
  if (c.layers > 1 && c.emb != c.projection)
    return Error::at("", "language model " + name, "emb == projection with more than one LSTM layer",
                     std::to_string(c.emb) + " and " + std::to_string(c.projection));
  Architecture a;
  a.name = name;
  a.description = "LSTM-" + std::to_string(c.state) + "-" + std::to_string(c.projection) + " language model, " +
                  std::to_string(c.layers) + " layer(s), vocabulary " + std::to_string(c.vocab) +
                  " (Jozefowicz et al. 2016, github.com/rafaljozefowicz/lm)";
  const int64_t rows = (c.vocab + c.shards - 1) / c.shards;
  ArchitectureLayer emb{"emb", 0, {}};
  for (int s = 0; s < c.shards; ++s)
    emb.variables.push_back({"emb_" + std::to_string(s), {rows, c.emb}, true});
  a.layers.push_back(emb);
  for (int i = 0; i < c.layers; ++i) {
    const std::string scope = "lstm_" + std::to_string(i) + "/LSTMCell/";
    ArchitectureLayer l{"lstm_" + std::to_string(i),
                        2.0 * double(c.emb + c.projection) * double(4 * c.state) +
                            2.0 * double(c.state) * double(c.projection),
                        {}};
    l.variables.push_back({scope + "W", {c.emb + c.projection, 4 * c.state}, true});
    l.variables.push_back({scope + "B", {4 * c.state}, true});
    l.variables.push_back({scope + "W_P", {c.state, c.projection}, true});
    a.layers.push_back(l);
  }
  const double classes = c.sampled > 0 ? double(c.sampled + 1) : double(c.vocab);
  ArchitectureLayer sm{"softmax", 2.0 * classes * double(c.projection), {}};
  for (int s = 0; s < c.shards; ++s)
    sm.variables.push_back({"softmax_w_" + std::to_string(s), {rows, c.projection}, true});
  sm.variables.push_back({"softmax_b", {c.vocab}, true});
  a.layers.push_back(sm);
  return a;
}

std::vector<std::string> language_model_names()
{
  return {"lm1b-lstm-2048-512", "baidu-lm-300m"};
}

Result<Architecture> language_model(const std::string& name)
{
  LstmLmConfig c; // the paper's LSTM-2048-512 (rafaljozefowicz/lm defaults)
  if (name == "lm1b-lstm-2048-512") return lstm_language_model(name, c);
  if (name == "baidu-lm-300m") {
    c.vocab = 283468; // derived above from the blog's ~300 M parameters
    return lstm_language_model(name, c);
  }
  return Error::at("", "variables_of", one_of_names(name, language_model_names()),
                   unknown_name(name, language_model_names()));
}

} // namespace tp::models
