#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "sampling/sampler.h"

namespace oscar::sampling {
namespace {

SamplerSettings greedy() {
  SamplerSettings s;
  s.temperature = 0;
  return s;
}

TEST(Sampler, GreedyPicksArgmaxAndBiasCanBanIt) {
  const std::vector<float> l = {0.1f, 3.0f, 2.9f, -1.0f};
  Sampler a(greedy());
  EXPECT_EQ(a.sample(l.data(), 4), 1);
  SamplerSettings s = greedy();
  s.logit_bias = {{1, -INFINITY}};
  Sampler b(s);
  EXPECT_EQ(b.sample(l.data(), 4), 2);
}

TEST(Sampler, RepeatPenaltyDividesPositiveAndMultipliesNegative) {
  SamplerSettings s = greedy();
  s.repeat_penalty = 2.0f;
  Sampler a(s);
  a.accept(1);
  // 3.0 / 2 = 1.5 < 2.9: token 2 wins.
  const std::vector<float> l = {0.1f, 3.0f, 2.9f, -1.0f};
  EXPECT_EQ(a.sample(l.data(), 4), 2);
  // Frequency penalty scales with the count; presence is flat.
  SamplerSettings f = greedy();
  f.frequency_penalty = 0.06f;
  Sampler b(f);
  b.accept(1);
  b.accept(1);  // 3.0 - 0.12 = 2.88 < 2.9
  EXPECT_EQ(b.sample(l.data(), 4), 2);
  SamplerSettings w = greedy();
  w.frequency_penalty = 0.06f;
  w.penalty_last_n = 1;  // only the last token counts: 3.0 - 0.06 > 2.9
  Sampler c(w);
  c.accept(1);
  c.accept(1);
  EXPECT_EQ(c.sample(l.data(), 4), 1);
}

TEST(Sampler, SameSeedSameTokensAndDistributionFollowsSoftmax) {
  SamplerSettings s;
  s.temperature = 1.0f;
  s.top_k = 0;
  s.top_p = 1.0f;
  s.min_p = 0.0f;
  s.seed = 123;
  const std::vector<float> l = {0.0f, std::log(2.0f), std::log(3.0f), std::log(4.0f)};
  Sampler a(s), b(s);
  std::map<int, int> counts;
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    const int x = a.sample(l.data(), 4);
    ASSERT_EQ(x, b.sample(l.data(), 4));
    counts[x]++;
  }
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(counts[i] / (double)n, (i + 1) / 10.0, 0.01) << i;
}

TEST(Sampler, TopKTopPMinPTruncate) {
  const std::vector<float> l = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  auto support = [&](SamplerSettings s) {
    s.temperature = 1.0f;
    s.seed = 9;
    Sampler a(s);
    std::map<int, int> seen;
    for (int i = 0; i < 3000; ++i) seen[a.sample(l.data(), 4)]++;
    return seen.size();
  };
  SamplerSettings k;
  k.top_k = 2;
  k.top_p = 1.0f;
  k.min_p = 0;
  EXPECT_EQ(support(k), 2u);
  SamplerSettings p;
  p.top_k = 0;
  p.top_p = 0.75f;  // 0.5 + 0.3 passes 0.75
  p.min_p = 0;
  EXPECT_EQ(support(p), 2u);
  SamplerSettings m;
  m.top_k = 0;
  m.top_p = 1.0f;
  m.min_p = 0.25f;  // keeps p >= 0.125
  EXPECT_EQ(support(m), 3u);
}

}  // namespace
}  // namespace oscar::sampling
