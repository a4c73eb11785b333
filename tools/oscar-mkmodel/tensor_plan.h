// What oscar-mkmodel writes for a spec, before any data: the architecture's
// hyper-parameter keys and the list of tensors (name, shape, storage type,
// how values are drawn), in the names and layout llama.cpp's converter uses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor_type.h"
#include "gguf/gguf_value.h"
#include "model_spec.h"
#include "random_weights.h"

namespace oscar::mkmodel {

struct TensorPlan {
  std::string name;
  std::vector<uint64_t> shape;  // ne0 first
  TensorType type;
  Init init;
  std::vector<float> values;  // fixed contents instead of random ones (rope_freqs)
};

// "<arch>.*" keys (everything but general.* and the vocabulary).
std::vector<gguf::KeyValue> arch_metadata(const ModelSpec& s);

std::vector<TensorPlan> plan_tensors(const ModelSpec& s);

}  // namespace oscar::mkmodel
