#include <gtest/gtest.h>

#include "core/tensor_type.h"

namespace oscar {
namespace {

TEST(TensorType, GeometryOfComputableTypes) {
  // Bytes per block from the ggml block structs: d(f16)=2 ...
  EXPECT_EQ(type_info(TensorType::Q4_0).type_size, 2u + 16u);
  EXPECT_EQ(type_info(TensorType::Q4_1).type_size, 2u + 2u + 16u);
  EXPECT_EQ(type_info(TensorType::Q5_0).type_size, 2u + 4u + 16u);
  EXPECT_EQ(type_info(TensorType::Q5_1).type_size, 2u + 2u + 4u + 16u);
  EXPECT_EQ(type_info(TensorType::Q8_0).type_size, 2u + 32u);
  EXPECT_EQ(type_info(TensorType::Q2_K).type_size, 16u + 64u + 2u + 2u);
  EXPECT_EQ(type_info(TensorType::Q3_K).type_size, 32u + 64u + 12u + 2u);
  EXPECT_EQ(type_info(TensorType::Q4_K).type_size, 2u + 2u + 12u + 128u);
  EXPECT_EQ(type_info(TensorType::Q5_K).type_size, 2u + 2u + 12u + 32u + 128u);
  EXPECT_EQ(type_info(TensorType::Q6_K).type_size, 128u + 64u + 16u + 2u);
}

TEST(TensorType, ParseAndUnknownIds) {
  EXPECT_EQ(parse_tensor_type("Q4_K"), TensorType::Q4_K);
  EXPECT_EQ(parse_tensor_type("bf16"), TensorType::BF16);
  EXPECT_FALSE(parse_tensor_type("q4_2").has_value());
  EXPECT_FALSE(tensor_type_info(4).has_value());   // removed Q4_2
  EXPECT_FALSE(tensor_type_info(1000).has_value());
  EXPECT_EQ(row_bytes(TensorType::Q4_K, 512), 288u);
  EXPECT_FALSE(row_bytes(TensorType::Q4_K, 100).has_value());
}

}  // namespace
}  // namespace oscar
