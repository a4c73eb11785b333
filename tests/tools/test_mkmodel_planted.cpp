// oscar-mkmodel --k-outliers: the planted structure is in the written
// weights, found from the weights alone (not from the tool's own helpers):
// a massive residual channel 0 in every embedding row; per layer N K channels
// among the lowest-frequency RoPE channels that read it with one sign per
// channel shared by every KV head and by the same channels of every query
// head; their size SCALE / QSCALE on the K / Q norm weights (qwen3) or on the
// K projection rows (llama, no head norm). Bad values are refused.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"

#include "common/tmp_dir.h"

namespace oscar {
namespace {

using test::TmpDir;
using test::mkmodel;

namespace fs = std::filesystem;

constexpr int kD = 128, kEmbd = 128, kHeads = 4, kKvHeads = 2, kLayers = 3;
const std::string kShape = " --layers 3 --embd 128 --heads 4 --kv-heads 2 --head-dim 128 --ffn 128 --type f32 ";

// An F32 tensor as rows of row_length values.
std::vector<float> floats(const gguf::GgufFile& g, const std::string& name) {
  const gguf::TensorInfo* t = g.find_tensor(name);
  EXPECT_NE(t, nullptr) << name;
  if (!t) return {};
  EXPECT_EQ(t->type, TensorType::F32) << name;
  const auto bytes = g.tensor_data(*t);
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

std::string blk(int i, const char* what) { return "blk." + std::to_string(i) + "." + what + ".weight"; }

double row_norm(const std::vector<float>& w, int row, int n) {
  double s = 0;
  for (int c = 0; c < n; ++c) s += (double)w[(size_t)row * n + c] * w[(size_t)row * n + c];
  return std::sqrt(s);
}

TEST(MkModelPlanted, Qwen3KeysAndQueriesCarryThePlantedChannels) {
  TmpDir t;
  const std::string f = t.file("p.gguf");
  ASSERT_EQ(mkmodel("--arch qwen3 --k-outliers 4,20" + kShape + "-o " + f), 0);
  auto g = gguf::GgufFile::open(f);
  // The massive residual channel: 8 in every embedding row.
  const std::vector<float> emb = floats(g, "token_embd.weight");
  for (size_t r = 0; r < emb.size() / kEmbd; ++r) ASSERT_EQ(emb[r * kEmbd], 8.0f) << "token " << r;

  const float k_gain = 20 / std::sqrt(10.0f), q_gain = 5 / std::sqrt(10.0f);  // SCALE / sqrt(3^2 + 1), QSCALE = SCALE/4
  const float x0 = 8 / std::sqrt((64.0f + kEmbd - 1) / kEmbd);                  // channel 0 after the RMSNorm
  std::set<std::set<int>> sets;
  for (int i = 0; i < kLayers; ++i) {
    SCOPED_TRACE("layer " + std::to_string(i));
    const std::vector<float> kn = floats(g, blk(i, "attn_k_norm")), qn = floats(g, blk(i, "attn_q_norm"));
    std::set<int> planted;
    for (int c = 0; c < kD; ++c) {
      if (kn[(size_t)c] == k_gain) {
        planted.insert(c);
        EXPECT_EQ(qn[(size_t)c], q_gain) << c;
      } else {
        EXPECT_LT(std::fabs(kn[(size_t)c] - 1), 0.6) << c;  // drawn 1 +- 0.1
        EXPECT_LT(std::fabs(qn[(size_t)c] - 1), 0.6) << c;
      }
    }
    ASSERT_EQ(planted.size(), 4u);
    // Among both members of the 16 lowest-frequency NeoX pairs.
    for (int c : planted) EXPECT_GE(c % (kD / 2), kD / 2 - kD / 8) << c;
    sets.insert(planted);
    // Input channel 0 feeds every planted row with one sign per channel, in
    // every KV head and every query head; unplanted rows only by chance.
    const std::vector<float> wk = floats(g, blk(i, "attn_k")), wq = floats(g, blk(i, "attn_q"));
    for (int c : planted) {
      const float sign = wk[(size_t)c * kEmbd] > 0 ? 1.0f : -1.0f;
      for (int h = 0; h < kKvHeads; ++h)
        EXPECT_NEAR(wk[(size_t)(h * kD + c) * kEmbd], sign * 3 / x0, 0.4) << "K head " << h << " channel " << c;
      for (int h = 0; h < kHeads; ++h)
        EXPECT_NEAR(wq[(size_t)(h * kD + c) * kEmbd], sign * 3 / x0, 0.4) << "Q head " << h << " channel " << c;
    }
    double other = 0;
    int n_other = 0;
    for (int r = 0; r < kKvHeads * kD; ++r)
      if (!planted.count(r % kD)) {
        other += std::fabs(wk[(size_t)r * kEmbd]);
        ++n_other;
      }
    EXPECT_LT(other / n_other, 0.15);  // |N(0, 1/128)| averages 0.07
  }
  EXPECT_GT(sets.size(), 1u) << "the channels are drawn per layer";
}

TEST(MkModelPlanted, LlamaScalesTheKeyProjectionRows) {
  TmpDir t;
  const std::string f = t.file("l.gguf");
  ASSERT_EQ(mkmodel("--arch llama --k-outliers 6,10,10" + kShape + "-o " + f), 0);
  auto g = gguf::GgufFile::open(f);
  EXPECT_EQ(g.find_tensor(blk(0, "attn_k_norm")), nullptr);
  for (int i = 0; i < kLayers; ++i) {
    SCOPED_TRACE("layer " + std::to_string(i));
    const std::vector<float> wk = floats(g, blk(i, "attn_k")), wq = floats(g, blk(i, "attn_q"));
    // Unplanted rows have norm ~1; planted ones 10/sqrt(10) * |(noise, 3/x0)| ~ 3.5.
    std::set<int> planted;
    for (int h = 0; h < kKvHeads; ++h) {
      std::set<int> in_head;
      for (int c = 0; c < kD; ++c) {
        const double n = row_norm(wk, h * kD + c, kEmbd);
        if (n > 2.2) in_head.insert(c);
        else EXPECT_LT(n, 1.5) << c;
      }
      if (h == 0) planted = in_head;
      EXPECT_EQ(in_head, planted) << "head " << h;
    }
    ASSERT_EQ(planted.size(), 6u);
    // Normal RoPE: pairs (2p, 2p+1); the 16 lowest-frequency pairs are channels 96..127.
    for (int c : planted) {
      EXPECT_GE(c, kD - kD / 4) << c;
      for (int h = 0; h < kHeads; ++h) EXPECT_GT(row_norm(wq, h * kD + c, kEmbd), 2.2) << "Q head " << h;
    }
  }
}

TEST(MkModelPlanted, WithoutTheFlagNothingIsPlanted) {
  TmpDir t;
  const std::string f = t.file("n.gguf");
  ASSERT_EQ(mkmodel("--arch qwen3" + kShape + "-o " + f), 0);
  auto g = gguf::GgufFile::open(f);
  const std::vector<float> emb = floats(g, "token_embd.weight");
  int eights = 0;
  for (size_t r = 0; r < emb.size() / kEmbd; ++r) eights += emb[r * kEmbd] == 8.0f;
  EXPECT_EQ(eights, 0);
  const std::vector<float> kn = floats(g, blk(0, "attn_k_norm"));
  for (float x : kn) EXPECT_LT(std::fabs(x - 1), 0.6);
}

TEST(MkModelPlanted, BadValuesAreRefused) {
  TmpDir t;
  const std::string o = " -o " + t.file("x.gguf");
  EXPECT_NE(mkmodel("--arch qwen3 --k-outliers 4,x" + kShape + o), 0);
  EXPECT_NE(mkmodel("--arch qwen3 --k-outliers 4,20,0" + kShape + o), 0);
  EXPECT_NE(mkmodel("--arch qwen3 --k-outliers 4,20,5,1" + kShape + o), 0);
  EXPECT_NE(mkmodel("--arch qwen3 --k-outliers -1" + kShape + o), 0);
  EXPECT_NE(mkmodel("--arch qwen3 --k-outliers 33" + kShape + o), 0);  // at most d/4 = 32
  EXPECT_NE(mkmodel("--arch gemma4 --preset tiny --k-outliers 2" + o), 0);
  EXPECT_FALSE(fs::exists(t.file("x.gguf")));
  // The limit itself is fine.
  EXPECT_EQ(mkmodel("--arch qwen3 --k-outliers 32" + kShape + o), 0);
}

}  // namespace
}  // namespace oscar
