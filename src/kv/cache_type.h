// KV cache element types and the row codec of each. Plain types reuse the
// weight formats' reference codecs; q2_0 is the OSCAR codec (q2_codec.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/tensor_type.h"
#include "kv/q2_codec.h"
#include "quant/quant.h"

namespace oscar::kv {

enum class CacheType { F32, F16, BF16, Q8_0, Q4_0, Q2_0 };

// Parses a --cache-type value; throws Error listing the supported ones.
CacheType parse_cache_type(const std::string& name);
const char* cache_type_name(CacheType t);
// Quantized types get the f16 sink/recent tiers; float types need none.
inline bool is_quantized(CacheType t) {
  return t == CacheType::Q8_0 || t == CacheType::Q4_0 || t == CacheType::Q2_0;
}

// Encodes/decodes rows of d values of one cache type.
class RowCodec {
 public:
  RowCodec() = default;
  RowCodec(CacheType t, int d, const quant::QuantTable& table, const Q2Params& q2);

  CacheType type() const { return type_; }
  size_t row_bytes() const { return row_bytes_; }
  int dim() const { return d_; }
  int q2_group_size() const { return q2_group(d_, q2_); }
  void encode(const float* x, uint8_t* out) const;
  void decode(const uint8_t* in, float* out) const;

 private:
  CacheType type_ = CacheType::F16;
  int d_ = 0;
  size_t row_bytes_ = 0;
  const quant::QuantTraits* traits_ = nullptr;  // plain types
  Q2Params q2_;
  Q2Encoder q2_encode_;  // for the table's CPU
};

}  // namespace oscar::kv
