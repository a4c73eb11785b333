// select_top_k against a full sort of every (logit, id) pair, and the
// sampler's top-k path against candidates worked out by hand from the
// documented chain (bias, then penalties, then the k best).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "sampling/sampler.h"
#include "sampling/top_k.h"

namespace oscar::sampling {
namespace {

std::vector<int32_t> sorted_ids(const std::vector<float>& l, int k) {
  std::vector<int32_t> ids(l.size());
  for (size_t i = 0; i < l.size(); ++i) ids[i] = (int32_t)i;
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return l[(size_t)a] > l[(size_t)b] || (l[(size_t)a] == l[(size_t)b] && a < b);
  });
  ids.resize((size_t)std::min<int>(k, (int)l.size()));
  return ids;
}

std::vector<int32_t> ids_of(const std::vector<Candidate>& c) {
  std::vector<int32_t> ids;
  for (const auto& x : c) ids.push_back(x.id);
  return ids;
}

TEST(TopK, EqualsAFullSortWithTiesAndInfinities) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + (int)(rng() % 3000);
    std::vector<float> l((size_t)n);
    // Few distinct values, so ties are everywhere; some -inf (banned tokens).
    for (auto& x : l) {
      const int r = (int)(rng() % 40);
      x = r == 0 ? -INFINITY : (float)(r % 13) * 0.5f - 3.0f;
    }
    for (int k : {1, 2, 40, n - 1, n, n + 5}) {
      if (k <= 0) continue;
      std::vector<Candidate> got;
      select_top_k(l.data(), n, k, got);
      ASSERT_EQ(ids_of(got), sorted_ids(l, k)) << "n " << n << " k " << k;
      for (const auto& c : got) ASSERT_EQ(c.logit, l[(size_t)c.id]);
    }
  }
}

TEST(TopK, NaNIsNeverPreferredToANumber) {
  const std::vector<float> l = {NAN, 1.0f, NAN, -2.0f, 0.5f};
  std::vector<Candidate> got;
  select_top_k(l.data(), 5, 3, got);
  EXPECT_EQ(ids_of(got), (std::vector<int32_t>{1, 4, 3}));
  select_top_k(l.data(), 5, 0, got);
  EXPECT_TRUE(got.empty());
}

TEST(TopK, SamplerKeepsTheKBestAfterBiasAndPenalties) {
  std::mt19937 rng(3);
  std::vector<float> l(5000);
  for (auto& x : l) x = (float)(rng() % 1000) / 100.0f - 5.0f;
  SamplerSettings s;
  s.top_k = 25;
  s.top_p = 1.0f;
  s.min_p = 0.0f;
  s.repeat_penalty = 1.5f;
  s.presence_penalty = 0.25f;
  s.logit_bias = {{10, 30.0f}, {11, -INFINITY}};
  Sampler sampler(s);
  const std::vector<int32_t> history = {7, 7, 42, 99, 4999};
  for (int32_t t : history) sampler.accept(t);
  // The chain by hand: bias, then each seen token once (count 2 for 7).
  std::vector<float> want = l;
  want[10] += 30.0f;
  want[11] = -INFINITY;
  for (int32_t id : {7, 42, 99, 4999}) {
    float& x = want[(size_t)id];
    x = x <= 0 ? x * 1.5f : x / 1.5f;
    x -= 0.25f;
  }
  sampler.sample(l.data(), (int)l.size());
  EXPECT_EQ(ids_of(sampler.last_candidates()), sorted_ids(want, 25));
}

}  // namespace
}  // namespace oscar::sampling
