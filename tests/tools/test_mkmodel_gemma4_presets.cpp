// oscar-mkmodel's Gemma 4 E2B and E4B presets write models the engine loads,
// with the published layer layout: sliding/global pattern, head dims and KV
// heads per kind, the shared-KV tail and which layer each shared layer reads,
// per-layer embeddings, and E2B's double-wide FFN on the shared layers. The
// widths and vocabulary are shrunk with flags so the files stay small; the
// layer counts stay the published ones.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/cpu_features.h"
#include "core/log.h"
#include "gguf/gguf_file.h"
#include "model/model.h"

#include "common/tmp_dir.h"

namespace oscar {
namespace {

using test::TmpDir;
using test::mkmodel;

namespace fs = std::filesystem;

struct Published {
  const char* preset;
  int n_layer, n_head, kv_sliding, kv_global, period, n_shared, per_layer;
  bool double_wide;
};

// Checks the loaded config against the published numbers (widths shrunk:
// --embd 256 --ffn 128 --vocab 300 --per-layer-embd 16).
void expect_layout(const model::ModelConfig& c, const Published& p) {
  ASSERT_EQ(c.n_layer, p.n_layer);
  EXPECT_EQ(c.arch, "gemma4");
  EXPECT_EQ(c.n_embd, 256);
  EXPECT_EQ(c.n_vocab, 300);
  EXPECT_EQ(c.n_embd_per_layer, 16);
  EXPECT_FLOAT_EQ(c.final_logit_softcap, 30.0f);
  EXPECT_TRUE(c.tied_output);
  const int first_shared = p.n_layer - p.n_shared;
  // The last global and the last sliding layer before the shared block.
  int last_global = -1, last_sliding = -1;
  for (int i = 0; i < first_shared; ++i) (i % p.period == p.period - 1 ? last_global : last_sliding) = i;
  for (int i = 0; i < p.n_layer; ++i) {
    const auto& l = c.layers[(size_t)i];
    const bool global = i % p.period == p.period - 1;
    const bool shared = i >= first_shared;
    EXPECT_EQ(l.sliding_window, global ? 0 : 512) << i;
    EXPECT_EQ(l.head_dim, global ? 512 : 256) << i;
    EXPECT_EQ(l.n_head, p.n_head) << i;
    EXPECT_EQ(l.n_head_kv, global ? p.kv_global : p.kv_sliding) << i;
    EXPECT_FALSE(l.v_from_k) << i;  // attention_k_eq_v is false in E2B and E4B
    EXPECT_FLOAT_EQ(l.rope_base, global ? 1e6f : 1e4f) << i;
    EXPECT_EQ(l.kv_layer, shared ? (global ? last_global : last_sliding) : -1) << i;
    EXPECT_EQ(c.ff_of(i), shared && p.double_wide ? 256 : 128) << i;
  }
}

TEST(MkModelGemma4Presets, E2BAndE4BLoadWithThePublishedLayout) {
  TmpDir t;
  const quant::QuantTable table(detect_cpu());
  const std::string small = " --embd 256 --ffn 128 --vocab 300 --per-layer-embd 16 --type q8_0 -o ";
  const Published kPublished[] = {
      // E2B: 35 layers, 4 sliding : 1 global, 1 KV head, 20 shared, FFN x2 on them.
      {"gemma4-e2b", 35, 8, 1, 1, 5, 20, 16, true},
      // E4B: 42 layers, 5 sliding : 1 global, 2 KV heads, 18 shared, one FFN width.
      {"gemma4-e4b", 42, 8, 2, 2, 6, 18, 16, false},
  };
  for (const auto& p : kPublished) {
    SCOPED_TRACE(p.preset);
    const std::string f = t.file(std::string(p.preset) + ".gguf");
    ASSERT_EQ(mkmodel(std::string("--arch gemma4 --preset ") + p.preset + small + f), 0);
    auto m = model::Model::load(f, table, Logger::quiet());
    expect_layout(m->config(), p);
    // The file says what the published GGUFs say.
    auto g = gguf::GgufFile::open(f);
    EXPECT_EQ(g.get_int("gemma4.attention.sliding_window").value_or(-1), 512);
    EXPECT_EQ(g.get_int("gemma4.attention.shared_kv_layers").value_or(-1), p.n_shared);
    EXPECT_EQ(g.get_int("gemma4.context_length").value_or(-1), 131072);
    EXPECT_EQ(g.get_int("gemma4.attention.key_length").value_or(-1), 512);
    EXPECT_EQ(g.get_int("gemma4.attention.key_length_swa").value_or(-1), 256);
    const gguf::Value* ff = g.find("gemma4.feed_forward_length");
    ASSERT_NE(ff, nullptr);
    EXPECT_EQ(ff->is_array(), p.double_wide);  // one width per layer only when they differ
    // Shared layers have no K/V projections of their own.
    EXPECT_EQ(g.find_tensor("blk." + std::to_string(p.n_layer - 1) + ".attn_k.weight"), nullptr);
    EXPECT_NE(g.find_tensor("blk.0.attn_k.weight"), nullptr);
  }
}

TEST(MkModelGemma4Presets, DoubleWideFfnNeedsSharedGemma4Layers) {
  TmpDir t;
  EXPECT_NE(mkmodel("--arch qwen3 --preset tiny --double-wide-ffn -o " + t.file("y.gguf")), 0);
  EXPECT_NE(mkmodel("--arch gemma4 --preset tiny --kv-shared 0 --double-wide-ffn -o " + t.file("y.gguf")), 0);
  EXPECT_FALSE(fs::exists(t.file("y.gguf")));
}

TEST(MkModelGemma4Presets, DoubleWideFfnOnTinyGemma4Runs) {
  TmpDir t;
  const std::string f = t.file("dw.gguf");
  ASSERT_EQ(mkmodel("--arch gemma4 --preset tiny --double-wide-ffn --type f32 -o " + f), 0);
  const quant::QuantTable table(detect_cpu());
  auto m = model::Model::load(f, table, Logger::quiet());
  const auto& c = m->config();
  // tiny: 6 layers, the last 2 share KV, FFN 256.
  for (int i = 0; i < c.n_layer; ++i) EXPECT_EQ(c.ff_of(i), i >= 4 ? 512 : 256) << i;
}

}  // namespace
}  // namespace oscar
