#include "kv/cache_type.h"

#include "core/error.h"

namespace oscar::kv {

namespace {
struct Name {
  CacheType t;
  const char* name;
  TensorType tensor;  // the weight format used as codec (unused for q2_0)
};
const Name kNames[] = {{CacheType::F32, "f32", TensorType::F32},   {CacheType::F16, "f16", TensorType::F16},
                       {CacheType::BF16, "bf16", TensorType::BF16}, {CacheType::Q8_0, "q8_0", TensorType::Q8_0},
                       {CacheType::Q4_0, "q4_0", TensorType::Q4_0}, {CacheType::Q2_0, "q2_0", TensorType::F32}};
}  // namespace

CacheType parse_cache_type(const std::string& name) {
  std::string lower;
  for (char c : name) lower += (char)std::tolower((unsigned char)c);
  for (const auto& n : kNames)
    if (lower == n.name) return n.t;
  throw Error("unsupported KV cache type '" + name + "' (supported: f32 f16 bf16 q8_0 q4_0 q2_0)");
}

const char* cache_type_name(CacheType t) {
  for (const auto& n : kNames)
    if (n.t == t) return n.name;
  return "?";
}

RowCodec::RowCodec(CacheType t, int d, const quant::QuantTable& table, const Q2Params& q2)
    : type_(t), d_(d), q2_(q2), q2_encode_(table.cpu()) {
  if (t == CacheType::Q2_0) {
    require(q2_valid(d, q2), "KV cache: q2_0 group size " + std::to_string(q2_group(d, q2)) +
                                 " must be a multiple of 4 that divides the head dim " + std::to_string(d));
    row_bytes_ = q2_row_bytes(d, q2);
    return;
  }
  TensorType tt = TensorType::F16;
  for (const auto& n : kNames)
    if (n.t == t) tt = n.tensor;
  traits_ = &table.get(tt, "KV cache");
  auto rb = oscar::row_bytes(tt, (uint64_t)d);
  require(rb.has_value(), std::string("KV cache: head dim ") + std::to_string(d) +
                              " is not a multiple of the block size of " + cache_type_name(t));
  row_bytes_ = *rb;
}

void RowCodec::encode(const float* x, uint8_t* out) const {
  if (type_ == CacheType::Q2_0) q2_encode_(x, out, d_, q2_);
  else traits_->quantize(x, out, d_);
}

void RowCodec::decode(const uint8_t* in, float* out) const {
  if (type_ == CacheType::Q2_0) q2_decode(in, out, d_, q2_);
  else traits_->dequantize(in, out, d_);
}

}  // namespace oscar::kv
