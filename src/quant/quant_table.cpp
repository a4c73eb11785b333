#include "quant/quant.h"

#include "core/error.h"
#include "quant/kquant_rows16.h"

namespace oscar::quant {

QuantTable::QuantTable(const CpuFeatures& cpu) : cpu_(cpu) {
  register_float_types(traits_, present_, cpu);
  register_legacy_types(traits_, present_, cpu);
  register_kquant_types(traits_, present_, cpu);
  for (uint32_t id = 0; id < 40; ++id) rows16_[id] = rows16_kernels((TensorType)id, cpu);
}

const Rows16Kernels* QuantTable::rows16(TensorType t) const {
  const auto id = (uint32_t)t;
  return id < 40 ? rows16_[id] : nullptr;
}

const QuantTraits* QuantTable::find(TensorType t) const {
  const auto id = (uint32_t)t;
  if (id >= 40 || !present_[id]) return nullptr;
  return &traits_[id];
}

const QuantTraits& QuantTable::get(TensorType t, const char* what) const {
  const QuantTraits* q = find(t);
  if (!q)
    throw Error(std::string(what) + ": tensor type " + type_name(t) +
                " is not supported (supported: f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K)");
  return *q;
}

}  // namespace oscar::quant
