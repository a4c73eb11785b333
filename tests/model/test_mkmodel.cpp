// oscar-mkmodel writes loadable, deterministic models with the published
// shapes and the q4_k_m type mix.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/log.h"
#include "gguf/gguf_file.h"
#include "model/model.h"

#include "common/tmp_dir.h"

namespace oscar {
namespace {

using test::TmpDir;
using test::mkmodel;

namespace fs = std::filesystem;

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

TEST(MkModel, DeterministicForSeedAndThreadCount) {
  TmpDir t;
  ASSERT_EQ(mkmodel("--preset tiny --type q8_0 --seed 3 -t 1 -o " + t.file("a.gguf")), 0);
  ASSERT_EQ(mkmodel("--preset tiny --type q8_0 --seed 3 -t 2 -o " + t.file("b.gguf")), 0);
  ASSERT_EQ(mkmodel("--preset tiny --type q8_0 --seed 4 -o " + t.file("c.gguf")), 0);
  EXPECT_EQ(slurp(t.file("a.gguf")), slurp(t.file("b.gguf")));
  EXPECT_NE(slurp(t.file("a.gguf")), slurp(t.file("c.gguf")));
}

TEST(MkModel, EveryArchAndWeightTypeLoads) {
  TmpDir t;
  const quant::QuantTable table(detect_cpu());
  for (const char* arch : {"qwen3", "llama", "qwen2"})
    for (const char* type : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k",
                             "q4_k", "q5_k", "q6_k", "q4_k_m"}) {
      // 256-wide rows so the k-quants are really used, not their fallbacks.
      const std::string f = t.file(std::string(arch) + "-" + type + ".gguf");
      ASSERT_EQ(mkmodel(std::string("--arch ") + arch + " --preset tiny --embd 256 --ffn 512 --heads 4 --head-dim 64 --type " + type + " -o " + f), 0)
          << arch << " " << type;
      auto m = model::Model::load(f, table, Logger::quiet());
      EXPECT_EQ(m->config().arch, arch);
      EXPECT_EQ(m->config().n_embd, 256);
      EXPECT_EQ(m->config().layers[0].head_dim, 64);
      EXPECT_EQ(m->config().layers[0].qk_norm, std::string(arch) == "qwen3");
      EXPECT_EQ(m->config().layers[0].qkv_bias, std::string(arch) == "qwen2");
    }
}

TEST(MkModel, Q4KMMixFollowsTheLlamaCppRule) {
  TmpDir t;
  const std::string f = t.file("m.gguf");
  // 16 layers: use_more_bits = layers 0,1 (first eighth), 14,15 (last eighth), and (i-2)%3==2 → 4,7,10,13.
  ASSERT_EQ(mkmodel("--arch llama --preset tiny --layers 16 --embd 256 --ffn 512 --heads 4 --head-dim 64 --type q4_k_m -o " + f), 0);
  auto g = gguf::GgufFile::open(f);
  EXPECT_EQ(g.find_tensor("output.weight")->type, TensorType::Q6_K);
  EXPECT_EQ(g.find_tensor("token_embd.weight")->type, TensorType::Q4_K);
  EXPECT_EQ(g.find_tensor("blk.0.attn_norm.weight")->type, TensorType::F32);
  for (int i = 0; i < 16; ++i) {
    const bool more = i < 2 || i >= 14 || (i - 2) % 3 == 2;
    const TensorType want = more ? TensorType::Q6_K : TensorType::Q4_K;
    EXPECT_EQ(g.find_tensor("blk." + std::to_string(i) + ".attn_v.weight")->type, want) << i;
    EXPECT_EQ(g.find_tensor("blk." + std::to_string(i) + ".ffn_down.weight")->type, want) << i;
    EXPECT_EQ(g.find_tensor("blk." + std::to_string(i) + ".attn_q.weight")->type, TensorType::Q4_K) << i;
  }
  EXPECT_EQ(g.get_int("general.file_type"), 15);
}

TEST(MkModel, PresetHasPublishedShapeAndTiedEmbedding) {
  TmpDir t;
  // Shapes only: shrink the layer count to keep the file small.
  const std::string f = t.file("q.gguf");
  ASSERT_EQ(mkmodel("--preset qwen3-0.6b --layers 1 --type q8_0 -o " + f), 0);
  auto g = gguf::GgufFile::open(f);
  EXPECT_EQ(g.get_int("qwen3.embedding_length"), 1024);
  EXPECT_EQ(g.get_int("qwen3.attention.head_count"), 16);
  EXPECT_EQ(g.get_int("qwen3.attention.head_count_kv"), 8);
  EXPECT_EQ(g.get_int("qwen3.attention.key_length"), 128);
  EXPECT_EQ(g.get_int("qwen3.feed_forward_length"), 3072);
  EXPECT_EQ(g.find_tensor("token_embd.weight")->shape, (std::vector<uint64_t>{1024, 151936}));
  EXPECT_EQ(g.find_tensor("output.weight"), nullptr);  // tied
}

// Flags apply after the preset, --tied too: the tiny preset has its own
// output matrix unless --tied asks for none.
TEST(MkModel, TiedFlagOverridesThePreset) {
  TmpDir t;
  ASSERT_EQ(mkmodel("--preset tiny --tied --type q4_k_m -o " + t.file("tied.gguf")), 0);
  ASSERT_EQ(mkmodel("--preset tiny --type q4_k_m -o " + t.file("untied.gguf")), 0);
  auto tied = gguf::GgufFile::open(t.file("tied.gguf"));
  auto untied = gguf::GgufFile::open(t.file("untied.gguf"));
  EXPECT_EQ(tied.find_tensor("output.weight"), nullptr);
  EXPECT_NE(untied.find_tensor("output.weight"), nullptr);
}

TEST(MkModel, TokenizerJsonGivesTheRealVocabulary) {
  const std::string tj = std::string(OSCAR_TEST_DATA) + "/tokenizers/qwen3/tokenizer.json";
  if (!fs::exists(tj)) GTEST_SKIP() << "test data absent (see testdata/README.md): " << tj;
  TmpDir t;
  const std::string f = t.file("v.gguf");
  ASSERT_EQ(mkmodel("--preset tiny --tokenizer-json " + tj + " -o " + f), 0);
  auto g = gguf::GgufFile::open(f);
  EXPECT_EQ(g.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(g.get_string("tokenizer.ggml.pre"), "qwen2");
  const auto* tokens = g.get_array("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ((uint64_t)tokens->items.size(), g.find_tensor("token_embd.weight")->shape[1]);
  EXPECT_TRUE(g.get_string("tokenizer.chat_template").has_value());
}

TEST(MkModel, BadFlagsFailClearly) {
  TmpDir t;
  EXPECT_NE(mkmodel("--preset nope -o " + t.file("x.gguf")), 0);
  EXPECT_NE(mkmodel("--type q9_9 -o " + t.file("x.gguf")), 0);
  EXPECT_NE(mkmodel("--heads 5 --kv-heads 2 -o " + t.file("x.gguf")), 0);
  EXPECT_NE(mkmodel("--arch gpt9 -o " + t.file("x.gguf")), 0);
  EXPECT_FALSE(fs::exists(t.file("x.gguf")));
}

}  // namespace
}  // namespace oscar

namespace oscar {
namespace {

// The Gemma presets carry the published layer layout; their widths are
// shrunk here so the files stay small.
TEST(MkModel, GemmaPresetsHaveThePublishedLayerLayout) {
  TmpDir t;
  const quant::QuantTable table(detect_cpu());
  const std::string small = " --embd 256 --ffn 256 --vocab 300 --type q8_0 -o ";
  {
    const std::string f = t.file("g4-31b.gguf");
    ASSERT_EQ(mkmodel("--arch gemma4 --preset gemma4-31b --layers 6" + small + f), 0);
    auto m = model::Model::load(f, table, Logger::quiet());
    const auto& c = m->config();
    ASSERT_EQ(c.n_layer, 6);
    for (int i = 0; i < 6; ++i) {
      const auto& l = c.layers[(size_t)i];
      const bool global = i % 6 == 5;
      EXPECT_EQ(l.sliding_window, global ? 0 : 1024) << i;
      EXPECT_EQ(l.head_dim, global ? 512 : 256) << i;
      EXPECT_EQ(l.n_head_kv, global ? 4 : 16) << i;
      EXPECT_EQ(l.n_head, 32) << i;
      EXPECT_EQ(l.v_from_k, global) << i;
      EXPECT_FLOAT_EQ(l.rope_base, global ? 1e6f : 1e4f) << i;
    }
    EXPECT_FLOAT_EQ(c.final_logit_softcap, 30.0f);
    EXPECT_EQ(c.n_embd_per_layer, 0);
    EXPECT_TRUE(c.tied_output);
  }
  {
    const std::string f = t.file("g3-27b.gguf");
    ASSERT_EQ(mkmodel("--arch gemma3 --preset gemma3-27b --layers 12" + small + f), 0);
    auto m = model::Model::load(f, table, Logger::quiet());
    const auto& c = m->config();
    ASSERT_EQ(c.n_layer, 12);
    int global = 0;
    for (const auto& l : c.layers) global += l.sliding_window == 0;
    EXPECT_EQ(global, 2);  // layers 5 and 11
    EXPECT_EQ(c.layers[5].sliding_window, 0);
    EXPECT_EQ(c.layers[0].sliding_window, 1024);
    EXPECT_FLOAT_EQ(c.layers[5].rope_freq_scale, 0.125f);
    EXPECT_EQ(c.layers[0].head_dim, 128);
    EXPECT_FLOAT_EQ(c.layers[0].kq_scale(), 1.0f / std::sqrt(128.0f));
  }
}

}  // namespace
}  // namespace oscar
