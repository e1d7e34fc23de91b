// The LSTM language model's variable list (Jozefowicz et al. 2016, rafaljozefowicz/lm): shapes, sharding and the
// ~300 M-parameter variant used for Baidu's ring-allreduce case.
#include "models/workload/language_model.hpp"

#include <catch2/catch.hpp>

using namespace tp::models;

TEST_CASE("The LSTM-2048-512 language model has the code's shapes, sharded embedding and softmax", "[quick]")
{
  auto a = language_model("lm1b-lstm-2048-512");
  REQUIRE(a.ok());
  // 8 embedding shards + (W, B, W_P) + 8 softmax shards + softmax_b.
  CHECK(a->variable_count() == 20);
  // sharded_variable rounds the rows up: ceil(793470 / 8) = 99184 rows per shard.
  REQUIRE(a->layers.front().variables.size() == 8);
  CHECK(a->layers.front().variables[0].shape == std::vector<int64_t>{99184, 512});
  const auto& lstm = a->layers.at(1).variables;
  REQUIRE(lstm.size() == 3);
  CHECK(lstm[0].shape == std::vector<int64_t>{1024, 8192}); // [emb + projection, 4 x state]
  CHECK(lstm[1].shape == std::vector<int64_t>{8192});
  CHECK(lstm[2].shape == std::vector<int64_t>{2048, 512});
  CHECK(a->layers.back().variables.back().shape == std::vector<int64_t>{793470});
  // 2 x 8 x 99184 x 512 + 793470 + 8388608 + 8192 + 1048576
  CHECK(a->parameters() == int64_t(2) * 8 * 99184 * 512 + 793470 + 8388608 + 8192 + 1048576);
}

TEST_CASE("Baidu's language model has about 300 M parameters, most in the vocabulary matrices", "[quick]")
{
  auto a = language_model("baidu-lm-300m");
  REQUIRE(a.ok());
  // The blog: "approximately 300 million learnable parameters (... 1.2 gigabytes)".
  CHECK(std::abs(double(a->parameters()) - 300e6) < 0.001 * 300e6);
  CHECK(a->variable_count() == 20);
  int64_t vocab_sized = 0;
  for (const auto& l : a->layers)
    if (l.name != "lstm_0")
      for (const auto& v : l.variables)
        vocab_sized += v.elements();
  CHECK(double(vocab_sized) > 0.95 * double(a->parameters()));
  // The LSTM does the compute: its forward FLOPs per token exceed the sampled softmax's; the lookup has none.
  CHECK(a->layers.front().forward_flops == 0);
  CHECK(a->layers.at(1).forward_flops > a->layers.back().forward_flops);
}

TEST_CASE("Language-model names and sizes are checked", "[quick]")
{
  auto bad = language_model("lm1b-lstm-2048-51");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message().find("lm1b-lstm-2048-512") != std::string::npos);
  LstmLmConfig c;
  c.vocab = 0;
  CHECK_FALSE(lstm_language_model("x", c).ok());
  c = LstmLmConfig{};
  c.layers = 2;
  c.emb = 256; // a second layer's input is the first's 512-wide projection
  CHECK_FALSE(lstm_language_model("x", c).ok());
}
