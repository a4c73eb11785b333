// Pooling, normalisation and base64 of embeddings, against values worked out
// by hand (base64 strings from Python's struct + base64 modules).
#include <gtest/gtest.h>

#include <cmath>

#include "server/embeddings_pooling.h"

using namespace oscar::server;

TEST(EmbeddingsPooling, PoolsRows) {
  const float rows[] = {1, 2, 3, 4, 5, 9};  // 3 tokens x 2
  EXPECT_EQ(pool_rows(rows, 3, 2, Pooling::Cls), (std::vector<float>{1, 2}));
  EXPECT_EQ(pool_rows(rows, 3, 2, Pooling::Last), (std::vector<float>{5, 9}));
  EXPECT_EQ(pool_rows(rows, 3, 2, Pooling::Mean), (std::vector<float>{3, 5}));
  EXPECT_THROW(pool_rows(rows, 3, 2, Pooling::None), std::invalid_argument);
  EXPECT_THROW(pool_rows(rows, 0, 2, Pooling::Mean), std::invalid_argument);
}

TEST(EmbeddingsPooling, Normalisations) {
  std::vector<float> v = {3, 4};
  normalize_embedding(v, 2);
  EXPECT_FLOAT_EQ(v[0], 0.6f);
  EXPECT_FLOAT_EQ(v[1], 0.8f);
  v = {3, -1};
  normalize_embedding(v, 1);
  EXPECT_FLOAT_EQ(v[0], 0.75f);
  EXPECT_FLOAT_EQ(v[1], -0.25f);
  v = {1, -2};
  normalize_embedding(v, 0);
  EXPECT_FLOAT_EQ(v[0], 16380.0f);
  EXPECT_FLOAT_EQ(v[1], -32760.0f);
  v = {1, 1};
  normalize_embedding(v, 3);
  EXPECT_NEAR(v[0], 1.0 / std::cbrt(2.0), 1e-6);
  v = {3, 4};
  normalize_embedding(v, -1);
  EXPECT_EQ(v, (std::vector<float>{3, 4}));
  v = {0, 0};
  normalize_embedding(v, 2);
  EXPECT_EQ(v, (std::vector<float>{0, 0}));
}

TEST(EmbeddingsPooling, Base64OfLittleEndianFloat32) {
  EXPECT_EQ(embedding_base64({1.0f, -2.0f}), "AACAPwAAAMA=");
  EXPECT_EQ(embedding_base64({0.5f, 0.25f, -1.5f}), "AAAAPwAAgD4AAMC/");
  EXPECT_EQ(embedding_base64({}), "");
}

TEST(EmbeddingsPooling, Names) {
  for (const char* n : {"none", "mean", "cls", "last", "rank"}) EXPECT_STREQ(pooling_name(*pooling_from_name(n)), n);
  EXPECT_FALSE(pooling_from_name("max").has_value());
  EXPECT_EQ((int)*pooling_from_name("last"), 3);  // llama.cpp's value, as GGUFs store it
}
