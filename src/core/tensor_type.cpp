#include "core/tensor_type.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>

namespace oscar {

namespace {
using T = TensorType;
// Block sizes and byte sizes from the ggml block definitions.
constexpr std::array<TensorTypeInfo, 32> kTypes = {{
    {T::F32, "f32", 1, 4, true},
    {T::F16, "f16", 1, 2, true},
    {T::Q4_0, "q4_0", 32, 18, true},
    {T::Q4_1, "q4_1", 32, 20, true},
    {T::Q5_0, "q5_0", 32, 22, true},
    {T::Q5_1, "q5_1", 32, 24, true},
    {T::Q8_0, "q8_0", 32, 34, true},
    {T::Q8_1, "q8_1", 32, 36, false},
    {T::Q2_K, "q2_K", 256, 84, true},
    {T::Q3_K, "q3_K", 256, 110, true},
    {T::Q4_K, "q4_K", 256, 144, true},
    {T::Q5_K, "q5_K", 256, 176, true},
    {T::Q6_K, "q6_K", 256, 210, true},
    {T::Q8_K, "q8_K", 256, 292, false},
    {T::IQ2_XXS, "iq2_xxs", 256, 66, false},
    {T::IQ2_XS, "iq2_xs", 256, 74, false},
    {T::IQ3_XXS, "iq3_xxs", 256, 98, false},
    {T::IQ1_S, "iq1_s", 256, 50, false},
    {T::IQ4_NL, "iq4_nl", 32, 18, false},
    {T::IQ3_S, "iq3_s", 256, 110, false},
    {T::IQ2_S, "iq2_s", 256, 82, false},
    {T::IQ4_XS, "iq4_xs", 256, 136, false},
    {T::I8, "i8", 1, 1, false},
    {T::I16, "i16", 1, 2, false},
    {T::I32, "i32", 1, 4, false},
    {T::I64, "i64", 1, 8, false},
    {T::F64, "f64", 1, 8, false},
    {T::IQ1_M, "iq1_m", 256, 56, false},
    {T::BF16, "bf16", 1, 2, true},
    {T::TQ1_0, "tq1_0", 256, 54, false},
    {T::TQ2_0, "tq2_0", 256, 66, false},
    {T::MXFP4, "mxfp4", 32, 17, false},
}};

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower((unsigned char)a[i]) != std::tolower((unsigned char)b[i])) return false;
  return true;
}
}  // namespace

std::optional<TensorTypeInfo> tensor_type_info(uint32_t id) {
  for (const auto& t : kTypes)
    if ((uint32_t)t.type == id) return t;
  return std::nullopt;
}

const TensorTypeInfo& type_info(TensorType t) {
  for (const auto& info : kTypes)
    if (info.type == t) return info;
  return kTypes[0];  // unreachable for valid enum values
}

std::string type_name(TensorType t) { return type_info(t).name; }

std::optional<TensorType> parse_tensor_type(std::string_view name) {
  for (const auto& t : kTypes)
    if (iequal(t.name, name)) return t.type;
  return std::nullopt;
}

std::optional<size_t> row_bytes(TensorType t, uint64_t n) {
  const auto& info = type_info(t);
  if (n % info.block_size != 0) return std::nullopt;
  const uint64_t blocks = n / info.block_size;
  if (blocks > std::numeric_limits<size_t>::max() / info.type_size) return std::nullopt;
  return (size_t)(blocks * info.type_size);
}

}  // namespace oscar
