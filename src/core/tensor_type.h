// The ggml tensor type ids as stored in GGUF files, with the block geometry of
// each. Every known id is listed (so files with types we cannot compute with
// can still be validated and copied); `computable` marks the ones our kernels
// support.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace oscar {

enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

struct TensorTypeInfo {
  TensorType type;
  const char* name;     // lower-case ggml name, e.g. "q4_K"
  uint32_t block_size;  // elements per block
  uint32_t type_size;   // bytes per block
  bool computable;      // our weight kernels handle it
};

// Geometry of a type id, or nullopt for an id no ggml version defines.
std::optional<TensorTypeInfo> tensor_type_info(uint32_t id);
// Same, for a known enum value (never fails).
const TensorTypeInfo& type_info(TensorType t);
std::string type_name(TensorType t);
// Accepts ggml names case-insensitively ("q4_k", "Q4_K", "bf16").
std::optional<TensorType> parse_tensor_type(std::string_view name);

// Bytes of a row of n elements; nullopt when n is not a multiple of the block
// size or the size overflows.
std::optional<size_t> row_bytes(TensorType t, uint64_t n);

}  // namespace oscar
